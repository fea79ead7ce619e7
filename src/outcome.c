/*
 * outcome.c - the outcome words, named once (redlock-monitoring(7)), and how
 * the run form's end maps to them.  Each word with the exit status that
 * goes with it (exit.h):
 *
 *   ok           0              the command ran and exited 0
 *   failed       1-255          the command exited non-zero (any status
 *                               the words below do not claim)
 *   signal       128+N          the command died of signal N, or redlock
 *                               was stopped by N while waiting
 *   busy         -E (1)         -n found the lock held (1 with
 *                               --skip-alert once the alert is due)
 *   timeout      -E (1)         -w ran out; as busy for --skip-alert
 *   unavailable  69             no server (or no quorum) answered
 *   exec_failed  126 / 127      COMMAND not executable / not found
 *   lost         75             the lock was lost while the command ran
 *   max_time     124            --max-time ran out
 *   stopped      the command's  redlock stop asked the holder to stop
 *
 * The metrics (metrics.c), the run record (record.c) and the hooks'
 * REDLOCK_OUTCOME (hooks.c) all use these words.
 */
#include "outcome.h"

#include <string.h>

#include "exit.h"

static const char *const words[OUTCOME_COUNT] = {
	"ok", "failed", "signal", "busy", "timeout", "unavailable",
	"exec_failed", "lost", "max_time", "stopped"
};

const char *
outcome_word(enum outcome o)
{
	return o >= 0 && o < OUTCOME_COUNT ? words[o] : "failed";
}

/* The outcome named by the n bytes at s, or -1. */
int
outcome_parse(const char *s, size_t n)
{
	for (int i = 0; i < OUTCOME_COUNT; i++)
		if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
			return i;
	return -1;
}

/* The outcome of an invocation that did not get the lock. */
static enum outcome
not_acquired(const struct outcome_facts *f)
{
	switch (f->res) {
	case LOCK_UNAVAILABLE:
		return OUTCOME_UNAVAILABLE;
	case LOCK_INTERRUPTED:
		return OUTCOME_SIGNAL;
	case LOCK_BUSY:
		return f->wait == 0 ? OUTCOME_BUSY : OUTCOME_TIMEOUT;
	case LOCK_SELF_SHARED:
		return OUTCOME_BUSY;
	default:
		return OUTCOME_FAILED;
	}
}

/* The outcome of the invocation that f describes.  What ended the
 * command counts before how it ended: a command stopped on loss dies
 * of SIGTERM, but it was the loss. */
enum outcome
outcome_of(const struct outcome_facts *f)
{
	if (!f->acquired)
		return not_acquired(f);
	if (!f->spawned)
		return f->code == EXIT_NOEXEC || f->code == EXIT_NOTFOUND ? OUTCOME_EXEC_FAILED :
		    OUTCOME_FAILED;
	if (f->lost)
		return OUTCOME_LOST;
	if (f->timed_out)
		return OUTCOME_MAX_TIME;
	if (f->stopped)
		return OUTCOME_STOPPED;
	if (f->signaled)
		return OUTCOME_SIGNAL;
	if (f->shell && (f->code == EXIT_NOEXEC || f->code == EXIT_NOTFOUND))
		return OUTCOME_EXEC_FAILED;
	return f->code == 0 ? OUTCOME_OK : OUTCOME_FAILED;
}

/* Is o an attempt that found the lock taken (a skip, for the record)? */
int
outcome_skipped(enum outcome o)
{
	return o == OUTCOME_BUSY || o == OUTCOME_TIMEOUT;
}
