/*
 * route.c - resolve, then connect.  Before a request goes out, each
 * connection is given the address it is to reach: a Sentinel URL's
 * closed connection is pointed at the master the sentinels name now
 * (sentinel.c), so that every new connection follows a failover; any
 * other goes where its URL or a Redis Cluster redirection (cluster.c)
 * pointed it.  The transport under it (conn_exec(), exec.c and conn.c)
 * only connects to the address it is given.
 *
 * Every request on the servers a user named goes through here; the
 * sentinels' own short-lived connections and a Cluster's other nodes
 * use conn_exec() directly.
 */
#include "route.h"

#include <stdio.h>

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

/* conn_exec() once every connection has its address. */
int
route_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd)
{
	return route_exec_until(c, r, n, deadline, intr_fd, NULL);
}

/* conn_exec_until() once every connection has its address. */
int
route_exec_until(struct conn *c, struct conn_req *r, int n,
    int64_t deadline, int intr_fd, conn_settled_fn *settled)
{
	int argc[n > 0 ? n : 1], rc;
	char why[n > 0 ? n : 1][ROUTE_WHY_LEN];

	resolve(c, r, n, argc, why);
	rc = conn_exec_until(c, r, n, deadline, intr_fd, settled);
	restore(r, n, argc, why);
	return rc;
}
