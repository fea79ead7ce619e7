/*
 * redlock - run a command while holding a named lock kept in Redis.
 *
 * main() is the table of contents: parse, connect, acquire, spawn,
 * supervise, release, map the status.  Once the lock is held only this
 * file decides to exit, so the lock is always released first.
 *
 * Exit status: the command's own (128+N if killed by signal N); 128+N
 * if redlock was stopped by signal N while waiting; -E (default 1) when
 * the lock was not obtained; 64 usage; 69 Redis unavailable; 70
 * internal error; 75 lock lost; 124 --max-time; 126/127 the command
 * could not be run.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "config.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "renew.h"
#include "tls.h"
#include "verbs.h"

#ifndef REDLOCK_VERSION
#define REDLOCK_VERSION "0.1.0"
#endif

extern char **environ;

static const char usage_text[] =
"Usage: redlock [OPTIONS] NAME COMMAND [ARG...]\n"
"       redlock [OPTIONS] NAME -c SHELL-COMMAND\n"
"       redlock run [OPTIONS] NAME COMMAND [ARG...]\n"
"       redlock acquire [OPTIONS] NAME\n"
"       redlock release [OPTIONS] NAME TOKEN\n"
"       redlock extend [OPTIONS] NAME TOKEN\n"
"       redlock status [OPTIONS] NAME\n"
"       redlock list [OPTIONS] [PATTERN]\n"
"       redlock break [OPTIONS] NAME\n"
"       redlock --help | --version\n"
"\n"
"Run a command while holding a named lock kept in Redis.\n"
"\n"
"Options:\n"
"  -u, --url URL                Redis server; repeat for a quorum of servers\n"
"  -t, --ttl DURATION           lock time-to-live, renewed every ttl/3 (30s)\n"
"  -n, --nonblock               fail at once if the lock is held\n"
"  -w, --wait, --timeout DURATION\n"
"                               give up after waiting this long; 0 is -n\n"
"  -E, --conflict-exit-code N   exit status when the lock is not obtained (1)\n"
"  -c, --command STRING         run STRING with /bin/sh -c\n"
"  -p, --prefix STRING          key prefix (\"redlock:\")\n"
"      --on-lost ACTION         when the lock is lost: term, kill or ignore (term)\n"
"      --kill-after DURATION    grace between SIGTERM and SIGKILL\n"
"      --min-hold DURATION      keep the lock at least this long after acquiring\n"
"      --max-time DURATION      stop the command after this long and exit 124\n"
"      --env                    acquire: print shell assignments, not the token\n"
"      --json                   status, list: print JSON objects\n"
"      --fence                  break: also remove the lock's fencing counter\n"
"      --tls                    TLS to the redis:// servers too (as rediss://)\n"
"      --cacert FILE            trust the CA certificates in FILE\n"
"      --cacertdir DIR          trust the CA certificates in DIR\n"
"      --cert FILE              client certificate (mutual TLS), with --key\n"
"      --key FILE               the private key of --cert\n"
"      --sni NAME               send and verify NAME instead of the URL's host\n"
"      --insecure               do not verify the servers' certificates\n"
"      --password-file FILE     read the password from the first line of FILE\n"
"  -v, --verbose                more diagnostics\n"
"  -q, --quiet                  no diagnostics but usage errors\n"
"  -h, --help                   print this help and exit\n"
"  -V, --version                print the version and exit\n"
"\n"
"DURATION is a number with an optional unit ms, s, m or h (bare: seconds).\n"
"URL is redis://[[user]:password@]host[:port][/db], rediss://... (TLS),\n"
"or unix:///path[?db=N].\n"
"Environment: REDLOCK_URL, REDLOCK_PASSWORD, REDISCLI_AUTH, and REDLOCK_ and\n"
"the long name of each option with a value (REDLOCK_TTL=10m; REDLOCK_TLS=1).\n"
"Exit status: the command's own; 1 (or -E) lock not obtained; 64 usage;\n"
"69 Redis unavailable; 70 internal error; 75 lock lost; 124 --max-time;\n"
"126/127 command not executable / not found; 128+N signal N.\n";

/* How long a command runs before it gets a guard process, in ms. */
#define GUARD_DELAY 20

/* What main knows about one run of the command. */
struct run {
	const struct config *cfg;
	struct lock *lock;
	struct child child;
	int held;		/* ours to renew and release (not re-entrant) */
	struct renew *renew;	/* started when the first renewal is due */
	int64_t renew_at;
	int64_t guard_at;	/* when to start the guard; 0 once started */
	int guard_fd;		/* where lease ends go, or -1 */
	int64_t started;	/* clock_ms() when the command started */
	int64_t kill_at;	/* SIGKILL then, once stopping; 0 = not */
	int stopping;
	int lost;		/* the lock was lost: exit 75 */
	int timed_out;		/* --max-time ran out: exit 124 */
};

/*
 * Who we run as, for the metadata (for people, not for security):
 * $USER, which costs nothing, else the password database, else the uid.
 */
static void
meta_user(char *buf, size_t len)
{
	const char *user = getenv("USER");
	struct passwd *pw;

	if (user != NULL && user[0] != '\0')
		snprintf(buf, len, "%s", user);
	else if ((pw = getpwuid(geteuid())) != NULL)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%ld", (long)geteuid());
}

/* Fill the holder metadata recorded beside the lock; the command is
 * -c's STRING or COMMAND's words, empty for the verbs. */
void
meta_fill(struct lock_meta *m, const struct config *c, long pid)
{
	size_t n = 0;

	memset(m, 0, sizeof(*m));
	if (gethostname(m->host, sizeof(m->host) - 1) != 0)
		snprintf(m->host, sizeof(m->host), "unknown");
	m->pid = pid;
	meta_user(m->user, sizeof(m->user));
	m->start_ms = clock_wall_ms();
	if (c->shell != NULL)
		snprintf(m->cmd, sizeof(m->cmd), "%s", c->shell);
	for (char **a = c->cmd; a != NULL && *a != NULL; a++) {
		int w = snprintf(m->cmd + n, sizeof(m->cmd) - n, "%s%s",
		    n ? " " : "", *a);
		if (w < 0 || (size_t)w >= sizeof(m->cmd) - n)
			break;
		n += (size_t)w;
	}
}

static int
env_skip(const char *e)
{
	static const char *const drop[] = {
		"REDLOCK_PASSWORD=", "REDISCLI_AUTH=", "REDLOCK_NAME=",
		"REDLOCK_KEY=", "REDLOCK_TOKEN=", "REDLOCK_FENCE=",
		"REDLOCK_HELD="
	};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strncmp(e, drop[i], strlen(drop[i])) == 0)
			return 1;
	return 0;
}

/*
 * The command's environment: ours without the passwords, plus what
 * describes the lock.  REDLOCK_HELD lists every token held by redlock
 * ancestors, for re-entrance.  Returns a malloc'd vector (one block).
 */
static char **
child_env(const struct lock *l)
{
	const char *held = l->held != NULL ? l->held : "";
	size_t n = 0, size;
	char **env, *p;

	for (char **e = environ; *e != NULL; e++)
		n++;
	size = (n + 6) * sizeof(char *) + l->namelen + l->keylen +
	    strlen(held) + 2 * (size_t)LOCK_TOKEN_LEN + 160;
	if ((env = malloc(size)) == NULL)
		return NULL;
	p = (char *)(env + n + 6);
	n = 0;
	for (char **e = environ; *e != NULL; e++)
		if (!env_skip(*e))
			env[n++] = *e;
	env[n++] = p;
	p += sprintf(p, "REDLOCK_NAME=%s", l->name) + 1;
	env[n++] = p;
	p += sprintf(p, "REDLOCK_KEY=%s", l->key) + 1;
	env[n++] = p;
	p += sprintf(p, "REDLOCK_TOKEN=%s", l->token) + 1;
	env[n++] = p;
	p += sprintf(p, "REDLOCK_FENCE=%lld", l->fence) + 1;
	env[n++] = p;
	if (lock_held_by_parent(l, l->token))
		sprintf(p, "REDLOCK_HELD=%s", held);
	else
		sprintf(p, "REDLOCK_HELD=%s%s%s", held, *held ? " " : "", l->token);
	env[n] = NULL;
	return env;
}

/* Begin stopping the command: now with SIGKILL, or SIGTERM then
 * SIGKILL at `by` at the latest. */
static void
stop_command(struct run *r, int hard, int64_t by)
{
	int64_t now = clock_ms();

	if (hard || by <= now) {
		child_signal(&r->child, SIGKILL);
		r->kill_at = now;
	} else if (!r->stopping) {
		child_signal(&r->child, SIGTERM);
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

/*
 * Start the guard (see child.c), which kills the command's process
 * group if redlock dies or stalls, and enforces the lease unless
 * --on-lost ignore.  It is started once the command has run for
 * GUARD_DELAY ms, and always before the renewal thread (a fork must
 * come before any thread): commands that end sooner, the bulk of
 * short cron jobs, do not pay for a fork that would double their
 * overhead.  Until then PR_SET_PDEATHSIG covers the command itself.
 */
static void
guard_start(struct run *r)
{
	const struct config *c = r->cfg;

	r->guard_at = 0;
	if (child_guard_start(&r->child, lease_safety(c->ttl)) < 0) {
		log_error("cannot start the guard process: %s", strerror(errno));
		return;
	}
	r->guard_fd = r->held && c->on_lost != ON_LOST_IGNORE ?
	    r->child.guard_fd : -1;
	child_guard_lease(r->guard_fd, lock_lease_end(r->lock, r->lock->sent_at));
}

/*
 * Look at the clock and the renewal thread, act on what is due, and
 * return when to look again.  Called first thing after every wake-up,
 * so that a redlock that was paused past its lease stops the command
 * before doing anything else.
 */
static int64_t
check_deadlines(struct run *r)
{
	const struct config *c = r->cfg;
	int64_t now = clock_ms(), next = now + 60000;
	char why[256];

	if (r->guard_at > 0 && (now >= r->guard_at ||
	    (r->renew_at > 0 && now >= r->renew_at)))
		guard_start(r);
	else if (r->guard_at > 0 && r->guard_at < next)
		next = r->guard_at;
	if (r->held && !(r->lost && r->stopping)) {
		int64_t kill_at, term_at;

		/* Commands shorter than ttl/3 never need the thread. */
		if (r->renew == NULL && r->renew_at > 0 && now >= r->renew_at) {
			r->renew_at = 0;
			r->renew = renew_start(r->lock, child_notify_fd(),
			    r->guard_fd);
			if (r->renew == NULL)
				log_error("cannot start the renewal thread: %s",
				    strerror(errno));
		}
		kill_at = (r->renew != NULL ? renew_lease_end(r->renew) :
		    lock_lease_end(r->lock, r->lock->sent_at)) -
		    lease_safety(c->ttl);
		term_at = kill_at - config_kill_after(c);
		why[0] = '\0';
		if (r->renew_at > 0 && r->renew_at < next)
			next = r->renew_at;
		if (r->renew != NULL && renew_lost(r->renew, why, sizeof(why)))
			lease_lost(r, why, now + config_kill_after(c) < kill_at ?
			    now + config_kill_after(c) : kill_at);
		else if (now >= term_at && !r->lost) {
			char m[320];
			snprintf(m, sizeof(m), "could not renew in time%s%s",
			    why[0] ? ": " : "", why);
			lease_lost(r, m, kill_at);
		} else if (!r->lost && term_at < next)
			next = term_at;
		if (r->lost && r->stopping && kill_at < r->kill_at)
			r->kill_at = kill_at;
	}
	if (c->max_time > 0 && !r->timed_out) {
		int64_t end = r->started + c->max_time;
		if (now >= end) {
			r->timed_out = 1;
			log_error("command ran for --max-time; stopping it");
			stop_command(r, 0, now + config_kill_after(c));
		} else if (end < next)
			next = end;
	}
	if (r->stopping && r->kill_at > 0) {
		if (now >= r->kill_at) {
			child_signal(&r->child, SIGKILL);
			r->kill_at = 0;
		} else if (r->kill_at < next)
			next = r->kill_at;
	}
	return next;
}

/*
 * Wait for the command to end, forwarding signals and enforcing the
 * lease and --max-time.  Returns the command's wait status.
 */
static int
supervise(struct run *r)
{
	struct pollfd p = { .fd = child_signal_fd(), .events = POLLIN };
	int status = 0, sig, done = 0;

	for (;;) {
		int64_t next = check_deadlines(r), left = next - clock_ms();

		if (child_reap(&r->child, &status, &done) && r->stopping)
			/* The lock is no longer ours: whatever the command
			 * left running in its group is stopped too. */
			child_signal(&r->child, SIGKILL);
		/* Background processes the command started hold the lock
		 * as with flock(1), where they inherit the descriptor. */
		if (done && !child_group_alive(&r->child))
			break;
		if (done && left > 100)
			left = 100;
		if (poll(&p, 1, left < 0 ? 0 : left > 60000 ? 60000 : (int)left) < 0 &&
		    errno != EINTR)
			break;
		while ((sig = child_next_signal()) >= 0)
			if (sig != SIGCHLD && sig != 0)
				child_signal(&r->child, sig);
	}
	return status;
}

static void
report_exec_error(const struct config *c, int err)
{
	const char *what = c->cmd != NULL ? c->cmd[0] : "/bin/sh";

	log_error("cannot run '%s': %s", what, strerror(err));
}

/* The first signal waiting in the self-pipe, for the 128+N status. */
static int
pending_signal(void)
{
	int sig;

	while ((sig = child_next_signal()) >= 0)
		if (sig != 0 && sig != SIGCHLD)
			return sig;
	return SIGTERM;
}

/*
 * Report why the lock was not obtained and return the exit status for
 * it.  Shared with the terminal verbs.
 */
int
main_not_acquired(const struct config *c, const struct lock *l,
    enum lock_result res)
{
	switch (res) {
	case LOCK_INTERRUPTED:
		return 128 + pending_signal();
	case LOCK_UNAVAILABLE:
		log_error("%s", l->err[0] ? l->err : "no quorum of servers");
		return EXIT_UNAVAILABLE;
	case LOCK_BUSY:
		if (c->wait == 0)
			log_error("lock '%s' is held by someone else", c->name);
		else
			log_error("timed out waiting for lock '%s'", c->name);
		return c->conflict_exit;
	default:
		return EXIT_INTERNAL;
	}
}

/*
 * Release the lock as soon as the command is done, so that a waiter
 * gets it at once; with --min-hold leave it to expire later instead
 * (with the renewal thread stopped first, so that it cannot extend the
 * lease again behind our back).
 */
static void
finish(struct run *r)
{
	const struct config *c = r->cfg;
	struct lock *l = r->lock;
	int64_t keep = r->lost ? 0 : c->min_hold - (clock_ms() - l->granted_at);
	int ok, others;

	if (keep > 0) {
		renew_stop(r->renew);
		r->renew = NULL;
	}
	/* After a loss the servers may be unreachable: try once, briefly,
	 * in case the key is still ours. */
	l->brief = r->lost;
	ok = lock_release(l, l->token, keep > 0 ? keep : 0, &others);
	if (ok < l->quorum && !r->lost)
		log_error("could not release lock '%s'%s%s", c->name,
		    l->err[0] ? ": " : "", l->err);
	else
		log_info("released lock '%s'", c->name);
}

/* The run form: acquire, run the command, release. */
static int
cmd_run(const struct config *c, struct lock *l)
{
	char *shell_argv[] = { "/bin/sh", "-c", (char *)c->shell, NULL };
	char *const *argv = c->cmd != NULL ? c->cmd : shell_argv;
	struct run r = { .cfg = c, .lock = l, .guard_fd = -1,
	    .child = { .guard_fd = -1 } };
	enum lock_result res;
	char **env;
	int status, code;

	meta_fill(&l->meta, c, (long)getpid());
	res = lock_acquire(l, c->wait, child_signal_fd());
	if (res != LOCK_HELD && res != LOCK_REENTRANT)
		return main_not_acquired(c, l, res);
	log_info("acquired lock '%s' (fence %lld)%s", c->name, l->fence,
	    res == LOCK_REENTRANT ? ", held by a parent redlock" : "");
	if ((env = child_env(l)) == NULL) {
		log_error("out of memory");
		code = EXIT_INTERNAL;
		goto release;
	}
	if (child_spawn(&r.child, argv, env) < 0) {
		report_exec_error(c, r.child.exec_errno);
		code = r.child.exec_errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
		free(env);
		goto release;
	}
	free(env);
	r.started = clock_ms();
	r.held = res == LOCK_HELD;
	r.renew_at = r.held ? l->sent_at + l->ttl / 3 : 0;
	r.guard_at = r.started + GUARD_DELAY;
	status = supervise(&r);
	child_restore_terminal(&r.child);
	code = r.lost ? EXIT_LOST : r.timed_out ? EXIT_TIMEOUT :
	    child_exit_status(status);
release:
	if (res == LOCK_HELD)
		finish(&r);
	renew_stop(r.renew);
	child_guard_stop(&r.child);
	return code;
}

int
main(int argc, char **argv)
{
	struct config cfg;
	struct conn *conns = NULL;
	struct lock lock;
	char err[512];
	int rc, code;

	rc = config_parse(&cfg, argc, argv, err, sizeof(err));
	if (rc != CONFIG_OK) {
		config_free(&cfg);
		if (rc == CONFIG_HELP) {
			fputs(usage_text, stdout);
			return fflush(stdout) == 0 ? 0 : EXIT_INTERNAL;
		}
		if (rc == CONFIG_VERSION) {
			puts("redlock " REDLOCK_VERSION);
			return fflush(stdout) == 0 ? 0 : EXIT_INTERNAL;
		}
		log_usage("%s", err);
		return EXIT_USAGE;
	}
	log_set_level(cfg.verbosity);
	if ((code = tls_init(&cfg.tls_opts)) != 0) {
		config_free(&cfg);
		return code;
	}
	if (child_signals_init() < 0 ||
	    (conns = calloc((size_t)cfg.nurls, sizeof(*conns))) == NULL) {
		log_error("cannot set up: %s", strerror(errno));
		config_free(&cfg);
		return EXIT_INTERNAL;
	}
	for (int i = 0; i < cfg.nurls; i++)
		conn_init(&conns[i], &cfg.urls[i], cfg.password);
	if (lock_init(&lock, conns, cfg.nurls, cfg.prefix,
	    cfg.name != NULL ? cfg.name : "", cfg.ttl) < 0) {
		log_error("out of memory");
		code = EXIT_INTERNAL;
	} else {
		lock.held = getenv("REDLOCK_HELD");
		switch (cfg.verb) {
		case VERB_RUN:
			code = cmd_run(&cfg, &lock);
			break;
		default:
			code = verbs_run(&cfg, &lock);
			break;
		}
	}
	lock_free(&lock);
	for (int i = 0; i < cfg.nurls; i++)
		conn_close(&conns[i]);
	free(conns);
	config_free(&cfg);
	if (fflush(stdout) != 0 && code == 0)
		code = EXIT_INTERNAL;
	return code;
}
