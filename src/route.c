/*
 * route.c - resolve, then connect.  Before a request goes out, each
 * connection is given the address it is to reach: a Sentinel URL's
 * closed connection is pointed at the master the sentinels name now
 * (sentinel.c), so that every new connection follows a failover; any
 * other goes where its URL or a Redis Cluster redirection (cluster.c)
 * pointed it.  The transport under it (conn_exec(), exec.c and conn.c)
 * only connects to the address it is given.
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
 * use conn_exec() directly.
 */
#include "route.h"

#include <stdio.h>
#include <string.h>

#include "sentinel.h"

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
