/* lock.h - one lock over one or more independent servers: setting it
 * up and taking it (lock.c); its types are lock_types.h's, holding it
 * is hold.h's */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdint.h>

#include "exec.h"
#include "lock_types.h"

int lock_init(struct lock *l, struct conn *conns, int n, const char *prefix,
    const char *name, int64_t ttl);
void lock_setup(struct lock *l, const struct lock_policy *p,
    const struct lock_meta *m);
void lock_free(struct lock *l);
int64_t lock_lease_end(const struct lock *l, int64_t sent);
enum lock_result lock_try(const struct lock *l, struct lock_waiter *w,
    int64_t ahead_ms, struct grant *g, struct lock_outcome *o, int intr_fd);
enum lock_result lock_retake(const struct lock *l, struct grant *g,
    struct lock_outcome *o);

#endif
