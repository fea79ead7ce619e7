/* metrics.h - the node_exporter textfile of one NAME on this host */
#ifndef REDLOCK_METRICS_H
#define REDLOCK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "outcome.h"

/* What one write says: the start (running, outcome < 0) or the end. */
struct metrics_event {
	int outcome;		/* enum outcome, or -1: the command started */
	int exit_status;
	int ran;		/* the command ran: start_ms and run_ms count */
	int64_t start_ms;	/* wall clock, when the command started */
	int64_t end_ms;		/* wall clock, at the end */
	int64_t run_ms, wait_ms;
};

/* What ends a wait for the directory: fd readable, and then ends()
 * nonzero (redlock is to end: a signal that asks it to). */
struct metrics_intr {
	int fd;
	int (*ends)(void);
};

int metrics_write(const struct config *c, const struct metrics_event *e,
    int64_t patience_ms, const struct metrics_intr *in, char *err,
    size_t errlen);

#endif
