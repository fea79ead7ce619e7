/*
 * holder.c - who we are, to the servers and to the command: the holder
 * metadata recorded beside a lock, the tokens inherited from enclosing
 * redlocks (REDLOCK_HELD, for re-entrance), and the command's
 * environment.
 */
#include "holder.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "proto.h"

extern char **environ;

/*
 * The name that the local password file gives uid, into buf.  Returns
 * 0, or -1 when it gives none.  Read here rather than through
 * getpwuid(): its NSS machinery costs a plain run a tenth of its time
 * and memory, and a holder's user is for people to read.  A line longer
 * than the buffer is skipped whole.
 */
static int
passwd_name(uid_t uid, char *buf, size_t len)
{
	FILE *f = fopen("/etc/passwd", "re");
	char line[1024];
	int whole = 1, found = -1;

	if (f == NULL)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
		int start = whole;
		char *pw, *id, *end;
		unsigned long u;
		size_t n;

		whole = strchr(line, '\n') != NULL;
		if (!start || (pw = strchr(line, ':')) == NULL ||
		    (id = strchr(pw + 1, ':')) == NULL)
			continue;
		/* The uid field by hand, not strtoul(), for the plain run's
		 * pages (Makefile). */
		for (u = 0, end = id + 1; *end >= '0' && *end <= '9'; end++)
			u = u * 10 + (unsigned long)(*end - '0');
		if (end == id + 1 || *end != ':' || u != (unsigned long)uid)
			continue;
		n = (size_t)(pw - line) < len ? (size_t)(pw - line) : len - 1;
		memcpy(buf, line, n);
		buf[n] = '\0';
		found = 0;
	}
	fclose(f);
	return found;
}

/*
 * Who we run as, for the metadata (for people, not for security):
 * $USER or $LOGNAME (as login and cron set them), which cost nothing,
 * else /etc/passwd's name for the uid, else the uid.
 */
static void
holder_user(char *buf, size_t len)
{
	const char *user = getenv("USER");

	if (user == NULL || user[0] == '\0')
		user = getenv("LOGNAME");
	if (user != NULL && user[0] != '\0')
		fmt_cat(buf, len, user, (char *)NULL);
	else if (passwd_name(geteuid(), buf, len) != 0) {
		char uid[FMT_LL_SIZE];

		fmt_ll(uid, (long long)geteuid());
		fmt_cat(buf, len, uid, (char *)NULL);
	}
}

/* Each of the fields, preceded by a NUL, at p; returns the end. */
static char *
put_fields(char *p, const char *const *field, int n)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(field[i]);

		*p++ = '\0';
		memcpy(p, field[i], len);
		p += len;
	}
	return p;
}

/* Build the exclusive holder's record tail for grant g in rec
 * (HOLDER_RECORD_MAX bytes):
 * "\0token\0ttl\0host\0pid\0user\0cmd\0start\0delay", then the
 * three fields of a --replace claim, empty, and the record's format
 * version (PROTO_RECORD_VERSION; the delay is empty without
 * --lock-delay): see src/lua/lib/holder_record.lua.
 * Returns its length. */
size_t
holder_record(const struct lock *l, const struct grant *g, char *rec)
{
	const struct lock_meta *m = &l->meta;
	char ttl[FMT_LL_SIZE], pid[FMT_LL_SIZE], start[FMT_LL_SIZE];
	char delay[FMT_LL_SIZE], version[FMT_LL_SIZE];
	const char *field[] = { g->token, ttl, m->host, pid, m->user, m->cmd,
	    start, delay, "", "", "", version };

	fmt_ll(ttl, (long long)l->ttl);
	fmt_ll(pid, m->pid);
	fmt_ll(start, (long long)g->start_ms);
	delay[0] = '\0';
	if (l->policy.delay > 0)
		fmt_ll(delay, (long long)l->policy.delay);
	fmt_ll(version, PROTO_RECORD_VERSION);
	return (size_t)(put_fields(rec, field,
	    (int)(sizeof(field) / sizeof(field[0]))) - rec);
}

/* Fill the holder metadata: host, pid and user; no command (the verbs
 * record none) and no start (a run's start is its wait's: struct
 * lock_waiter). */
void
holder_meta(struct lock_meta *m, long pid)
{
	memset(m, 0, sizeof(*m));
	if (gethostname(m->host, sizeof(m->host) - 1) != 0)
		fmt_cat(m->host, sizeof(m->host), "unknown", (char *)NULL);
	m->pid = pid;
	holder_user(m->user, sizeof(m->user));
}

/*
 * What the record shows of the command ("What a holder leaves in Redis" in redlock-protocol(7)): anyone who
 * can read the lock's keys reads it, and arguments carry secrets
 * (mysqldump -pSECRET), so by default only the command's name: COMMAND
 * as given, or "sh" for -c STRING.  The label instead when there is
 * one; every word (or -c's STRING) only with args set (--store-args).
 */
void
holder_command(struct lock_meta *m, const char *label, const char *shell,
    char *const *cmd, int args)
{
	size_t n = 0;

	if (label != NULL || (shell != NULL && !args)) {
		fmt_cat(m->cmd, sizeof(m->cmd), label ? label : "sh",
		    (char *)NULL);
		return;
	}
	if (shell != NULL)
		fmt_cat(m->cmd, sizeof(m->cmd), shell, (char *)NULL);
	for (char *const *a = cmd; a != NULL && *a != NULL; a++) {
		size_t w = fmt_cat(m->cmd + n, sizeof(m->cmd) - n,
		    n ? " " : "", *a, (char *)NULL);
		if (w >= sizeof(m->cmd) - n || !args)
			break;
		n += w;
	}
}

/*
 * The next blank-separated word of *p (REDLOCK_HELD's tokens) with its
 * length in *len, advancing *p; NULL at the end or when *p is NULL.
 */
const char *
holder_next_token(const char **p, size_t *len)
{
	const char *s;

	if (*p == NULL)
		return NULL;
	/* Loops rather than strspn() and strcspn(), which a plain run
	 * would call only here (see the Makefile on pages). */
	for (s = *p; *s == ' '; s++)
		;
	if (*s == '\0')
		return NULL;
	*len = (size_t)(strchrnul(s, ' ') - s);
	*p = s + *len;
	return s;
}

/* Is token one of the tokens in held (inherited from REDLOCK_HELD)? */
int
holder_inherited(const char *held, const char *token)
{
	size_t n = strlen(token), w;

	for (const char *p = held, *t; (t = holder_next_token(&p, &w));)
		if (w == n && memcmp(t, token, n) == 0)
			return 1;
	return 0;
}

/* Variables the command must not inherit: secrets, and what describes
 * our own lock (set anew below). */
static int
env_skip(const char *e)
{
	static const char *const drop[] = {
		"REDLOCK_PASSWORD=", "REDISCLI_AUTH=",
		"REDLOCK_SENTINEL_PASSWORD=", "REDLOCK_NAME=", "REDLOCK_KEY=",
		"REDLOCK_TOKEN=", "REDLOCK_FENCE=", "REDLOCK_HELD="
	};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strncmp(e, drop[i], strlen(drop[i])) == 0)
			return 1;
	return 0;
}

/* Is the variable e one that the vector pass (or NULL) sets? */
static int
env_passed(const char *e, char *const *pass)
{
	size_t len = strcspn(e, "=");

	for (; pass != NULL && *pass != NULL; pass++)
		if (strncmp(*pass, e, len + 1) == 0)
			return 1;
	return 0;
}

/*
 * The command's environment: ours without the passwords, plus what
 * describes the lock and our grant g.  REDLOCK_HELD lists every token
 * held by redlock ancestors, for re-entrance.  pass, when not NULL, is
 * config's pass_env: the variables that take the place of ours, so
 * that a nested redlock reaches the servers we use as we do (it takes
 * the passwords from its own options or $REDLOCK_PASSWORD_FILE).
 * Returns a malloc'd vector (one block), or NULL when out of memory.
 */
char **
holder_env(const struct lock *l, const struct grant *g, char *const *pass)
{
	const char *held = l->policy.held != NULL ? l->policy.held : "";
	size_t n = 0, size;
	char **env, *p, fence[FMT_LL_SIZE];

	for (char **e = environ; *e != NULL; e++)
		n++;
	for (char *const *e = pass; e != NULL && *e != NULL; e++)
		n++;
	size = (n + 7) * sizeof(char *) + l->namelen + l->k.keylen +
	    strlen(held) + 2 * (size_t)LOCK_TOKEN_LEN + 160;
	if ((env = malloc(size)) == NULL)
		return NULL;
	p = (char *)(env + n + 7);
	n = 0;
	for (char *const *e = pass; e != NULL && *e != NULL; e++)
		env[n++] = *e;
	for (char **e = environ; *e != NULL; e++)
		if (!env_skip(*e) && !env_passed(*e, pass))
			env[n++] = *e;
	fmt_ll(fence, g->fence);
	env[n++] = p;
	p += fmt_cat(p, SIZE_MAX, "REDLOCK_NAME=", l->name, (char *)NULL) + 1;
	env[n++] = p;
	p += fmt_cat(p, SIZE_MAX, "REDLOCK_KEY=", l->k.key, (char *)NULL) + 1;
	env[n++] = p;
	p += fmt_cat(p, SIZE_MAX, "REDLOCK_TOKEN=", g->token, (char *)NULL) + 1;
	env[n++] = p;
	p += fmt_cat(p, SIZE_MAX, "REDLOCK_FENCE=", fence, (char *)NULL) + 1;
	env[n++] = p;
	if (holder_inherited(held, g->token))
		fmt_cat(p, SIZE_MAX, "REDLOCK_HELD=", held, (char *)NULL);
	else
		fmt_cat(p, SIZE_MAX, "REDLOCK_HELD=", held, *held ? " " : "",
		    g->token, (char *)NULL);
	env[n] = NULL;
	return env;
}
