/* topology.h - a Redis Cluster's nodes and masters, and several URLs
 * that are one cluster */
#ifndef REDLOCK_TOPOLOGY_H
#define REDLOCK_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"

void topology_learn(struct conn *conns, int n, int64_t deadline);
int topology_merge(struct conn *conns, int n, const struct conn_req *info,
    int64_t deadline, char *err, size_t errlen);
int topology_masters(struct conn *c, struct conn **out, int64_t deadline,
    char *err, size_t errlen);
void topology_masters_free(struct conn *m, int n);

#endif
