/* monitor.h - what the run form tells the outside about each run:
 * metrics (metrics.c), the run record (record.c), hooks (hooks.c) and
 * systemd (notify.c), one call a phase of the run (run.c) */
#ifndef REDLOCK_MONITOR_H
#define REDLOCK_MONITOR_H

#include <stdint.h>

#include "config.h"
#include "lock.h"
#include "outcome.h"
#include "supervise.h"

struct monitor {
	const struct config *cfg;
	const struct lock *lock;
	const struct grant *grant;	/* the run's: its fence, once held */
	int64_t begin;		/* clock_ms() when the run form began */
	int64_t acquired;	/* clock_ms() when the lock was held, or 0 */
	int64_t started;	/* clock_ms() when the command started, or 0 */
	int64_t start_wall;	/* the same on the wall clock */
	int start_fd;		/* the --on-start runner's pipe, or -1 */
	int inner;		/* re-entrant: the lock and its metrics and run
				 * record are the enclosing redlock's */
	int warned;		/* the metrics warning was given */
	int end_signal;		/* asked redlock to end during the hooks */
	enum outcome outcome;	/* the run's, once monitor_done() said it */
	char run_id[37];	/* pairs --on-start with --on-exit */
};

void monitor_begin(struct monitor *m, const struct config *c,
    const struct lock *l, const struct grant *g, int64_t since);
void monitor_waiting(void *m, enum lock_result res,
    const struct lock_outcome *o);
int monitor_refused(struct monitor *m, enum lock_result res, int code,
    int *die_by);
int monitor_done_before(struct monitor *m, int code, int *die_by);
void monitor_starting(struct monitor *m);
void monitor_started(struct monitor *m, int code);
enum outcome monitor_done(struct monitor *m, const struct run *r, int code,
    int die_by);
void monitor_lost(struct monitor *m);
int monitor_end(struct monitor *m, int code, int *die_by);
void monitor_pausing(const struct lock *l, int round, int code,
    int64_t pause_ms);
void monitor_stopping(void);

#endif
