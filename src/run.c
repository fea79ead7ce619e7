/*
 * run.c - the run form, as its phases: acquire, the --once-per check,
 * start, supervise, release, and the report with the exit status.
 * Each phase tells the monitor (monitor.c), which alone speaks to the
 * metrics, the run record, the hooks and systemd (doc/DESIGN.md, 7).
 * Once the lock is held nothing exits before it is released.
 */
#include "run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "exec.h"
#include "exit.h"
#include "guard.h"
#include "hold.h"
#include "holder.h"
#include "log.h"
#include "monitor.h"
#include "once.h"
#include "sig.h"
#include "supervise.h"
#include "refused.h"
#include "wait.h"

/* What a release that reached ok servers, fewer than a quorum, did for
 * --once-per: the servers it reached recorded the success, and any one
 * of them is enough for a later run to skip (once.c), so a success that
 * reached one closes its period: at most one a period, whatever else
 * the release missed. */
static const char *
once_words(const struct release *rel, int ok)
{
	if (rel->done_period <= 0)
		return "";
	return ok > 0 ? "; the run's success was recorded: this period of "
	    "--once-per is closed" : "; the run's success was not recorded: "
	    "this period of --once-per stays open";
}

/*
 * Release the lock as soon as the command is done, so that a waiter
 * gets it at once; with --min-hold leave it to expire later instead,
 * unless the lock was lost, the command could not be started (a host
 * without it would hold the others back) or redlock stop or --replace
 * asked for it.  Returns 1 when every server answered and the token
 * held the lock on no majority of them: it was lost while the command
 * ran (broken, or taken over after a server lost the key), before a
 * renewal could tell; else 0.
 * done: a success of --once-per to record with the release (its period,
 * 0: none, and since when the period was found open).  The renewal
 * thread has been stopped, so the connections are ours and nothing can
 * extend the lease behind our back.
 */
static int
finish(const struct run *r, int64_t done_period, int64_t done_since)
{
	const struct config *c = r->cfg;
	const struct lock *l = r->lock;
	const struct grant *g = r->grant;
	struct lock_outcome o = { 0 };
	int64_t keep = r->lost || r->not_run || r->stop_asked ? 0 :
	    c->min_hold - (clock_ms() - g->granted_at);
	struct release rel = { .token = g->token,
	    .keep_ms = keep > 0 ? keep : 0, .brief = r->lost,
	    .done_period = done_period, .done_since = done_since };
	int ok, others;

	/* After a loss the servers may be unreachable: try once, briefly,
	 * in case the key is still ours.  With --lock-delay a loss ends the
	 * lease as an expiry does, so that the delay holds: what the
	 * command set in motion before it was stopped may still land. */
	if (r->lost && l->policy.delay > 0) {
		lock_expire(l, g->token, &others, &o);
		log_info("lock '%s' left to expire: --lock-delay holds it back",
		    c->name);
		return 0;
	}
	ok = lock_release(l, &rel, &others, &o);
	if (ok >= l->quorum && rel.keep_ms > 0)
		log_info("lock '%s' kept %lld ms more (--min-hold)", c->name,
		    (long long)rel.keep_ms);
	else if (ok >= l->quorum)
		log_info("released lock '%s'", c->name);
	else if (r->lost)
		log_info("lock '%s' was lost: nothing to release", c->name);
	if (ok >= l->quorum || r->lost)
		return 0;
	if (o.err[0] == '\0') {
		log_error("lock '%s' was lost while the command ran: %s at "
		    "its release%s", c->name, others > 0 ? "another holder had "
		    "it" : "it was free", once_words(&rel, ok));
		return 1;
	}
	log_error("could not release lock '%s': %s%s", c->name, o.err,
	    once_words(&rel, ok));
	return 0;
}

/* Start the guard, then the command with the lock's environment; on
 * failure report it and return its exit status (126 or 127, or 75 when
 * the lease ran out before the command could start), else 0. */
static int
spawn(const struct config *c, struct run *r)
{
	char *shell_argv[] = { "/bin/sh", "-c", (char *)c->shell, NULL };
	char *const *argv = c->cmd != NULL ? c->cmd : shell_argv;
	char **env = holder_env(r->lock, r->grant, c->pass_env);
	int rc;

	if (env == NULL) {
		log_error("out of memory");
		return EXIT_INTERNAL;
	}
	supervise_guard(r);
	rc = child_spawn(&r->child, argv, env);
	free(env);
	if (rc == 0) {
		guard_command(r->guard_fd, r->child.pid);
		return 0;
	}
	if (r->child.exec_errno == ETIME) {
		r->lost = 1;
		log_error("lock '%s' lost before the command could start "
		    "(redlock was stopped past the lease)", c->name);
		return EXIT_LOST;
	}
	r->not_run = 1;
	log_error("cannot run '%s': %s", argv[0], strerror(r->child.exec_errno));
	return r->child.exec_errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

/* The holder that the run form records (lock_setup()): this redlock,
 * and its command as --label and --store-args say. */
void
run_holder(const struct config *c, struct lock_meta *m)
{
	holder_meta(m, (long)getpid());
	holder_command(m, c->label, c->shell, c->cmd, c->store_args);
}

/* What a waiting run does each round before it sleeps: start the guard
 * if it is not running yet (supervise_guard_early(): its fork is then
 * done by the time a release wakes us), and tell the monitor. */
struct run_wait {
	struct monitor *mon;
	struct run *r;
};

static void
run_waiting(void *ctx, enum lock_result res, const struct lock_outcome *o)
{
	struct run_wait *w = ctx;

	supervise_guard_early(w->r);
	monitor_waiting(w->mon, res, o);
}

/* Start the guard while the first attempt is on its way to the server
 * (conn_exec_meanwhile()): the command it will watch follows the
 * reply, and the guard's start is then off the lock's path. */
static void
run_guard_meanwhile(void *r)
{
	supervise_guard_early(r);
}

/* Acquire: wait for the lock as -w allows, counting from since (struct
 * wait_req), claiming NAME when claim is set (--replace), into r's
 * grant, each round told to run_waiting().  Returns the wait's result,
 * *o what its last attempt learned. */
static enum lock_result
phase_acquire(const struct config *c, const struct lock *l, int claim,
    int64_t since, struct run *r, struct monitor *mon,
    struct lock_outcome *o)
{
	struct run_wait w = { mon, r };
	struct wait_report report = { run_waiting, &w };
	struct grant *g = r->grant;
	enum lock_result res;

	conn_exec_meanwhile(run_guard_meanwhile, r);
	res = wait_acquire(l, &(struct wait_req){ .wait = c->wait,
	    .since = since, .claim = claim, .intr_fd = sig_fd(),
	    .report = &report }, g, o);
	conn_exec_meanwhile(NULL, NULL);
	if (res == LOCK_HELD || res == LOCK_REENTRANT)
		log_info("acquired lock '%s'%s (fence %lld)%s", c->name,
		    l->policy.shared ? " shared" : "", g->fence,
		    res == LOCK_REENTRANT ? ", held by a parent redlock" : "");
	return res;
}

/* --once-per, the lock got (res): when this period had its success,
 * the lock is released and the run skipped as one that found the lock
 * busy (once.c); returns that status, else -1: the command runs, and
 * *since is when the period was found open. */
static int
phase_once(const struct config *c, const struct lock *l,
    const struct grant *g, enum lock_result res, int64_t *since)
{
	return c->once_per > 0 ? once_skip(c, l, g, res == LOCK_HELD, since) :
	    -1;
}

/* Start: the guard (told the lease, or started now) and the command
 * (spawn()), which the monitor hears of before and after.  Returns 0,
 * or the status of a command that could not start. */
static int
phase_start(const struct config *c, struct monitor *mon, struct run *r)
{
	int code;

	monitor_starting(mon);
	code = spawn(c, r);
	monitor_started(mon, code);
	return code;
}

/* Supervise the command until it is done; returns the status that
 * says how it ended, *die_by as run_command() sets it. */
static int
phase_supervise(struct run *r, int *die_by)
{
	int status = supervise(r);

	child_take_terminal(&r->child);
	if (r->lost)
		return EXIT_LOST;
	if (r->timed_out)
		return EXIT_TIMEOUT;
	if (WIFSIGNALED(status))
		*die_by = WTERMSIG(status);
	/* Ctrl-C and Ctrl-\ from the terminal reached only the command's
	 * group: pass them on to ours (see sig_die_by()). */
	if (r->child.foreground && (*die_by == SIGINT || *die_by == SIGQUIT))
		*die_by = -*die_by;
	return child_exit_status(status);
}

/*
 * Release: the command is done (code, die_by), supervision ends, the
 * monitor hears the outcome, the lock is released (finish()) and then
 * the guard stands down.  Returns the run's status: code, or 75 when
 * the release found the lock lost.
 * --once-per: a success (ok, not a command that exited 0 after redlock
 * stop or --replace asked it to) closes the period in which the lock
 * was got (found open at since); the release records it, or for a
 * re-entrant run, whose release is its enclosing redlock's, a script of
 * its own (once.c).
 */
static int
phase_release(struct run *r, struct monitor *mon, int code, int die_by,
    int64_t since)
{
	const struct config *c = r->cfg;
	enum outcome out;
	int succeeded;

	supervise_end(r);
	out = monitor_done(mon, r, code, die_by);
	succeeded = out == OUTCOME_OK && c->once_per > 0;
	/* -c whose shell could not run COMMAND (126, 127) did not start it
	 * either: --min-hold keeps nothing. */
	if (out == OUTCOME_EXEC_FAILED)
		r->not_run = 1;
	if (succeeded && !r->held)
		once_mark(c, r->lock, r->grant, since);
	if (r->held && finish(r, succeeded ? c->once_per : 0, since) &&
	    die_by == 0) {
		/* Lost, as --on-lost ignore would have it (the release
		 * recorded no --once-per success). */
		r->lost = 1;
		code = EXIT_LOST;
		monitor_lost(mon);
	}
	supervise_stand_down(r);
	if (r->held && r->stop_asked)
		lock_notify_stopped(r->lock);
	return code;
}

/*
 * The run form, phase by phase: acquire (claiming NAME when claim is
 * set: --replace; -w counting from wait_since, see struct wait_req), the
 * --once-per check, start, supervise, release,
 * and the report (monitor.c, which each phase tells), into the
 * caller's grant g (fresh: zeroed; a fence of 0 after it returns says
 * that the lock was never held).  Returns the exit status; *die_by is
 * set to the signal that killed the command when redlock should die of
 * it too (it has no status of its own to report), negated when its
 * whole process group should, else 0.
 */
int
run_command(const struct config *c, const struct lock *l, int claim,
    int64_t wait_since, struct grant *g, int *die_by)
{
	struct lock_outcome o = { 0 };
	enum lock_result res;
	struct monitor mon;
	struct run r;
	int64_t since = 0;
	int code;

	*die_by = 0;
	monitor_begin(&mon, c, l, g, wait_since);
	supervise_init(&r, c, l, g);
	res = phase_acquire(c, l, claim, wait_since, &r, &mon, &o);
	if (res != LOCK_HELD && res != LOCK_REENTRANT) {
		supervise_stand_down(&r);
		return monitor_refused(&mon, res,
		    refused_report(c, l, res, &o, die_by), die_by);
	}
	r.held = res == LOCK_HELD;
	mon.inner = !r.held;
	if ((code = phase_once(c, l, g, res, &since)) >= 0) {
		supervise_stand_down(&r);
		return monitor_done_before(&mon, code, die_by);
	}
	code = phase_start(c, &mon, &r);
	if (code == 0)
		code = phase_supervise(&r, die_by);
	code = phase_release(&r, &mon, code, *die_by, since);
	return monitor_end(&mon, code, die_by);
}
