/* failover.h - the failover guard, client side (HIGH AVAILABILITY in redlock-protocol(7)) */
#ifndef REDLOCK_FAILOVER_H
#define REDLOCK_FAILOVER_H

#include <hiredis/hiredis.h>

#include "lock_types.h"

int failover_guarded(const struct lock *l);
void failover_arg(struct args *a, int pos, int epos, const struct lock *l);
int64_t failover_patience(const struct lock *l);
int failover_held_back(const struct conn *c, const redisReply *p,
    struct lock_outcome *o);

#endif
