/* route.h - where each request goes, decided before the transport
 * connects: a Sentinel's master, a Redis Cluster's slot owner and its
 * redirections (route.c) */
#ifndef REDLOCK_ROUTE_H
#define REDLOCK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "proto.h"

/* How a round of route_send() runs; what a caller leaves zero is not
 * used (but intr_fd must be -1 for none). */
struct route_how {
	int64_t deadline;	/* a clock_ms() value */
	int intr_fd;		/* give up when it becomes readable; -1 never */
	conn_settled_fn *settled;	/* stop once the replies in hand decide;
					 * NULL: wait for every reply */
	const char *skip;	/* skip[i]: server i is not asked; NULL: none */
};

int route_send(struct conn *conns, int n, struct args *a, struct conn_req *r,
    const struct route_how *how);
int route_merge(struct conn *conns, int n, const struct conn_req *info,
    int64_t deadline, char *err, size_t errlen);
int route_masters(struct conn *c, struct conn **out, int64_t deadline,
    char *err, size_t errlen);
int route_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd);
int route_exec_until(struct conn *c, struct conn_req *r, int n,
    int64_t deadline, int intr_fd, conn_settled_fn *settled, int epoch_at);

#endif
