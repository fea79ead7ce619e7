/* cluster.h - speaking to a Redis Cluster through any of its nodes:
 * redirections and the slot map */
#ifndef REDLOCK_CLUSTER_H
#define REDLOCK_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "proto.h"

void cluster_route(struct conn *conns, int n, const struct args *a);
int cluster_follow(struct conn *conns, int n, const struct args *a,
    struct conn_req *r, int64_t deadline, int intr_fd);
void cluster_watch(struct conn *c);
void cluster_add_node(struct conn *c, const char *host, int port);
int cluster_add_seed(struct conn *c, const struct url *u,
    const char *password);
int cluster_hop(const redisReply *p);
void cluster_forget(struct conn *c);
const char *cluster_conn_host(const struct conn *c);

#endif
