/* wait.h - taking a lock, waiting for it as long as the user allows */
#ifndef REDLOCK_WAIT_H
#define REDLOCK_WAIT_H

#include <stdint.h>

#include "lock.h"

/* What the caller does once, before the first sleep of a wait (the
 * lock was busy or the servers failed): a run starts its guard then. */
struct wait_hook {
	void (*sleeping)(void *arg);
	void *arg;
};

enum lock_result wait_acquire(struct lock *l, int64_t wait, int intr_fd,
    const struct wait_hook *hook, struct lock_outcome *o);
int wait_stopped(struct lock *l, int64_t ms, int64_t hard, int intr_fd,
    struct lock_outcome *o);

#endif
