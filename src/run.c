/*
 * run.c - the run form: acquire, spawn, supervise, release, and the
 * exit status.  Once the lock is held nothing exits before it is
 * released.
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
#include "exit.h"
#include "guard.h"
#include "hold.h"
#include "holder.h"
#include "log.h"
#include "monitor.h"
#include "notify.h"
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
once_words(const struct lock *l, int ok)
{
	if (l->done_period <= 0)
		return "";
	return ok > 0 ? "; the run's success was recorded: this period of "
	    "--once-per is closed" : "; the run's success was not recorded: "
	    "this period of --once-per stays open";
}

/*
 * Release the lock as soon as the command is done, so that a waiter
 * gets it at once; with --min-hold leave it to expire later instead.
 * The renewal thread has been stopped, so the connections are ours and
 * nothing can extend the lease behind our back.
 */
static void
finish(const struct run *r)
{
	const struct config *c = r->cfg;
	struct lock *l = r->lock;
	struct lock_outcome o = { 0 };
	int64_t keep = r->lost ? 0 : c->min_hold - (clock_ms() - l->granted_at);
	int ok, others;

	/* After a loss the servers may be unreachable: try once, briefly,
	 * in case the key is still ours.  With --lock-delay a loss ends the
	 * lease as an expiry does, so that the delay holds: what the
	 * command set in motion before it was stopped may still land. */
	if (r->lost && l->delay > 0) {
		lock_expire(l, l->token, &others, &o);
		log_info("lock '%s' left to expire: --lock-delay holds it back",
		    c->name);
		return;
	}
	ok = lock_release(l, l->token, keep > 0 ? keep : 0, r->lost, &others,
	    &o);
	if (ok < l->quorum && !r->lost)
		log_error("could not release lock '%s'%s%s%s", c->name,
		    o.err[0] ? ": " : "", o.err, once_words(l, ok));
	else
		log_info("released lock '%s'", c->name);
}

/* Start the guard, then the command with the lock's environment; on
 * failure report it and return its exit status (126 or 127, or 75 when
 * the lease ran out before the command could start), else 0. */
static int
spawn(const struct config *c, struct run *r)
{
	char *shell_argv[] = { "/bin/sh", "-c", (char *)c->shell, NULL };
	char *const *argv = c->cmd != NULL ? c->cmd : shell_argv;
	char **env = holder_env(r->lock);
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
	log_error("cannot run '%s': %s", argv[0], strerror(r->child.exec_errno));
	return r->child.exec_errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

/*
 * The run form.  Returns the exit status; *die_by is set to the signal
 * that killed the command when redlock should die of it too (it has no
 * status of its own to report), negated when its whole process group
 * should, else 0.
 */
int
run_command(const struct config *c, struct lock *l, int *die_by)
{
	struct lock_outcome o = { 0 };
	enum lock_result res;
	struct monitor mon;
	struct run r;
	/* A run that waits starts its guard meanwhile (supervise.c). */
	struct wait_hook hook = { supervise_guard_early, &r };
	int status, code;

	*die_by = 0;
	notify_init();
	monitor_begin(&mon, c, l);
	holder_meta(&l->meta, (long)getpid());
	holder_command(&l->meta, c->label, c->shell, c->cmd, c->store_args);
	supervise_init(&r, c, l, 0);
	res = wait_acquire(l, c->wait, sig_fd(), &hook, &o);
	if (res != LOCK_HELD && res != LOCK_REENTRANT) {
		supervise_stand_down(&r);
		return monitor_status(&mon, monitor_refused(&mon, res,
		    refused_report(c, l, res, &o, die_by)), die_by);
	}
	r.held = res == LOCK_HELD;
	log_info("acquired lock '%s'%s (fence %lld)%s", c->name,
	    l->shared ? " shared" : "", l->fence,
	    res == LOCK_REENTRANT ? ", held by a parent redlock" : "");
	/* --once-per: this period had its success; the run is skipped as
	 * one that found the lock busy. */
	if (c->once_per > 0 && (code = once_skip(c, l, res == LOCK_HELD)) >= 0) {
		supervise_stand_down(&r);
		return monitor_status(&mon, monitor_done_before(&mon, code),
		    die_by);
	}
	monitor_acquired(&mon);
	monitor_starting(&mon);
	code = spawn(c, &r);
	monitor_started(&mon, code);
	if (code == 0) {
		notify_running(l);
		status = supervise(&r);
		child_take_terminal(&r.child);
		code = r.lost ? EXIT_LOST : r.timed_out ? EXIT_TIMEOUT :
		    child_exit_status(status);
		if (!r.lost && !r.timed_out && WIFSIGNALED(status))
			*die_by = WTERMSIG(status);
		/* Ctrl-C and Ctrl-\ from the terminal reached only the
		 * command's group: pass them on to ours (see sig_die_by()). */
		if (r.child.foreground && (*die_by == SIGINT || *die_by == SIGQUIT))
			*die_by = -*die_by;
	}
	supervise_end(&r);
	/* --once-per: a success (ok, not a command that exited 0 after
	 * redlock stop or --replace asked it to) closes the period in which
	 * the lock was got; the release records it, or for a re-entrant run,
	 * whose release is its enclosing redlock's, a script of its own
	 * (once.c). */
	if (c->once_per > 0 &&
	    monitor_outcome(&mon, &r, code, *die_by) == OUTCOME_OK) {
		if (r.held)
			l->done_period = c->once_per;
		else
			once_mark(c, l);
	}
	/* A standby's unit stops when the standby does (respawn.c). */
	if (!l->standby)
		notify_stopping();
	if (r.held)
		finish(&r);
	supervise_stand_down(&r);
	l->done_period = 0;
	if (r.held && r.stop_asked)
		lock_notify_stopped(l);
	return monitor_status(&mon, monitor_end(&mon, &r, code, *die_by),
	    die_by);
}
