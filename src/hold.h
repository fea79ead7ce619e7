/* hold.h - what a holder does with its token, and the usual round over
 * a lock's servers (hold.c) */
#ifndef REDLOCK_HOLD_H
#define REDLOCK_HOLD_H

#include <stdint.h>

#include "exec.h"
#include "lock_types.h"

int lock_round(const struct lock *l, struct args *a, struct conn_req *r,
    int64_t deadline, struct lock_outcome *o);
int64_t lock_record_ms(const struct lock *l);
int lock_renew(const struct lock *l, const char *token, int64_t deadline,
    int64_t record_ms, int *lost, struct lock_outcome *o);
int lock_release(const struct lock *l, const struct release *rel,
    int *others, struct lock_outcome *o);
int lock_expire(const struct lock *l, const char *token, int *others,
    struct lock_outcome *o);
int lock_extend(const struct lock *l, const char *token, int *others,
    struct lock_outcome *o);
void lock_unqueue(const struct lock *l, struct lock_waiter *w,
    int interrupted);
void lock_notify_stopped(const struct lock *l);

#endif
