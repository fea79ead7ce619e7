/*
 * supervise.c - the command runs; redlock watches five kinds of
 * deadline, each in a function of its own that acts when it is due and
 * returns when it next needs looking at:
 *
 *   the renewal    the thread started at the first ttl/3
 *   the lease      loss reported by the thread, or no renewal in time
 *   --max-time     the command ran too long (exit 124)
 *   the stop       a renewal brought a request from redlock stop
 *   the kill       SIGKILL once --kill-after has passed since SIGTERM
 *
 * and job control: a command stopped by the terminal (Ctrl-Z) stops
 * redlock too, and runs again only once the lock is known to be ours.
 */
#include "supervise.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "guard.h"
#include "lease.h"
#include "log.h"
#include "sig.h"

/* How often to look for the rest of the tree once the command itself
 * has exited (its background processes hold the lock, as with flock). */
#define TREE_POLL_MS 100

/* The longest poll: deadlines are looked at least this often. */
#define IDLE_MS 60000

/* How long a run whose command died of SIGKILL waits for the guard's
 * exit status, to tell whether the guard killed it (guard_fired()). */
#define GUARD_FIRED_WAIT_MS 50

/* Set r up for a run of lock l into the caller's grant g, before its
 * wait (the guard may start during it); run.c sets r->held once the
 * lock is got. */
void
supervise_init(struct run *r, const struct config *c, const struct lock *l,
    struct grant *g)
{
	memset(r, 0, sizeof(*r));
	r->cfg = c;
	r->lock = l;
	r->grant = g;
	r->guard_fd = r->lease_fd = -1;
}

/* Begin stopping the command: now with SIGKILL, or SIGTERM then
 * SIGKILL at `by` at the latest. */
static void
stop_command(struct run *r, int hard, int64_t by)
{
	int64_t now = clock_ms();

	if (hard || by <= now) {
		child_kill_tree(&r->child);
		r->kill_at = now;
	} else if (!r->stopping) {
		child_signal(&r->child, SIGTERM);
		child_signal(&r->child, SIGCONT);
		r->kill_at = by;
	} else if (by < r->kill_at)
		r->kill_at = by;
	r->stopping = 1;
}

/* The lease is in doubt or gone: act as --on-lost says. */
static void
lease_lost(struct run *r, const char *why, int64_t kill_by)
{
	const struct config *c = r->cfg;

	if (r->lost)
		return;
	r->lost = 1;
	if (c->on_lost == ON_LOST_IGNORE) {
		log_error("lock '%s' lost (%s); --on-lost ignore: "
		    "the command goes on", c->name, why);
		return;
	}
	log_error("lock '%s' lost (%s); stopping the command", c->name, why);
	stop_command(r, c->on_lost == ON_LOST_KILL, kill_by);
}

/* When the lease surely ends, from the last confirmed renewal. */
static int64_t
lease_ends(struct run *r)
{
	return r->renew != NULL ? renew_lease_end(r->renew) :
	    lock_lease_end(r->lock, r->grant->sent_at);
}

_Static_assert(LOCK_TOKEN_LEN < GUARD_TOKEN_MAX,
    "a token fits in the guard's GUARD_MARK message");

/*
 * The run waits for the lock: start the guard now, unless it runs
 * already, with no lease to enforce yet, so that its fork is done by
 * the time a release wakes us (the next command starts that much
 * sooner).  supervise_guard() tells it the lease and the token of the
 * attempt that got the lock.  Called by run.c each round of the wait,
 * before any thread exists.
 */
void
supervise_guard_early(struct run *r)
{
	if (r->guard_fd >= 0)
		return;
	if (guard_start(&r->child.guard, &r->guard_fd, NULL,
	    lease_safety(r->cfg->ttl), GUARD_NO_LEASE) < 0)
		r->guard_fd = -1;	/* supervise_guard() tries again */
}

/*
 * Start the guard before the command exists (a fork must also come
 * before any thread), or tell the one started while we waited what it
 * enforces, so that no moment of the command's life is unguarded: the
 * guard knows the lease before the command is started, and the command
 * is exec'd only while the guard's deadline is ahead (child.exec_by).
 * The command's pid follows with guard_command().
 */
void
supervise_guard(struct run *r)
{
	const struct config *c = r->cfg;
	int enforce = r->held && c->on_lost != ON_LOST_IGNORE;
	int64_t end = enforce ? lease_ends(r) : GUARD_NO_LEASE;

	if (r->guard_fd >= 0) {
		/* Each attempt had a token of its own; re-entrant, the
		 * token is an enclosing redlock's. */
		guard_mark(r->guard_fd, r->held ? r->grant->token : NULL, end);
	} else if (guard_start(&r->child.guard, &r->guard_fd,
	    r->held ? r->grant->token : NULL, lease_safety(c->ttl), end) < 0) {
		log_error("cannot start the guard process: %s", strerror(errno));
		return;
	}
	r->lease_fd = enforce ? r->guard_fd : -1;
	if (enforce)
		r->child.exec_by = end - lease_safety(c->ttl);
}

/*
 * The guard died while the command runs (SIGKILL, the out-of-memory
 * killer; it ignores the rest): another takes its place at once, so that
 * a redlock stopped or killed after that still cannot leave the command
 * running past the lease.  Not once the lease it enforced has ended (it
 * killed the tree and left), nor again after a guard could not start.
 */
static void
guard_replace(struct run *r)
{
	const struct config *c = r->cfg;
	int64_t end = r->lease_fd >= 0 ? lease_ends(r) : GUARD_NO_LEASE;

	if (r->lost || (end != GUARD_NO_LEASE &&
	    clock_ms() >= end - lease_safety(c->ttl)))
		return;
	if (guard_again(&r->child.guard, r->guard_fd, r->child.pid,
	    r->held ? r->grant->token : NULL, lease_safety(c->ttl), end) < 0) {
		r->child.guard = -1;
		log_error("cannot start the guard process again: %s",
		    strerror(errno));
	} else
		log_info("the guard process was gone; started another");
}

/* Start the renewal thread at the first ttl/3: commands shorter than
 * that never need it. */
static int64_t
due_renewal(struct run *r, int64_t now)
{
	if (r->renew_at == 0)
		return INT64_MAX;
	if (now < r->renew_at)
		return r->renew_at;
	r->renew_at = 0;
	r->renew = renew_start(r->lock, r->grant, sig_notify_fd(),
	    r->lease_fd);
	if (r->renew == NULL)
		log_error("cannot start the renewal thread: %s", strerror(errno));
	return INT64_MAX;
}

/*
 * The lease: a loss the thread reported, or no renewal in time to stop
 * the command before the key can expire (SIGTERM at term_at, SIGKILL
 * at kill_at, which leaves lease_safety() for the kernel).
 */
static int64_t
due_lease(struct run *r, int64_t now)
{
	const struct config *c = r->cfg;
	int64_t kill_at, term_at, grace = config_kill_after(c);
	char why[256] = "", m[320];

	if (!r->held || (r->lost && r->stopping))
		return INT64_MAX;
	kill_at = lease_ends(r) - lease_safety(c->ttl);
	term_at = kill_at - grace;
	if (r->renew != NULL && renew_lost(r->renew, why, sizeof(why))) {
		lease_lost(r, why, now + grace < kill_at ? now + grace : kill_at);
	} else if (now >= term_at && !r->lost) {
		snprintf(m, sizeof(m), "could not renew in time%s%s",
		    why[0] ? ": " : "", why);
		lease_lost(r, m, kill_at);
	} else if (!r->lost)
		return term_at;
	if (r->lost && r->stopping && kill_at < r->kill_at)
		r->kill_at = kill_at;
	return INT64_MAX;
}

/* --max-time: stop the command once it has run that long. */
static int64_t
due_max_time(struct run *r, int64_t now)
{
	const struct config *c = r->cfg;
	int64_t end = r->started + c->max_time;

	if (c->max_time <= 0 || r->timed_out)
		return INT64_MAX;
	if (now < end)
		return end;
	r->timed_out = 1;
	log_error("command ran for --max-time; stopping it");
	stop_command(r, 0, now + config_kill_after(c));
	return INT64_MAX;
}

/* Stop the command as SIGTERM to redlock would (SIGTERM, then SIGKILL
 * after --kill-after): an operator ran redlock stop.  Its exit status
 * stays ours to report. */
static void
asked_to_stop(struct run *r, int64_t now)
{
	const struct config *c = r->cfg;

	if (r->stop_asked)
		return;
	r->stop_asked = 1;
	log_error("lock '%s': redlock stop asked its holder to stop; "
	    "stopping the command", c->name);
	stop_command(r, 0, now + config_kill_after(c));
}

/* redlock stop: a renewal brought the request. */
static int64_t
due_stop(struct run *r, int64_t now)
{
	if (r->renew != NULL && !r->stop_asked && renew_stop_asked(r->renew))
		asked_to_stop(r, now);
	return INT64_MAX;
}

/* SIGKILL once the grace after SIGTERM has passed. */
static int64_t
due_kill(struct run *r, int64_t now)
{
	if (!r->stopping || r->kill_at == 0)
		return INT64_MAX;
	if (now < r->kill_at)
		return r->kill_at;
	child_kill_tree(&r->child);
	r->kill_at = 0;
	return INT64_MAX;
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/*
 * Act on every deadline that is due and return when to look again.
 * Called first thing after every wake-up, so that a redlock that was
 * paused past its lease stops the command before anything else.
 */
static int64_t
check_deadlines(struct run *r)
{
	int64_t now = clock_ms(), next = now + IDLE_MS;

	next = min64(next, due_renewal(r, now));
	next = min64(next, due_lease(r, now));
	next = min64(next, due_max_time(r, now));
	next = min64(next, due_stop(r, now));
	return min64(next, due_kill(r, now));
}

/* The job was continued: before the command may run again, make sure
 * the lock is ours (renewed, or taken again with the same token). */
static void
resume(struct run *r)
{
	struct lock_outcome o = { 0 };
	int64_t last;

	guard_lease(r->guard_fd, GUARD_NO_LEASE);
	/* A request that the thread saw is not lost with the thread. */
	if (r->renew != NULL && renew_stop_asked(r->renew))
		asked_to_stop(r, clock_ms());
	last = renew_stop(r->renew);
	r->renew = NULL;
	/* From here the thread runs again, or the lock is lost: either way
	 * a first renewal still due must not start a second thread on the
	 * same connections. */
	r->renew_at = 0;
	if (last > r->grant->sent_at)
		r->grant->sent_at = last;
	if (r->held && !r->lost) {
		enum lock_result res = lock_retake(r->lock, r->grant, &o);

		if (res == LOCK_BUSY ||
		    (res != LOCK_HELD && clock_ms() >= lease_ends(r))) {
			lease_lost(r, o.err[0] ? o.err : "taken while suspended",
			    clock_ms());
			child_kill_tree(&r->child);
			return;
		}
		if (o.stop)
			asked_to_stop(r, clock_ms());
		r->renew = renew_start(r->lock, r->grant, sig_notify_fd(),
		    r->lease_fd);
		guard_lease(r->lease_fd, lease_ends(r));
	}
	child_give_terminal(&r->child);
	child_signal(&r->child, SIGCONT);
}

/*
 * The command was stopped by job control (Ctrl-Z, or reading or
 * writing the terminal from the background): stop the rest of its tree,
 * hand the terminal back, and stop redlock by the same signal so the
 * shell shows the job stopped.  The lease may lapse meanwhile; the
 * guard does not enforce it while everything is stopped.
 */
static void
suspend(struct run *r, int status)
{
	int sig = WSTOPSIG(status);

	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		return;
	child_signal(&r->child, SIGSTOP);
	/* The guard wakes us if SIGTERM or SIGHUP comes while we are
	 * stopped. */
	guard_lease(r->guard_fd, GUARD_SUSPENDED);
	child_take_terminal(&r->child);
	sig_stop_self(sig);
	resume(r);
}

/* Forward the signals that arrived; SIGHUP also continues a stopped
 * command so that it can act on it.  SIGTERM stops the command as
 * redlock stop does (stop_command(): SIGTERM and SIGCONT now, SIGKILL
 * for what is left --kill-after later; a daemon that ignores SIGTERM
 * would otherwise keep the lock). */
static void
forward_signals(struct run *r)
{
	int sig;

	while ((sig = sig_next()) >= 0) {
		if (sig == SIGCHLD || sig == SIG_EVENT)
			continue;
		if (sig == SIGTERM) {
			stop_command(r, 0, clock_ms() + config_kill_after(r->cfg));
			continue;
		}
		child_signal(&r->child, sig);
		if (sig == SIGHUP)
			child_signal(&r->child, SIGCONT);
	}
}

/* Did the guard enforce a lease end (GUARD_FIRED_EXIT)?  One that did
 * exits as soon as the tree it killed is gone, which the caller saw:
 * it is reaped here, waited for GUARD_FIRED_WAIT_MS at most. */
static int
guard_fired(struct child *ch)
{
	const struct timespec ms = { 0, 1000000 };
	int64_t end = clock_ms() + GUARD_FIRED_WAIT_MS;
	int st;

	while (ch->guard > 0) {
		pid_t p = waitpid(ch->guard, &st, WNOHANG);

		if (p == ch->guard) {
			ch->guard = 0;
			ch->guard_status = st;
		} else if (p < 0 || clock_ms() >= end)
			return 0;
		else
			nanosleep(&ms, NULL);
	}
	return WIFEXITED(ch->guard_status) &&
	    WEXITSTATUS(ch->guard_status) == GUARD_FIRED_EXIT;
}

/*
 * Wait for the command and the rest of its tree to end, forwarding
 * signals and enforcing the lease and --max-time.  Returns the
 * command's wait status.
 */
int
supervise(struct run *r)
{
	struct pollfd p = { .fd = sig_fd(), .events = POLLIN };
	int status = 0, done = 0;

	r->started = clock_ms();
	r->renew_at = r->held ? r->grant->sent_at +
	    lease_renew_every(r->lock->ttl) : 0;
	sig_catch_stops(1);
	for (;;) {
		int64_t next = check_deadlines(r), left = next - clock_ms();
		int st;
		enum child_event ev = child_reap(&r->child, &st);

		if (ev == CHILD_EXITED) {
			status = st;
			done = 1;
			/* The lock is no longer ours: whatever the command
			 * left running is stopped too. */
			if (r->stopping)
				child_kill_tree(&r->child);
		} else if (ev == CHILD_STOPPED && !done)
			suspend(r, st);
		if (r->guard_fd >= 0 && r->child.guard == 0 && !done)
			guard_replace(r);
		if (done && !child_tree_alive(&r->child))
			break;
		if (done && left > TREE_POLL_MS)
			left = TREE_POLL_MS;
		if (poll(&p, 1, left < 0 ? 0 : left > IDLE_MS ? IDLE_MS :
		    (int)left) < 0 && errno != EINTR)
			break;
		forward_signals(r);
	}
	sig_catch_stops(0);
	/* Killed by the guard at the lease's end, the run frozen past it
	 * (SIGSTOP to the whole tree, a paused machine) and a renewal back
	 * in time for main, not for the guard: lost, as lease_lost() says,
	 * not a command that died of SIGKILL. */
	if (done && r->held && !r->lost && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGKILL && guard_fired(&r->child)) {
		log_error("lock '%s' lost (its lease ran out while the run was "
		    "stopped); the guard stopped the command", r->cfg->name);
		r->lost = 1;
	}
	return status;
}

/* After the command: stop renewing.  The connections are main's
 * again. */
void
supervise_end(struct run *r)
{
	if (r->renew != NULL)
		renew_stop(r->renew);
	r->renew = NULL;
}

/*
 * Stand the guard down, once the lock is released (or was never got):
 * not before, so that its wake-up does not delay the release that a
 * waiter is waiting for, and not later, since a guard whose lease ran
 * out would kill every child of ours, the --on-exit runner too.
 */
void
supervise_stand_down(struct run *r)
{
	guard_stop(&r->guard_fd);
	guard_reap(r->child.guard);	/* sanitizer builds only: guard.c */
}
