/* wait.h - taking a lock, waiting for it as long as the user allows */
#ifndef REDLOCK_WAIT_H
#define REDLOCK_WAIT_H

#include <stdint.h>

#include "lock.h"

enum lock_result wait_acquire(struct lock *l, int64_t wait, int intr_fd,
    struct lock_outcome *o);
int wait_stopped(struct lock *l, int64_t ms, int64_t hard, int intr_fd,
    struct lock_outcome *o);

#endif
