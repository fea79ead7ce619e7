/* route.h - where each request goes, decided before the transport
 * connects (route.c) */
#ifndef REDLOCK_ROUTE_H
#define REDLOCK_ROUTE_H

#include <stdint.h>

#include "exec.h"

int route_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd);
int route_exec_until(struct conn *c, struct conn_req *r, int n,
    int64_t deadline, int intr_fd, conn_settled_fn *settled, int epoch_at);

#endif
