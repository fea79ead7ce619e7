/*
 * route.c - resolve, then connect.  Before a request goes out, each
 * connection is given the address it is to reach: a Sentinel URL's
 * closed connection is pointed at the master the sentinels name now
 * (sentinel.c), so that every new connection follows a failover; a
 * Redis Cluster node's at the owner of the request's hash slot, as far
 * as the connection has learnt it (cluster.c); any other goes where its
 * URL points.  The transport under it (conn_exec(), exec.c and conn.c)
 * only connects to the address it is given.
 *
 * A Cluster may answer that the slot lives elsewhere (MOVED, ASK) or
 * that it cannot serve it yet (TRYAGAIN, CLUSTERDOWN): route_send()
 * follows those answers within the request's deadline (cluster.c) and
 * keeps what the connections said of their cluster's nodes
 * (topology.c), so that what its caller gets back is each server's own
 * answer, and a cluster is one server like any other.  Several URLs
 * that reach one cluster are one server too (route_merge()).
 *
 * The sentinels' answer also says which configuration of the service
 * the master belongs to, its epoch (sentinel.c); a request that carries
 * the failover guard (failover.c) names the argument that is to hold
 * it, and each Sentinel connection's request is sent with its own
 * master's epoch there.  Other connections send that argument as it is
 * ("").
 *
 * Every request on the servers a user named goes through here; the
 * sentinels' own short-lived connections and a Cluster's other nodes
 * use conn_exec() directly.  Nothing under this file calls it back.
 */
#include "route.h"

#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "sentinel.h"
#include "topology.h"

/* The longest line that says why no master was found. */
#define ROUTE_WHY_LEN 320

/*
 * Point every closed Sentinel connection that has a request at its
 * master.  A request whose master cannot be found is taken off the
 * round (its argc set to 0, the old value kept in argc[i]) with the
 * reason in why[i]; others get why[i][0] = NUL.
 */
static void
resolve(struct conn *c, struct conn_req *r, int n, int *argc,
    char (*why)[ROUTE_WHY_LEN])
{
	for (int i = 0; i < n; i++) {
		argc[i] = r[i].argc;
		why[i][0] = '\0';
		if (r[i].argc > 0 && c[i].ctx == NULL &&
		    c[i].url->kind == URL_SENTINEL &&
		    sentinel_open(&c[i], why[i], ROUTE_WHY_LEN) < 0)
			r[i].argc = 0;
	}
}

/* Put the requests resolve() took off back, failed with their reason. */
static void
restore(struct conn_req *r, int n, const int *argc,
    char (*why)[ROUTE_WHY_LEN])
{
	for (int i = 0; i < n; i++) {
		if (why[i][0] == '\0')
			continue;
		r[i].argc = argc[i];
		r[i].reply = NULL;
		r[i].fail = CONN_FAIL_OTHER;
		r[i].reason = 0;
		snprintf(r[i].err, sizeof(r[i].err), "%s", why[i]);
	}
}

/* The longest decimal epoch, with its NUL. */
#define ROUTE_EPOCH_LEN 24

/*
 * Give every request on a Sentinel connection that has argument at
 * (> 0) a vector of its own, row i of av and al (width w), with its
 * master's epoch (in num[i]) there.  Restore with unfill().
 */
static void
fill_epoch(const struct conn *c, struct conn_req *r, int n, int at, int w,
    const char **av, size_t *al, char (*num)[ROUTE_EPOCH_LEN])
{
	for (int i = 0; i < n && at > 0; i++) {
		const char **v = av + (size_t)i * (size_t)w;
		size_t *vl = al + (size_t)i * (size_t)w;

		if (r[i].argc <= at || r[i].argc > w || r[i].argvlen == NULL ||
		    c[i].url->kind != URL_SENTINEL)
			continue;
		memcpy(v, r[i].argv, (size_t)r[i].argc * sizeof(*v));
		memcpy(vl, r[i].argvlen, (size_t)r[i].argc * sizeof(*vl));
		/* No epoch (-1: a sentinel that may not tell it) is "". */
		if (c[i].epoch < 0)
			num[i][0] = '\0';
		else
			snprintf(num[i], ROUTE_EPOCH_LEN, "%lld", c[i].epoch);
		v[at] = num[i];
		vl[at] = strlen(num[i]);
		r[i].argv = v;
		r[i].argvlen = vl;
	}
}

/* Point the requests fill_epoch() changed back at their own vectors. */
static void
unfill(struct conn_req *r, int n, const char ***argv, const size_t **len)
{
	for (int i = 0; i < n; i++) {
		r[i].argv = argv[i];
		r[i].argvlen = len[i];
	}
}

/* conn_exec() once every connection has its address. */
int
route_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd)
{
	return route_exec_until(c, r, n, deadline, intr_fd, NULL, 0);
}

/* conn_exec_until() once every connection has its address; argument
 * epoch_at (0: none) of each request is its master's Sentinel epoch
 * (see the top). */
int
route_exec_until(struct conn *c, struct conn_req *r, int n,
    int64_t deadline, int intr_fd, conn_settled_fn *settled, int epoch_at)
{
	int argc[n > 0 ? n : 1], rc, w = 1;
	char why[n > 0 ? n : 1][ROUTE_WHY_LEN];
	const char **argv[n > 0 ? n : 1];
	const size_t *len[n > 0 ? n : 1];

	for (int i = 0; i < n; i++) {
		argv[i] = r[i].argv;
		len[i] = r[i].argvlen;
		if (epoch_at > 0 && r[i].argc > w)
			w = r[i].argc;
	}
	const char *av[n > 0 ? n : 1][w];
	size_t al[n > 0 ? n : 1][w];
	char num[n > 0 ? n : 1][ROUTE_EPOCH_LEN];

	resolve(c, r, n, argc, why);
	fill_epoch(c, r, n, epoch_at, w, &av[0][0], &al[0][0], num);
	rc = conn_exec_until(c, r, n, deadline, intr_fd, settled);
	unfill(r, n, argv, len);
	restore(r, n, argc, why);
	return rc;
}

/*
 * A script of proto.c's table that a server did not know (NOSCRIPT)
 * goes to that server again at once, by its body (a's EVAL form);
 * r[i] then holds that answer.  Returns -1 when intr_fd became
 * readable, else 0.
 */
static int
resend_body(struct conn *conns, int n, struct args *a,
    struct conn_req *r, const struct route_how *how, int epoch_at)
{
	struct args body = *a;
	struct conn_req r2[n > 0 ? n : 1];
	int rc, again = 0;

	for (int i = 0; i < n; i++)
		again |= reply_noscript(r[i].reply);
	if (!again)
		return 0;
	args_as_eval(&body);
	for (int i = 0; i < n; i++) {
		r2[i].argc = reply_noscript(r[i].reply) ? body.argc : 0;
		r2[i].argv = body.argv;
		r2[i].argvlen = body.len;
	}
	rc = route_exec_until(conns, r2, n, how->deadline, how->intr_fd, NULL,
	    epoch_at);
	for (int i = 0; i < n; i++) {
		if (r2[i].argc == 0)
			continue;
		conn_req_clear(&r[i], 1);
		r[i] = r2[i];
		r[i].argc = a->argc;
		r[i].argv = a->argv;
		r[i].argvlen = a->len;
	}
	return rc < 0 ? -1 : 0;
}

/*
 * Send a to every server i not skipped (how->skip), each where a's key
 * lives, and collect the replies into r[0..n) until how->deadline, or
 * until how->settled(r, n) says the replies in hand decide the matter.
 * A server that does not know a script (NOSCRIPT) gets its body at
 * once; so do several servers, always (a is changed to its EVAL form).
 * A cluster's redirections and retries are followed after the round,
 * within the deadline (cluster_follow()), so r[i] is the answer of the
 * node that serves the key.  Returns -1 when how->intr_fd became
 * readable, else 0; the caller frees the replies with conn_req_clear().
 */
int
route_send(struct conn *conns, int n, struct args *a, struct conn_req *r,
    const struct route_how *how)
{
	int epoch_at = a->script >= 0 ? a->epoch_at : 0;
	int rc;

	/* With several servers a round may end before a slow server's
	 * reply is read (conn_exec_until()'s settled), and a NOSCRIPT in
	 * that reply would go unseen: they get the script's body. */
	if (n > 1)
		args_as_eval(a);
	for (int i = 0; i < n; i++) {
		r[i].argc = how->skip != NULL && how->skip[i] ? 0 : a->argc;
		r[i].argv = a->argv;
		r[i].argvlen = a->len;
	}
	cluster_route(conns, n, a);
	rc = route_exec_until(conns, r, n, how->deadline, how->intr_fd,
	    how->settled, epoch_at);
	/* A script of the table (every script is): its body where unknown. */
	if (rc >= 0 && a->script >= 0)
		rc = resend_body(conns, n, a, r, how, epoch_at);
	if (rc >= 0)
		topology_learn(conns, n, how->deadline);
	if (rc >= 0 && cluster_follow(conns, n, a, r, how->deadline,
	    how->intr_fd) < 0)
		rc = -1;
	return rc < 0 ? -1 : 0;
}

/*
 * Several URLs that reach nodes of one Redis Cluster are one server,
 * not several (topology_merge(): info[i] is server i's INFO server
 * reply).  Moves the servers that stand for themselves or a cluster to
 * the front of conns, in order, and returns their number.
 */
int
route_merge(struct conn *conns, int n, const struct conn_req *info,
    int64_t deadline, char *err, size_t errlen)
{
	return topology_merge(conns, n, info, deadline, err, errlen);
}

/*
 * The masters of the Redis Cluster that c reaches, once c has its
 * address (a Sentinel URL's closed connection asks the sentinels
 * first): topology_masters(), whose contract this is.  A master that
 * cannot be found is -1, with the reason in err.
 */
int
route_masters(struct conn *c, struct conn **out, int64_t deadline,
    char *err, size_t errlen)
{
	char why[ROUTE_WHY_LEN];

	*out = NULL;
	if (c->ctx == NULL && c->url->kind == URL_SENTINEL &&
	    sentinel_open(c, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	return topology_masters(c, out, deadline, err, errlen);
}
