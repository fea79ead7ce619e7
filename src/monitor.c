/*
 * monitor.c - every outcome seen (redlock-monitoring(7)): the run form
 * (run.c) calls in here once a phase, and this file tells --metrics-dir,
 * --record, --on-start, --on-exit and systemd (notify.c, when
 * NOTIFY_SOCKET is set) what became of the run.  None of them changes
 * the exit status (except --skip-alert, which exists to), or comes
 * between the command and its lock: the "running" metrics are written
 * once the command runs, the on-start hook runs beside it, and the end's
 * metrics, record and on-exit hook come after the release.  Without
 * these options (and NOTIFY_SOCKET) nothing here reaches Redis or the
 * disk.
 *
 * The phases, in the order run.c calls them: monitor_begin(), then
 * monitor_waiting() from the wait (wait.c) each round; either the end
 * of a run that did not get to run the command (monitor_refused(),
 * monitor_done_before()), or monitor_starting() and monitor_started()
 * around the command's start, monitor_done() once it is done and
 * before the release, and monitor_end() after it.  --respawn's pauses
 * and end are monitor_pausing() and monitor_stopping().
 */
#include "monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "fmt.h"
#include "clock.h"
#include "exit.h"
#include "hooks.h"
#include "inspect.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "outcome.h"
#include "print.h"
#include "record.h"
#include "sig.h"

/* How long a metrics write waits for the other writers of the
 * directory on this host.  While the command starts: briefly, since a
 * renewal may soon be due (a start that waited longer is left out); at
 * the end, after the release, long enough for fifty writers on a loaded
 * machine, since a write that goes ahead without the lock may undo
 * another's count. */
#define MONITOR_START_PATIENCE_MS 10
#define MONITOR_END_PATIENCE_MS 5000

/* A run form invocation begins, for NAME's lock l; its wait counts from
 * since (clock_ms(); 0: now), as -w does (struct wait_req). */
void
monitor_begin(struct monitor *m, const struct config *c, const struct lock *l,
    const struct grant *g, int64_t since)
{
	uuid_t u;

	notify_init();
	memset(m, 0, sizeof(*m));
	m->cfg = c;
	m->lock = l;
	m->grant = g;
	m->begin = since > 0 ? since : clock_ms();
	m->start_fd = -1;
	if (c->on_start != NULL || c->on_exit != NULL) {
		uuid_generate_random(u);
		fmt_uuid(u, m->run_id);
	}
}

/* Write the metrics event e, waiting at most patience ms for the
 * directory, and with ends no longer than a signal that asks redlock to
 * end; a failure is one warning a run. */
static void
metrics(struct monitor *m, const struct metrics_event *e, int64_t patience,
    int ends)
{
	const struct metrics_intr in = { sig_fd(), sig_keep_end };
	const struct config *c = m->cfg;
	char err[256];

	if (c->metrics_dir == NULL || m->inner ||
	    metrics_write(c, e, patience, ends ? &in : NULL, err,
	    sizeof(err)) == 0 ||
	    m->warned)
		return;
	m->warned = 1;
	log_error("cannot write the metrics of lock '%s' to '%s': %s",
	    c->name, c->metrics_dir, err);
}

/* Run hook cmd for event ("start" or "exit"); outcome NULL at start.
 * Returns the on-start runner's pipe, or -1.  At exit, m->end_signal is
 * the signal that asked redlock to end before the hook or while it ran
 * (hooks_exit()), or 0. */
static int
hook(struct monitor *m, const char *cmd, const char *outcome, int code)
{
	const struct config *c = m->cfg;
	int64_t now = clock_ms();
	struct hook_info h = {
		.event = outcome ? "exit" : "start", .name = c->name,
		.host = m->lock->meta.host, .run_id = m->run_id,
		.fence = m->acquired ? m->grant->fence : 0, .outcome = outcome,
		.exit_status = code,
		.wait_ms = (m->acquired ? m->acquired : now) - m->begin,
		.run_ms = m->started ? now - m->started : 0,
	};
	char **env = hooks_env(&h);
	int fd = -1;

	if (env == NULL) {
		log_error("cannot run the --on-%s hook: out of memory", h.event);
		return -1;
	}
	if (outcome == NULL)
		fd = hooks_start(cmd, env, c->hook_timeout);
	else
		m->end_signal = hooks_exit(cmd, env, c->hook_timeout,
		    m->end_signal);
	free(env);
	return fd;
}

/*
 * One round of the wait (wait.c's struct wait_report, m a struct
 * monitor): the attempt's result res and what it learned, o.  systemd
 * hears who holds the lock, or why the wait goes on.
 */
void
monitor_waiting(void *m, enum lock_result res, const struct lock_outcome *o)
{
	notify_waiting(((struct monitor *)m)->lock, res, o);
}

/*
 * The lock is held and the command about to be started: the on-start
 * hook goes off just before it (see hooks.c), and its start and
 * duration count from here, before the fork, so that a duration is
 * never shorter than the command ran (a child may run a while before
 * its parent is back from the fork on a loaded machine).
 */
void
monitor_starting(struct monitor *m)
{
	m->acquired = clock_ms();
	if (m->cfg->on_start != NULL)
		m->start_fd = hook(m, m->cfg->on_start, NULL, 0);
	m->started = clock_ms();
	m->start_wall = clock_wall_ms();
}

/* The command was started (code 0): the "running" metrics, and systemd
 * hears that the unit is ready; or it could not be (code, its status). */
void
monitor_started(struct monitor *m, int code)
{
	struct metrics_event e = { .outcome = -1 };

	if (code != 0) {
		m->started = 0;
		m->start_wall = 0;
		return;
	}
	e.start_ms = m->start_wall;
	metrics(m, &e, MONITOR_START_PATIENCE_MS, 0);
	notify_running(m->lock);
}

/*
 * The end of every invocation: metrics, the run record, the hooks.
 * Returns the exit status of the run form: code, unless a signal asked
 * redlock to end while it wrote the metrics or the record or waited for
 * a hook (the lock already released): then 128+N, *die_by being that
 * signal, as for a signal while it waits for the lock.
 */
static int
ended(struct monitor *m, enum outcome o, int code, int *die_by)
{
	const struct config *c = m->cfg;
	int64_t now = clock_ms(), wall = clock_wall_ms();
	struct metrics_event e = {
		.outcome = (int)o, .exit_status = code, .ran = m->started > 0,
		.start_ms = m->start_wall, .end_ms = wall,
		.run_ms = m->started ? now - m->started : 0,
		.wait_ms = (m->acquired ? m->acquired : now) - m->begin,
	};
	struct record_run run = { o, code, m->started ? e.run_ms : -1,
	    e.wait_ms, m->grant->fence };
	char err[384];

	metrics(m, &e, MONITOR_END_PATIENCE_MS, 1);
	if (c->record && m->acquired && !m->inner &&
	    record_run(m->lock, &run, err, sizeof(err)) < 0)
		log_error("cannot keep the run record of lock '%s': %s",
		    c->name, err);
	/* Without an on-start hook there is no runner to wait for (and
	 * hooks.c stays out of a plain run's memory). */
	m->end_signal = m->start_fd < 0 ? 0 :
	    hooks_wait(&m->start_fd, c->hook_timeout);
	if (c->on_exit != NULL)
		hook(m, c->on_exit, outcome_word(o), code);
	/* One that came while the metrics or the record were written. */
	if (m->end_signal == 0)
		m->end_signal = sig_drain();
	if (m->end_signal == 0)
		return code;
	*die_by = m->end_signal;
	return EXIT_SIGNAL_BASE + m->end_signal;
}

/* --skip-alert: the alert, naming who holds NAME (h): the exclusive
 * holder, or the earliest of the shared ones; for a free NAME, what
 * holds it back, as status says it (a lock-delay, a --replace claim). */
static void
skip_alert(const struct config *c, const struct lock *l, long long n,
    const struct record_holder *h)
{
	char user[128], host[512], since[32], ago[32], others[64] = "";
	char why[128];

	if (h->state != 1 && (h->state != 3 || h->start_ms == 0)) {
		log_alert("lock '%s' was busy %lld times in a row (%s)", c->name,
		    n, h->state == 3 ? "held shared" : h->state == 2 ?
		    "held by another client" :
		    inspect_held_back(l, why, sizeof(why)) ? why : "free now");
		return;
	}
	if (h->state == 3 && h->count > 1)
		snprintf(others, sizeof(others), ", and %lld other holder%s",
		    h->count - 1, h->count == 2 ? "" : "s");
	print_time(h->start_ms, since, sizeof(since));
	record_ago(clock_wall_ms() - h->start_ms, ago, sizeof(ago));
	log_alert("lock '%s' was busy %lld times in a row: held%s by %s@%s "
	    "pid %ld since %s (%s ago)%s", c->name, n,
	    h->state == 3 ? " shared" : "",
	    print_escape(h->user, user, sizeof(user)),
	    print_escape(h->host, host, sizeof(host)), h->pid, since, ago,
	    others);
}

/*
 * The lock was not obtained (res), and code is the status that says so.
 * With --record a busy or timed-out attempt is counted, and with
 * --skip-alert N the Nth in a row (and every later one until a run)
 * exits 1, naming the holder.  Returns the exit status (see ended()).
 */
int
monitor_refused(struct monitor *m, enum lock_result res, int code,
    int *die_by)
{
	const struct config *c = m->cfg;
	struct outcome_facts f = { .res = res, .wait = c->wait, .code = code };
	enum outcome o = outcome_of(&f);
	struct record_holder h;
	char err[384];
	long long n;

	if (c->record && outcome_skipped(o)) {
		n = record_skip(m->lock, o, &h, err, sizeof(err));
		if (n < 0)
			log_error("cannot keep the run record of lock '%s': %s",
			    c->name, err);
		else if (c->skip_alert > 0 && n >= c->skip_alert) {
			skip_alert(c, m->lock, n, &h);
			code = EXIT_NOT_HELD;
		}
	}
	return ended(m, o, code, die_by);
}

/*
 * --once-per: the lock was free but this period had its success, so the
 * command was skipped with the conflict status (code).  Its outcome is
 * busy, as the status says, whatever -w was; it is no attempt that
 * found the lock taken, so --record keeps nothing of it and
 * --skip-alert does not count it.  Returns the exit status (see
 * ended()).
 */
int
monitor_done_before(struct monitor *m, int code, int *die_by)
{
	return ended(m, OUTCOME_BUSY, code, die_by);
}

/*
 * The command is done, and the lock not yet released (r, code and
 * die_by as run_command() has them).  Returns the run's outcome: the
 * one word that the metrics, the record, the hooks and --once-per go
 * by, so that only ok is a success.  systemd hears that the unit is
 * stopping, before the release, unless this is a --respawn standby's
 * round: its unit stops when the standby does (monitor_stopping()).
 */
enum outcome
monitor_done(struct monitor *m, const struct run *r, int code, int die_by)
{
	struct outcome_facts f = {
		.acquired = 1, .spawned = m->started > 0, .lost = r->lost,
		.timed_out = r->timed_out, .stopped = r->stop_asked,
		.signaled = die_by != 0, .shell = m->cfg->shell != NULL,
		.code = code,
	};

	m->outcome = outcome_of(&f);
	if (!m->lock->policy.standby)
		notify_stopping();
	return m->outcome;
}

/* The release found that the lock was lost while the command ran,
 * after monitor_done() (finish() in run.c): the outcome is lost. */
void
monitor_lost(struct monitor *m)
{
	m->outcome = OUTCOME_LOST;
}

/* The lock is released after the run monitor_done() told of, whose
 * status is code.  Returns the exit status (see ended()). */
int
monitor_end(struct monitor *m, int code, int *die_by)
{
	return ended(m, m->outcome, code, die_by);
}

/* A --respawn round ended with status code: the standby pauses for
 * pause_ms before it campaigns again (round counts from 1). */
void
monitor_pausing(const struct lock *l, int round, int code, int64_t pause_ms)
{
	notify_pausing(l, round, code, pause_ms);
}

/* A --respawn standby ends: systemd hears that its unit is stopping. */
void
monitor_stopping(void)
{
	notify_stopping();
}
