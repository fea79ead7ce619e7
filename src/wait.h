/* wait.h - taking a lock, waiting for it as long as the user allows */
#ifndef REDLOCK_WAIT_H
#define REDLOCK_WAIT_H

#include <stdint.h>

#include "lock.h"

/*
 * How a wait tells its caller how it goes: fn(ctx, res, o) once a
 * round, after an attempt that did not end the wait (res, and o what
 * that attempt learned) and before the wait sleeps.  fn must not
 * change the lock; what it costs in time counts against -w.
 */
struct wait_report {
	void (*fn)(void *ctx, enum lock_result res,
	    const struct lock_outcome *o);
	void *ctx;
};

/* What one wait asks (wait_acquire()). */
struct wait_req {
	int64_t wait;		/* -w in ms; 0: one attempt; <0: forever */
	int64_t since;		/* when the -w time began (clock_ms()); 0:
				 * now */
	int claim;		/* --replace: claim NAME ahead of the other
				 * waiters (replace.c) */
	int intr_fd;		/* readable: a signal arrived */
	const struct wait_report *report;	/* or NULL: nobody asked */
};

enum lock_result wait_acquire(const struct lock *l, const struct wait_req *q,
    struct grant *g, struct lock_outcome *o);
int wait_stopped(const struct lock *l, int64_t ms, int64_t hard, int intr_fd,
    struct lock_outcome *o);

#endif
