/*
 * verbs.c - taking, inspecting and clearing locks by hand (SPEC section
 * 6).  stdout carries the answer (a token, assignments, status lines,
 * JSON); diagnostics go to stderr through log.c.
 */
#include "verbs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "log.h"

/* Print s as a single-quoted shell word. */
static void
put_shell(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned int c = s[0];

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Print n bytes of s as a JSON string; bytes that are not UTF-8 become
 * U+FFFD. */
static void
put_json(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (size_t i = 0; i < n; i++) {
		size_t u;

		if (p[i] == '"' || p[i] == '\\')
			printf("\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", stdout);
		else if (p[i] == '\r')
			fputs("\\r", stdout);
		else if (p[i] == '\t')
			fputs("\\t", stdout);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			printf("\\u%04x", p[i]);
		else if (p[i] < 0x80)
			putchar(p[i]);
		else if ((u = utf8_len(p + i, n - i)) > 0) {
			fwrite(p + i, 1, u, stdout);
			i += u - 1;
		} else
			fputs("\\ufffd", stdout);
	}
	putchar('"');
}

/* How many columns put_text() takes for s. */
static size_t
text_width(const char *s, size_t n)
{
	size_t w = n;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			w += 3;
	}
	return w;
}

/* Print s for a terminal: control bytes as \xNN. */
static void
put_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
}

static void
iso_time(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "unknown");
	else
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
verb_acquire(const struct config *c, struct lock *l)
{
	enum lock_result res;

	/* The holder is the shell (or script) that ran us. */
	meta_fill(&l->meta, c, (long)getppid());
	snprintf(l->meta.cmd, sizeof(l->meta.cmd), "(acquire)");
	res = lock_acquire(l, c->wait, child_signal_fd());
	if (res != LOCK_HELD && res != LOCK_REENTRANT)
		return main_not_acquired(c, l, res);
	if (!c->env) {
		printf("%s\n", l->token);
		return 0;
	}
	fputs("REDLOCK_NAME=", stdout);
	put_shell(l->name);
	fputs("\nREDLOCK_KEY=", stdout);
	put_shell(l->key);
	printf("\nREDLOCK_TOKEN=%s\nREDLOCK_FENCE=%lld\n", l->token, l->fence);
	puts("export REDLOCK_NAME REDLOCK_KEY REDLOCK_TOKEN REDLOCK_FENCE");
	return 0;
}

/* Say who holds the lock now, after release or extend was refused. */
static void
say_holder(const struct config *c, struct lock *l, const char *verb)
{
	struct lock_view v[l->n];
	int held = 0;

	lock_inspect(l, v, 0);
	for (int i = 0; i < l->n; i++) {
		if (!v[i].held)
			continue;
		held = 1;
		if (v[i].has_meta) {
			log_error("cannot %s lock '%s': it is held by %s@%s pid %ld "
			    "(fence %lld), not by this token", verb, c->name,
			    v[i].meta.user, v[i].meta.host, v[i].meta.pid,
			    v[i].fence);
			return;
		}
	}
	log_error("cannot %s lock '%s': %s", verb, c->name, held ?
	    "it is held by another token" : "it is not held");
}

/* release and extend: act only if TOKEN holds the lock. */
static int
verb_token(const struct config *c, struct lock *l, int extend)
{
	int others, ok;

	/* A token inherited from an enclosing redlock (re-entrance) is that
	 * redlock's to release, when its command is done. */
	if (!extend && lock_held_by_parent(l, c->token)) {
		log_info("lock '%s' is held by an enclosing redlock, which will "
		    "release it", c->name);
		return 0;
	}
	ok = extend ? lock_extend(l, c->token, &others) :
	    lock_release(l, c->token, 0, &others);
	if (ok >= l->quorum)
		return 0;
	if (l->err[0] != '\0' && others + ok < l->quorum) {
		log_error("%s", l->err);
		return EXIT_UNAVAILABLE;
	}
	say_holder(c, l, extend ? "extend" : "release");
	return c->conflict_exit;
}

static void
status_json(const struct lock *l, const struct lock_view *v, int held)
{
	char start[32];

	fputs("{\"name\":", stdout);
	put_json(l->name, l->namelen);
	fputs(",\"key\":", stdout);
	put_json(l->key, l->keylen);
	printf(",\"held\":%s", held ? "true" : "false");
	if (v != NULL) {
		iso_time(v->meta.start_ms, start, sizeof(start));
		printf(",\"ttl_ms\":%lld,\"fence\":%lld,\"foreign\":%s",
		    v->pttl, v->fence, v->has_meta ? "false" : "true");
		if (v->has_meta) {
			fputs(",\"host\":", stdout);
			put_json(v->meta.host, strlen(v->meta.host));
			printf(",\"pid\":%ld,\"user\":", v->meta.pid);
			put_json(v->meta.user, strlen(v->meta.user));
			fputs(",\"cmd\":", stdout);
			put_json(v->meta.cmd, strlen(v->meta.cmd));
			printf(",\"start\":\"%s\",\"start_ms\":%lld", start,
			    (long long)v->meta.start_ms);
		}
	}
}

/*
 * The view that a quorum of servers agrees on, or NULL.  Among the
 * servers holding that token, the fence most of them record is the
 * grant's: a majority carries it (see fence_bump() in lock.c), while a
 * server whose reply came too late to count may record its own.
 */
static const struct lock_view *
agreed(const struct lock *l, const struct lock_view *v)
{
	const struct lock_view *best = NULL;
	int best_votes = 0;

	for (int i = 0; i < l->n; i++) {
		int same = 0, votes = 0;
		if (!v[i].held)
			continue;
		for (int j = 0; j < l->n; j++) {
			if (!v[j].held || strcmp(v[j].token, v[i].token) != 0)
				continue;
			same++;
			votes += v[j].fence == v[i].fence;
		}
		if (same >= l->quorum && votes > best_votes) {
			best = &v[i];
			best_votes = votes;
		}
	}
	return best;
}

static void
status_text(const struct lock *l, const struct lock_view *h)
{
	char ttl[32], start[32], ago[32];

	fputs("lock:    ", stdout);
	put_text(l->name, l->namelen);
	if (h == NULL) {
		fputs("\nstate:   free\n", stdout);
		return;
	}
	fputs("\nstate:   held\n", stdout);
	duration_format(h->pttl, ttl, sizeof(ttl));
	if (h->has_meta) {
		iso_time(h->meta.start_ms, start, sizeof(start));
		duration_format(clock_wall_ms() - h->meta.start_ms, ago,
		    sizeof(ago));
		printf("holder:  %s@%s pid %ld\ncommand: ", h->meta.user,
		    h->meta.host, h->meta.pid);
		put_text(h->meta.cmd, strlen(h->meta.cmd));
		printf("\nsince:   %s (%s ago)\n", start, ago);
	} else
		fputs("holder:  unknown (taken by another client)\n", stdout);
	printf("ttl:     %s\n", h->pttl < 0 ? "none" : ttl);
	if (h->has_meta)
		printf("fence:   %lld\n", h->fence);
}

static int
verb_status(const struct config *c, struct lock *l)
{
	struct lock_view v[l->n];
	const struct lock_view *h;
	int answered = lock_inspect(l, v, 0);

	if (answered < l->quorum) {
		log_error("%s", l->err);
		return EXIT_UNAVAILABLE;
	}
	h = agreed(l, v);
	if (c->json) {
		status_json(l, h, h != NULL);
		if (l->n > 1) {
			fputs(",\"servers\":[", stdout);
			for (int i = 0; i < l->n; i++) {
				printf("%s{\"server\":", i ? "," : "");
				put_json(l->conns[i].name, strlen(l->conns[i].name));
				printf(",\"answered\":%s,\"held\":%s,\"ttl_ms\":%lld}",
				    v[i].answered ? "true" : "false",
				    v[i].held ? "true" : "false", v[i].pttl);
			}
			putchar(']');
		}
		fputs("}\n", stdout);
	} else {
		status_text(l, h);
		for (int i = 0; l->n > 1 && i < l->n; i++) {
			char ttl[32];
			duration_format(v[i].pttl, ttl, sizeof(ttl));
			printf("server:  %s %s\n", l->conns[i].name,
			    !v[i].answered ? "no answer" : !v[i].held ? "free" :
			    h != NULL && strcmp(v[i].token, h->token) == 0 ?
			    ttl : "held by another token");
		}
	}
	return h != NULL ? 0 : 1;
}

static int
verb_break(const struct config *c, struct lock *l)
{
	struct lock_view v[l->n];
	const struct lock_view *h = NULL;
	int answered = lock_inspect(l, v, 1), forgot = 0;

	for (int i = 0; i < l->n; i++)
		if (v[i].held && (h == NULL || (!h->has_meta && v[i].has_meta)))
			h = &v[i];
	if (h == NULL && answered < l->quorum) {
		log_error("%s", l->err);
		return EXIT_UNAVAILABLE;
	}
	if (c->fence) {
		if ((forgot = lock_forget_fence(l)) < 0) {
			log_error("%s", l->err);
			return EXIT_UNAVAILABLE;
		}
		if (forgot > 0)
			log_error("removed the fencing counter of lock '%s'",
			    c->name);
	}
	if (h == NULL) {
		log_error("lock '%s' was not held", c->name);
		return forgot > 0 ? 0 : 1;
	}
	if (h->has_meta)
		log_error("removed lock '%s' held by %s@%s pid %ld (fence %lld)",
		    c->name, h->meta.user, h->meta.host, h->meta.pid, h->fence);
	else
		log_error("removed lock '%s' held by another client", c->name);
	return 0;
}

/* A key found by SCAN. */
struct found {
	char *key;
	size_t len;
};

static int
found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->key, y->key, n);

	return d != 0 ? d : (x->len > y->len) - (x->len < y->len);
}

/* SCAN MATCH pattern: the prefix with its glob characters escaped. */
static char *
scan_match(const char *prefix, const char *pattern)
{
	size_t pl = strlen(prefix), ql = pattern ? strlen(pattern) : 1;
	char *m = malloc(2 * pl + ql + 1), *o = m;

	if (m == NULL)
		return NULL;
	for (const char *p = prefix; *p; p++) {
		if (strchr("*?[]\\", *p) != NULL)
			*o++ = '\\';
		*o++ = *p;
	}
	memcpy(o, pattern ? pattern : "*", ql + 1);
	return m;
}

/*
 * Collect the keys matching m on every server into *out (skipping the
 * auxiliary keys, which hold a NUL byte).  Returns how many servers
 * answered every page.
 */
static int
scan_all(struct lock *l, const char *m, struct found **out, size_t *nout)
{
	size_t cap = 0;
	int answered = 0;

	for (int i = 0; i < l->n; i++) {
		char cursor[32] = "0";
		int pages = 0, ok = 1;

		do {
			const char *av[6] = { "SCAN", cursor, "MATCH", m, "COUNT",
			    "1000" };
			struct conn_req r = { .argc = 6, .argv = av };
			const redisReply *p, *keys;

			conn_exec(&l->conns[i], &r, 1, clock_ms() + 2000, -1);
			p = r.reply;
			if (p == NULL || p->type != REDIS_REPLY_ARRAY ||
			    p->elements != 2 || p->element[1]->type != REDIS_REPLY_ARRAY) {
				if (l->err[0] == '\0' && p && p->type == REDIS_REPLY_ERROR)
					snprintf(l->err, sizeof(l->err), "%s: %s",
					    l->conns[i].name, p->str);
				else if (l->err[0] == '\0')
					snprintf(l->err, sizeof(l->err), "%s", r.err);
				conn_req_clear(&r, 1);
				ok = 0;
				break;
			}
			snprintf(cursor, sizeof(cursor), "%s", p->element[0]->str);
			keys = p->element[1];
			for (size_t k = 0; k < keys->elements; k++) {
				const redisReply *e = keys->element[k];
				if (e->type != REDIS_REPLY_STRING ||
				    memchr(e->str, '\0', e->len) != NULL)
					continue;
				if (*nout == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct found *f = realloc(*out, ncap * sizeof(*f));
					if (f == NULL)
						break;
					*out = f;
					cap = ncap;
				}
				(*out)[*nout].key = malloc(e->len + 1);
				if ((*out)[*nout].key == NULL)
					break;
				memcpy((*out)[*nout].key, e->str, e->len + 1);
				(*out)[(*nout)++].len = e->len;
			}
			conn_req_clear(&r, 1);
		} while (strcmp(cursor, "0") != 0 && ++pages < 1000000);
		answered += ok;
	}
	return answered;
}

struct row {
	const char *name;
	size_t namelen;
	struct lock_view v;
};

static void
list_text(struct row *rows, size_t n)
{
	size_t w = 4;

	for (size_t i = 0; i < n; i++) {
		size_t tw = text_width(rows[i].name, rows[i].namelen);
		if (tw > w)
			w = tw > 60 ? 60 : tw;
	}
	for (size_t i = 0; i < n; i++) {
		const struct lock_view *v = &rows[i].v;
		size_t tw = text_width(rows[i].name, rows[i].namelen);
		char ttl[32];

		duration_format(v->pttl, ttl, sizeof(ttl));
		put_text(rows[i].name, rows[i].namelen);
		printf("%*s  %9s  ", (int)(w > tw ? w - tw : 0), "",
		    v->pttl < 0 ? "none" : ttl);
		if (v->has_meta) {
			printf("%s@%s pid %ld  ", v->meta.user, v->meta.host,
			    v->meta.pid);
			put_text(v->meta.cmd, strlen(v->meta.cmd));
		} else
			fputs("(foreign: no holder metadata)", stdout);
		putchar('\n');
	}
}

static int
verbs_list(const struct config *c, struct lock *l)
{
	struct found *keys = NULL;
	struct row *rows = NULL;
	size_t nkeys = 0, nrows = 0, pl = strlen(c->prefix);
	char *m = scan_match(c->prefix, c->pattern);
	int answered, code = 0;

	if (m == NULL)
		return EXIT_INTERNAL;
	l->err[0] = '\0';
	answered = scan_all(l, m, &keys, &nkeys);
	free(m);
	if (answered < l->quorum) {
		log_error("%s", l->err);
		code = EXIT_UNAVAILABLE;
		goto out;
	}
	if (nkeys > 1)
		qsort(keys, nkeys, sizeof(*keys), found_cmp);
	rows = calloc(nkeys ? nkeys : 1, sizeof(*rows));
	for (size_t i = 0; rows != NULL && i < nkeys; i++) {
		struct lock k;
		struct lock_view v[l->n];
		const struct lock_view *h;

		if ((i > 0 && found_cmp(&keys[i], &keys[i - 1]) == 0) ||
		    keys[i].len < pl)
			continue;
		if (lock_init(&k, l->conns, l->n, c->prefix, keys[i].key + pl,
		    l->ttl) == 0 && lock_inspect(&k, v, 0) >= l->quorum &&
		    (h = agreed(&k, v)) != NULL) {
			rows[nrows].name = keys[i].key + pl;
			rows[nrows].namelen = keys[i].len - pl;
			rows[nrows++].v = *h;
		}
		lock_free(&k);
	}
	if (c->json) {
		for (size_t i = 0; i < nrows; i++) {
			struct lock t = { .name = rows[i].name,
			    .namelen = rows[i].namelen,
			    .key = (char *)rows[i].name - pl, .keylen = rows[i].namelen + pl };
			status_json(&t, &rows[i].v, 1);
			fputs("}\n", stdout);
		}
	} else
		list_text(rows, nrows);
out:
	for (size_t i = 0; i < nkeys; i++)
		free(keys[i].key);
	free(keys);
	free(rows);
	return code;
}

/* Run the verb c->verb; returns the exit status. */
int
verbs_run(const struct config *c, struct lock *l)
{
	switch (c->verb) {
	case VERB_ACQUIRE:
		return verb_acquire(c, l);
	case VERB_RELEASE:
		return verb_token(c, l, 0);
	case VERB_EXTEND:
		return verb_token(c, l, 1);
	case VERB_STATUS:
		return verb_status(c, l);
	case VERB_BREAK:
		return verb_break(c, l);
	case VERB_LIST:
		return verbs_list(c, l);
	default:
		return EXIT_INTERNAL;
	}
}
