/*
 * sentinel.c - find the master of a redis+sentinel:// URL (SPEC section
 * 9).
 *
 * Whenever conn.c opens a connection for a Sentinel URL (the first
 * command, a renewal's reconnect, the release), the sentinels are asked
 * in turn, in the URL's order, where the master of SERVICE is (SENTINEL
 * get-master-addr-by-name), and the first address whose server says it
 * is a master (ROLE) is used.  A sentinel's answer can be stale during
 * a failover, hence the ROLE check; and because every new connection
 * asks again, a holder follows a failover to the new master.
 *
 * The sentinels authenticate with $REDLOCK_SENTINEL_USER and
 * $REDLOCK_SENTINEL_PASSWORD; the URL's user information (or the usual
 * password sources) is the master's.
 *
 * These round trips are blocking, with the short timeouts below, and
 * happen before the connection joins conn.c's poll loop as a connected,
 * authenticated, non-blocking context.
 */
#include "sentinel.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "log.h"

/*
 * Connecting to one sentinel, and each of its replies.  A sentinel on
 * the same network answers within a millisecond; a quarter second
 * allows for a loaded host, while a sentinel that is gone without
 * refusing (dropped packets) delays the next one only that long: three
 * dead sentinels cost under a second, well within "69 within seconds",
 * and a signal to the main thread waits no longer than that.
 */
#define SENTINEL_TIMEOUT_MS 250

/*
 * Connecting to the master a sentinel named, and its AUTH and ROLE
 * replies: longer, since this is the server the lock lives on and a
 * busy master may be slow to accept; still short, since a master that
 * just failed makes the next sentinel's answer the better bet.
 */
#define SENTINEL_MASTER_TIMEOUT_MS 500

/* Where a sentinel said the master is. */
struct addr {
	char host[256];
	int port;
};

/* What asking the sentinels has found so far, for the final message. */
struct ask {
	int unknown;		/* sentinels that know no such master */
	char why[256];		/* the first sentinel's failure */
	char master_why[256];	/* the last master's failure */
};

/*
 * A blocking connection to host:port that gives up after ms, and reads
 * and writes with the same bound.  Returns it (close-on-exec), or NULL
 * with "host:port: reason" in why.
 */
static redisContext *
dial(const char *host, int port, int ms, char *why, size_t len)
{
	struct timeval tv = { .tv_sec = ms / 1000,
	    .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
	redisContext *ctx = redisConnectWithTimeout(host, port, tv);
	const char *fmt = strchr(host, ':') ? "[%s]:%d: %s" : "%s:%d: %s";

	if (ctx == NULL || ctx->err) {
		snprintf(why, len, fmt, host, port,
		    ctx != NULL ? ctx->errstr : "out of memory");
		if (ctx != NULL)
			redisFree(ctx);
		return NULL;
	}
	(void)fcntl(ctx->fd, F_SETFD, FD_CLOEXEC);
	(void)redisSetTimeout(ctx, tv);
	return ctx;
}

/*
 * Run one command on a blocking context.  Returns the reply (the caller
 * frees it), or NULL with "host:port: reason" in why; an error reply is
 * turned into NULL too, with authentication failures said plainly.
 */
static redisReply *
ask_one(redisContext *ctx, const char *name, int argc, const char **argv,
    char *why, size_t len)
{
	redisReply *p = redisCommandArgv(ctx, argc, argv, NULL);

	if (p == NULL) {
		snprintf(why, len, "%s: %s", name, ctx->errstr[0] ?
		    ctx->errstr : "no reply");
		return NULL;
	}
	if (p->type != REDIS_REPLY_ERROR)
		return p;
	if (strncmp(p->str, "NOAUTH", 6) == 0)
		snprintf(why, len, "%s: authentication required", name);
	else if (strncmp(p->str, "WRONGPASS", 9) == 0 ||
	    (strcmp(argv[0], "AUTH") == 0 && strncmp(p->str, "NOPERM", 6) != 0))
		snprintf(why, len, "%s: authentication refused", name);
	else
		snprintf(why, len, "%s: %s", name, p->str);
	freeReplyObject(p);
	return NULL;
}

/* AUTH [user] password, if there is a password.  Returns 0, or -1 with
 * the reason in why. */
static int
auth(redisContext *ctx, const char *name, const char *user,
    const char *password, char *why, size_t len)
{
	const char *av[3] = { "AUTH", user, password };
	redisReply *p;

	if (password == NULL || password[0] == '\0')
		return 0;
	if (user == NULL || user[0] == '\0') {
		av[1] = password;
		p = ask_one(ctx, name, 2, av, why, len);
	} else
		p = ask_one(ctx, name, 3, av, why, len);
	if (p == NULL)
		return -1;
	freeReplyObject(p);
	return 0;
}

/* Read a sentinel's {host, port} answer into a; 0 if it is not one. */
static int
addr_of(const redisReply *p, struct addr *a)
{
	char *end;
	long port;

	if (p->type != REDIS_REPLY_ARRAY || p->elements != 2 ||
	    p->element[0]->type != REDIS_REPLY_STRING ||
	    p->element[1]->type != REDIS_REPLY_STRING)
		return 0;
	port = strtol(p->element[1]->str, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		return 0;
	snprintf(a->host, sizeof(a->host), "%s", p->element[0]->str);
	a->port = (int)port;
	return 1;
}

/*
 * Ask sentinel i of u where the master is.  Returns 1 with the address
 * in *a, 0 when the sentinel knows no master of that name, -1 when it
 * could not be asked (the reason in a->why's place: why).
 */
static int
ask_sentinel(const struct url *u, int i, struct addr *a, char *why,
    size_t len)
{
	const struct url_sentinel *s = &u->sentinels[i];
	const char *av[3] = { "SENTINEL", "get-master-addr-by-name", u->service };
	char name[200];
	redisContext *ctx;
	redisReply *p = NULL;
	int rc = -1;

	snprintf(name, sizeof(name), strchr(s->host, ':') ? "sentinel [%s]:%d" :
	    "sentinel %s:%d", s->host, s->port);
	if ((ctx = dial(s->host, s->port, SENTINEL_TIMEOUT_MS, why, len)) == NULL)
		return -1;
	if (auth(ctx, name, getenv("REDLOCK_SENTINEL_USER"),
	    getenv("REDLOCK_SENTINEL_PASSWORD"), why, len) == 0 &&
	    (p = ask_one(ctx, name, 3, av, why, len)) != NULL) {
		if (p->type == REDIS_REPLY_NIL)
			rc = 0;
		else if (addr_of(p, a))
			rc = 1;
		else
			snprintf(why, len, "%s: unexpected reply", name);
		freeReplyObject(p);
	}
	redisFree(ctx);
	return rc;
}

/*
 * Connect to the master at a, authenticate as c says, and make sure it
 * is a master now.  Returns the blocking context, or NULL with the
 * reason in why.
 */
static redisContext *
open_master(const struct conn *c, const struct addr *a, char *why,
    size_t len)
{
	const char *av[1] = { "ROLE" };
	const char *fmt = strchr(a->host, ':') ? "[%s]:%d" : "%s:%d";
	char name[200];
	redisContext *ctx;
	redisReply *p = NULL;
	int master = 0;

	snprintf(name, sizeof(name), fmt, a->host, a->port);
	if ((ctx = dial(a->host, a->port, SENTINEL_MASTER_TIMEOUT_MS, why,
	    len)) == NULL)
		return NULL;
	if (auth(ctx, name, c->url->user, c->password, why, len) == 0 &&
	    (p = ask_one(ctx, name, 1, av, why, len)) != NULL) {
		const char *role = p->type == REDIS_REPLY_ARRAY &&
		    p->elements > 0 && p->element[0]->type == REDIS_REPLY_STRING ?
		    p->element[0]->str : "unknown";
		master = strcmp(role, "master") == 0;
		if (!master)
			snprintf(why, len, "%s is not a master (role %.16s)", name,
			    role);
		freeReplyObject(p);
	}
	if (!master) {
		redisFree(ctx);
		return NULL;
	}
	return ctx;
}

/* Hand a blocking context over to conn.c's poll loop: reads and writes
 * that would block return at once, and hiredis treats that as "later". */
static int
make_nonblocking(redisContext *ctx)
{
	int fl = fcntl(ctx->fd, F_GETFL);

	if (fl < 0 || fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	ctx->flags &= ~REDIS_BLOCK;
	return 0;
}

/* The one line that says why no master was found. */
static void
give_up(const struct url *u, const struct ask *k, char *err, size_t errlen)
{
	if (k->master_why[0] != '\0')
		snprintf(err, errlen, "no master of '%s' reachable: %s",
		    u->service, k->master_why);
	else if (k->unknown > 0)
		snprintf(err, errlen, "the sentinels know no master named '%s'",
		    u->service);
	else
		snprintf(err, errlen, "no sentinel of '%s' answered: %s%s",
		    u->service, k->why, u->nsentinels > 1 ?
		    " (and the others failed too)" : "");
}

/*
 * Find the master of c's Sentinel URL and connect to it: on success
 * c->ctx is connected, authenticated, confirmed a master, close-on-exec
 * and non-blocking (conn.c sends SELECT), c->name says where it is, and
 * 0 is returned.  Otherwise c->ctx stays NULL and err has one line:
 * no sentinel answered, none knows SERVICE, or no master was reachable.
 */
int
sentinel_open(struct conn *c, char *err, size_t errlen)
{
	const struct url *u = c->url;
	struct ask k = { 0 };
	struct addr a, tried = { "", 0 };
	int i;

	c->ctx = NULL;
	if (u->tls) {
		/* TLS to the sentinels and the master comes with the TLS
		 * transport (SPEC section 8); never fall back to plain text. */
		snprintf(err, errlen, "cannot connect to %s: rediss+sentinel:// "
		    "needs TLS, which this build does not support", c->name);
		return -1;
	}
	for (i = 0; i < u->nsentinels && c->ctx == NULL; i++) {
		char why[256];
		int rc = ask_sentinel(u, i, &a, why, sizeof(why));

		if (rc < 0 && k.why[0] == '\0')
			snprintf(k.why, sizeof(k.why), "%s", why);
		k.unknown += rc == 0;
		/* Sentinels that agree on a master that failed are not asked
		 * to connect to it again. */
		if (rc <= 0 || (a.port == tried.port &&
		    strcmp(a.host, tried.host) == 0))
			continue;
		tried = a;
		c->ctx = open_master(c, &a, k.master_why, sizeof(k.master_why));
	}
	if (c->ctx == NULL) {
		give_up(u, &k, err, errlen);
		return -1;
	}
	if (make_nonblocking(c->ctx) < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", c->name,
		    "cannot make the socket non-blocking");
		redisFree(c->ctx);
		c->ctx = NULL;
		return -1;
	}
	snprintf(c->name, sizeof(c->name), strchr(a.host, ':') ?
	    "%s at [%s]:%d" : "%s at %s:%d", u->service, a.host, a.port);
	log_info("sentinel %s:%d: master %s", u->sentinels[i - 1].host,
	    u->sentinels[i - 1].port, c->name);
	return 0;
}
