/* supervise.h - watching the command while the lock is held */
#ifndef REDLOCK_SUPERVISE_H
#define REDLOCK_SUPERVISE_H

#include <stdint.h>

#include "child.h"
#include "config.h"
#include "lock.h"
#include "renew.h"

/* What supervision knows about one run of the command. */
struct run {
	const struct config *cfg;
	const struct lock *lock;
	struct grant *grant;	/* the run's: its token, and when the last
				 * grant or renewal was sent */
	struct child child;
	int held;		/* ours to renew and release (not re-entrant) */
	struct renew *renew;	/* while the command runs, once due */
	int64_t renew_at;	/* when to start renewing; 0: started or none */
	int guard_fd;		/* the guard's pipe, or -1 */
	int lease_fd;		/* where lease ends go (guard_fd or -1) */
	int64_t started;	/* clock_ms() when the command started */
	int64_t kill_at;	/* SIGKILL then, once stopping; 0: not */
	int stopping;
	int lost;		/* the lock was lost: exit 75 */
	int timed_out;		/* --max-time ran out: exit 124 */
	int not_run;		/* the command could not be started */
	int stop_asked;		/* redlock stop asked us: stopping as on
				 * SIGTERM, the command's status is ours */
};

void supervise_init(struct run *r, const struct config *c,
    const struct lock *l, struct grant *g);
void supervise_guard_early(struct run *r);
void supervise_guard(struct run *r);
int supervise(struct run *r);
void supervise_end(struct run *r);
void supervise_stand_down(struct run *r);

#endif
