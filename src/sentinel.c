/*
 * sentinel.c - find the master of a redis+sentinel:// URL (HIGH
 * AVAILABILITY in redlock-protocol(7)).
 *
 * Before a connection for a Sentinel URL is opened (the first command,
 * a renewal's reconnect, the release: route.c), the sentinels are asked
 * in turn, in the URL's order, where the master of SERVICE is (SENTINEL
 * get-master-addr-by-name), and the first address whose server says it
 * is a master (ROLE) is used.  A sentinel's answer can be stale during
 * a failover, hence the ROLE check; and because every new connection
 * asks again, a holder follows a failover to the new master.
 *
 * The same sentinel is then asked the master's configuration epoch
 * (SENTINEL MASTER), which the failover guard compares with its record
 * (failover.c): Sentinel raises it with every promotion and keeps it on
 * disk.  The sentinel that leads a failover raises the epoch before it
 * names the promoted replica (get-master-addr-by-name gives the new
 * address from the same step of the failover on), and the others learn
 * both at once, so an epoch asked after the address is never older
 * than the one that went with it.
 *
 * The sentinels authenticate with $REDLOCK_SENTINEL_USER and
 * $REDLOCK_SENTINEL_PASSWORD; the URL's user information (or the usual
 * password sources) is the master's.
 *
 * rediss+sentinel:// speaks TLS to the sentinels and to the master,
 * both verified as usual (--cacert, --sni, --insecure).
 *
 * The sentinels are asked on short-lived connections of their own,
 * through conn_exec() like any other command (so TLS, AUTH and their
 * messages are conn.c's and exec.c's).  ROLE is asked on the caller's
 * own connection, pointed at the address a sentinel gave, which stays
 * open for the caller's command: there is no second connection to the
 * master, and no blocking hiredis call.
 */
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exec.h"
#include "log.h"
#include "proto.h"

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

/* Where a sentinel said the master is, and its configuration epoch. */
struct addr {
	char host[256];
	int port;
	long long epoch;
};

/* What asking the sentinels has found so far, for the final message. */
struct ask {
	int unknown;		/* sentinels that know no such master */
	char why[320];		/* the first sentinel's failure */
	char master_why[320];	/* the last master's failure */
};

/*
 * Run one command on c, named name in messages, within ms.  On success
 * returns the reply, and c is left open; otherwise NULL, with "NAME:
 * reason" in why and c closed.  An error reply is a failure too; *kind,
 * unless kind is NULL, says which (SERVER_OK for no reply at all).
 */
static redisReply *
ask_once(struct conn *c, const char *name, int argc, const char **argv,
    int ms, char *why, size_t len, enum server_error *kind)
{
	struct conn_req r = { .argc = argc, .argv = argv };

	snprintf(c->name, sizeof(c->name), "%s", name);
	conn_exec(c, &r, 1, clock_ms() + ms, -1);
	if (kind != NULL)
		*kind = reply_error(r.reply);
	if (r.reply != NULL && r.reply->type != REDIS_REPLY_ERROR)
		return r.reply;
	if (r.reply != NULL)
		snprintf(why, len, "%s: %s", name, r.reply->str);
	else
		snprintf(why, len, "%s: %s", name, r.err + r.reason);
	conn_req_clear(&r, 1);
	conn_close(c);
	return NULL;
}

/* The value of field f in a SENTINEL MASTER reply (a flat array of
 * names and values), or NULL. */
static const char *
field_of(const redisReply *p, const char *f)
{
	for (size_t i = 0; i + 1 < p->elements; i += 2)
		if (p->element[i]->type == REDIS_REPLY_STRING &&
		    p->element[i + 1]->type == REDIS_REPLY_STRING &&
		    strcmp(p->element[i]->str, f) == 0)
			return p->element[i + 1]->str;
	return NULL;
}

/* Read a sentinel's SENTINEL MASTER answer (its ip, port and
 * config-epoch) into a; 0 if it is not one. */
static int
addr_of(const redisReply *p, struct addr *a)
{
	const char *ip, *port, *epoch;
	char *end, *eend;
	long n;

	if (p->type != REDIS_REPLY_ARRAY ||
	    (ip = field_of(p, "ip")) == NULL ||
	    (port = field_of(p, "port")) == NULL ||
	    (epoch = field_of(p, "config-epoch")) == NULL)
		return 0;
	n = strtol(port, &end, 10);
	a->epoch = strtoll(epoch, &eend, 10);
	if (*end != '\0' || n < 1 || n > 65535 || *eend != '\0' ||
	    eend == epoch || a->epoch < 0)
		return 0;
	snprintf(a->host, sizeof(a->host), "%s", ip);
	a->port = (int)n;
	return 1;
}

/* The name of host:port in messages. */
static void
name_of(char *buf, size_t len, const char *host, int port)
{
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* Read a SENTINEL get-master-addr-by-name answer ({ip, port}) into a,
 * with no epoch (-1); 0 if it is not one. */
static int
addr_of_pair(const redisReply *p, struct addr *a)
{
	char *end;
	long n;

	if (p->type != REDIS_REPLY_ARRAY || p->elements != 2 ||
	    p->element[0]->type != REDIS_REPLY_STRING ||
	    p->element[1]->type != REDIS_REPLY_STRING)
		return 0;
	n = strtol(p->element[1]->str, &end, 10);
	if (*end != '\0' || n < 1 || n > 65535)
		return 0;
	snprintf(a->host, sizeof(a->host), "%s", p->element[0]->str);
	a->port = (int)n;
	a->epoch = -1;
	return 1;
}

/*
 * The configuration epoch of service on sentinel c (open), asked after
 * its address: -1 when the sentinel may not be asked SENTINEL MASTER
 * (an ACL written for older redlocks) or does not say; the failover
 * guard then falls back to the replication ids.  c stays open.
 */
static long long
epoch_of(struct conn *c, const char *name, const char *service)
{
	const char *av[3] = { "SENTINEL", "MASTER", service };
	struct conn_req r = { .argc = 3, .argv = av };
	struct addr m;
	long long epoch = -1;

	conn_exec(c, &r, 1, clock_ms() + SENTINEL_TIMEOUT_MS, -1);
	if (r.reply != NULL && addr_of(r.reply, &m))
		epoch = m.epoch;
	else
		log_info("%s gave no configuration epoch of '%s' (may the user "
		    "ask SENTINEL MASTER?): the failover guard goes by "
		    "replication ids alone", name, service);
	conn_req_clear(&r, 1);
	return epoch;
}

/*
 * Ask sentinel i of u where the master is (SENTINEL
 * get-master-addr-by-name), then, on the same connection, its epoch
 * (epoch_of()).  Asked in that order, the epoch is at least the one
 * that went with the address: a sentinel raises the epoch before it
 * names the promoted replica, and learns both from another at once.
 * Returns 1 with the address in *a, 0 when the sentinel knows no master
 * of that name, -1 when it could not be asked (the reason in why).
 */
static int
ask_sentinel(const struct url *u, int i, struct addr *a, char *why,
    size_t len)
{
	const struct url_sentinel *s = &u->sentinels[i];
	const char *av[3] = { "SENTINEL", "get-master-addr-by-name",
	    u->service };
	struct url at = { .kind = URL_TCP, .tls = u->tls, .host = s->host,
	    .port = s->port, .user = getenv("REDLOCK_SENTINEL_USER"),
	    .of_sentinel = 1 };
	struct conn c;
	char name[200];
	redisReply *p;
	enum server_error kind;
	int rc = -1;

	name_of(name, sizeof(name), s->host, s->port);
	conn_init(&c, &at, getenv("REDLOCK_SENTINEL_PASSWORD"));
	p = ask_once(&c, name, 3, av, SENTINEL_TIMEOUT_MS, why, len, &kind);
	if (p == NULL)
		return kind == SERVER_NOMASTER ? 0 : -1;
	if (p->type == REDIS_REPLY_NIL)
		rc = 0;
	else if (addr_of_pair(p, a)) {
		a->epoch = epoch_of(&c, name, u->service);
		rc = 1;
	} else
		snprintf(why, len, "%s: unexpected reply", name);
	freeReplyObject(p);
	conn_close(&c);
	return rc;
}

/*
 * Point c at the master at a and connect to it as c's URL says
 * (credentials, database, TLS), making sure it is a master now.
 * Returns 0 with c open there, or -1 with c closed and the reason in
 * why.
 */
static int
open_master(struct conn *c, const struct addr *a, char *why, size_t len)
{
	const char *av[1] = { "ROLE" };
	const char *role;
	char name[200];
	redisReply *p;
	int master;

	name_of(name, sizeof(name), a->host, a->port);
	if (conn_retarget(c, a->host, a->port) < 0) {
		snprintf(why, len, "%s: the name is too long", name);
		return -1;
	}
	c->routed = 1;
	c->epoch = a->epoch;
	p = ask_once(c, name, 1, av, SENTINEL_MASTER_TIMEOUT_MS, why, len,
	    NULL);
	if (p == NULL)
		return -1;
	role = p->type == REDIS_REPLY_ARRAY && p->elements > 0 &&
	    p->element[0]->type == REDIS_REPLY_STRING ? p->element[0]->str :
	    "unknown";
	master = strcmp(role, "master") == 0;
	if (!master) {
		snprintf(why, len, "%s is not a master (role %.16s)", name, role);
		conn_close(c);
	}
	freeReplyObject(p);
	return master ? 0 : -1;
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
 * Find the master of c's Sentinel URL and connect to it: on success c
 * is open there (connected, authenticated, its database selected,
 * confirmed a master), c->name says where it is, c->epoch is its
 * configuration epoch, and 0 is returned.
 * Otherwise c is closed, pointed back at its URL, and err has one line:
 * no sentinel answered, none knows SERVICE, or no master was reachable.
 */
int
sentinel_open(struct conn *c, char *err, size_t errlen)
{
	const struct url *u = c->url;
	struct ask k = { 0 };
	struct addr a, tried = { "", 0, 0 };
	int i, found = 0;

	for (i = 0; i < u->nsentinels && !found; i++) {
		char why[320];
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
		found = open_master(c, &a, k.master_why,
		    sizeof(k.master_why)) == 0;
	}
	if (!found) {
		(void)conn_retarget(c, NULL, 0);
		give_up(u, &k, err, errlen);
		return -1;
	}
	snprintf(c->name, sizeof(c->name), strchr(a.host, ':') ?
	    "%s at [%s]:%d" : "%s at %s:%d", u->service, a.host, a.port);
	log_info("sentinel %s:%d: master %s", u->sentinels[i - 1].host,
	    u->sentinels[i - 1].port, c->name);
	return 0;
}
