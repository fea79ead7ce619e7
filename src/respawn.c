/*
 * respawn.c - --respawn (SCHEDULING in redlock-scheduling(7)): a leader with standbys.
 * Each round is a whole run of the run form (run.c): campaign (wait for
 * the lock as -w allows), run the command under it with its guard and
 * renewal, release.  After the command exits or the lock is lost, back
 * off and campaign again, until redlock is asked to end by a signal.
 * Rounds never overlap: a round starts only after the last one released
 * (or gave up) the lock and its command's whole tree was gone, and it
 * takes the lock with a fresh token, guard and renewal of its own, into
 * a grant of its own (struct grant, zeroed: a round that never held the
 * lock leaves its fence 0).  Only the first round claims NAME with
 * --replace (its wait's argument); later rounds are a standby's.
 *
 * While it waits, a standby is one of the lock's waiters, marked as a
 * standby by its waiter id (lock.c), which status and list count.
 *
 * The exit status is the last round's: a signal that arrives while the
 * command runs is forwarded to it as without --respawn, and redlock
 * ends with the command's status (dying of its signal); SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT while redlock waits or backs off ends it with 128+N,
 * and SIGUSR1 or SIGUSR2 then is dropped (wait.c, settle()), as no
 * command runs to take it.  redlock stop ends the round, not the
 * standby: it campaigns again.
 */
#include "respawn.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "clock.h"
#include "exit.h"
#include "log.h"
#include "monitor.h"
#include "run.h"
#include "sig.h"

/* The pause after a round, doubling after each round up to the cap: a
 * command that fails at once is not restarted in a tight loop, and a
 * standby that gave up the lock leaves the others time to take it. */
#define RESPAWN_BACKOFF_MS 1000
#define RESPAWN_BACKOFF_MAX_MS 30000

/* A round whose command ran at least this long resets the pause to
 * RESPAWN_BACKOFF_MS: it was a run, not a crash loop.  So does a round
 * that held the lock and lost it (75): the loss was the lease's, not
 * the command's, and a standby that was cut off or stopped must not
 * come back later each time, or a few faults in a row leave every
 * standby backing off while nobody leads. */
#define RESPAWN_STEADY_MS 30000

/* Reap what the last round left to reap (its guard process exits
 * after standing down) and read the self-pipe dry, so that the next
 * wait is not cut short by their SIGCHLD.  Returns a signal read that
 * asks redlock to end (SIGINT, SIGTERM, SIGHUP, SIGQUIT), or 0; others
 * are dropped, as no command runs to take them. */
static int
settle(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return sig_drain();
}

/* Sleep ms, settling as signals and children come, or until a signal
 * asks redlock to end.  Returns 0, or that signal. */
static int
back_off(int64_t ms)
{
	int64_t until = clock_ms() + ms, left;
	struct pollfd p = { .fd = sig_fd(), .events = POLLIN };
	int sig = settle();

	while (sig == 0 && (left = until - clock_ms()) > 0) {
		if (poll(&p, 1, (int)left) > 0)
			sig = settle();
	}
	return sig != 0 ? sig : settle();
}

/* Did this round end because redlock was asked to end?  A signal read
 * while waiting (*die_by > 0 with nothing run) or forwarded to the
 * command, or the terminal's Ctrl-C or Ctrl-\ (*die_by < 0). */
static int
asked_to_end(int ended_before, int die_by)
{
	return sig_end_asked() != ended_before || die_by < 0;
}

/* The standby loop; returns the exit status as run_command() does.
 * systemd hears STOPPING=1 only here, when the standby ends. */
static int
rounds(const struct config *c, const struct lock *l, int *die_by)
{
	int64_t pause = RESPAWN_BACKOFF_MS;

	for (int round = 0;; round++) {
		int ended = sig_end_asked(), code, sig;
		int64_t start = clock_ms();
		/* Each round takes the lock afresh: a fence of 0 after it
		 * says that the round never held it. */
		struct grant g = { .fence = 0 };

		/* --replace takes NAME over once: later rounds are a
		 * standby's. */
		code = run_command(c, l, round == 0 && c->replace,
		    round == 0 ? c->started : 0, &g, die_by);
		if (asked_to_end(ended, *die_by) ||
		    (code > EXIT_SIGNAL_BASE && g.fence == 0 && *die_by > 0))
			return code;
		*die_by = 0;
		if (g.fence > 0 && (code == EXIT_LOST ||
		    clock_ms() - g.granted_at >= RESPAWN_STEADY_MS))
			pause = RESPAWN_BACKOFF_MS;
		log_info("--respawn: round %d ended with status %d after %lld ms; "
		    "campaigning again in %lld ms", round + 1, code,
		    (long long)(clock_ms() - start), (long long)pause);
		monitor_pausing(l, round + 1, code, pause);
		if ((sig = back_off(pause)) != 0) {
			*die_by = sig;
			return EXIT_SIGNAL_BASE + sig;
		}
		pause = pause * 2 > RESPAWN_BACKOFF_MAX_MS ?
		    RESPAWN_BACKOFF_MAX_MS : pause * 2;
	}
}

/* --respawn: the standby loop (rounds()); returns the exit status as
 * run_command() does. */
int
respawn_run(const struct config *c, const struct lock *l, int *die_by)
{
	int code = rounds(c, l, die_by);

	monitor_stopping();
	return code;
}
