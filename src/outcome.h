/* outcome.h - what became of one run-form invocation, in one word
 * (redlock-monitoring(7)) */
#ifndef REDLOCK_OUTCOME_H
#define REDLOCK_OUTCOME_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

/* In the order the metrics and redlock-monitoring(7) list them. */
enum outcome {
	OUTCOME_OK, OUTCOME_FAILED, OUTCOME_SIGNAL, OUTCOME_BUSY,
	OUTCOME_TIMEOUT, OUTCOME_UNAVAILABLE, OUTCOME_EXEC_FAILED,
	OUTCOME_LOST, OUTCOME_MAX_TIME, OUTCOME_STOPPED, OUTCOME_COUNT
};

/* What the run form knows at its end, from which the outcome follows. */
struct outcome_facts {
	int acquired;		/* the lock was held (or inherited) */
	enum lock_result res;	/* when not acquired: why */
	int64_t wait;		/* -w ms, 0 for -n, -1 forever */
	int spawned;		/* the command was started */
	int lost, timed_out, stopped;	/* struct run's flags */
	int signaled;		/* the command died of a signal */
	int shell;		/* the command was -c's sh: its 126 and 127
				 * mean it could not run the command */
	int code;		/* the exit status */
};

const char *outcome_word(enum outcome o);
int outcome_parse(const char *s, size_t n);
enum outcome outcome_of(const struct outcome_facts *f);
int outcome_skipped(enum outcome o);

#endif
