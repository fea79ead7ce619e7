/* lock.h - one lock over one or more independent servers: taking it
 * (lock.c); its types are lock_types.h's, holding it is hold.h's */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdint.h>

#include "exec.h"
#include "lock_types.h"

int lock_init(struct lock *l, struct conn *conns, int n, const char *prefix,
    const char *name, int64_t ttl);
void lock_free(struct lock *l);
int64_t lock_lease_end(const struct lock *l, int64_t sent);
enum lock_result lock_try(struct lock *l, struct lock_waiter *w,
    int64_t ahead_ms, struct lock_outcome *o, int intr_fd);
enum lock_result lock_retake(struct lock *l, struct lock_outcome *o);

#endif
