/*
 * hooks.c - --on-start and --on-exit: a shell command run through
 * /bin/sh -c with the outcome in its environment, bounded by
 * --hook-timeout, never told a token or a password, never changing
 * redlock's exit status.
 *
 * A hook runs under a runner: a process forked from redlock that
 * starts `/bin/sh -c CMD` in a process group of its own, is the
 * subreaper of everything the hook starts, waits for all of it until
 * the timeout, kills what is left (group and tree), says on stderr how
 * a hook that failed ended, and exits.
 *
 * The on-start runner is detached (forked twice) just before the
 * command starts, so the hook runs beside the command: it delays
 * neither the command nor the renewals, and it is no part of the
 * command's tree (which holds the lock until it is gone).  It holds a
 * pipe open until it is done; the on-exit hook, which runs after the
 * release, first waits for that, so that a monitor sees the start
 * before the end.  redlock waits for the on-exit runner.
 *
 * A signal that asks redlock to end (sig_asks_end()) while it waits for
 * a hook ends the wait at once: redlock sends the on-exit runner SIGTERM,
 * on which a runner kills the hook's tree and exits, and waits at most
 * HOOKS_KILL_GRACE_MS for it; the on-start runner, detached, is left to
 * its timeout.  The lock is released by then: a hook only reports.
 */
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "sig.h"
#include "tree.h"

extern char **environ;

/* After its timeout, how long a runner may take to kill and reap the
 * hook's tree: what the on-exit hook waits beyond the on-start timeout. */
#define HOOKS_KILL_GRACE_MS 1000

/* How many rounds of SIGKILL a hook tree that keeps forking gets. */
#define HOOKS_KILL_ROUNDS 8

/* The descriptor of the runner's "done" pipe. */
#define HOOKS_DONE_FD 3

/*
 * Variables a hook must not inherit: tokens (this lock's and those of
 * enclosing redlocks), passwords and where they come from, and
 * REDLOCK_URL when it names a user or password ('@': a hook that runs
 * redlock itself keeps the servers otherwise); and what describes the
 * lock, set anew.
 */
static int
env_drop(const char *e)
{
	static const char *const drop[] = {
		"REDLOCK_TOKEN=", "REDLOCK_HELD=", "REDLOCK_PASSWORD=",
		"REDLOCK_PASSWORD_FILE=", "REDISCLI_AUTH=",
		"REDLOCK_SENTINEL_PASSWORD=", "REDLOCK_NAME=", "REDLOCK_KEY=",
		"REDLOCK_FENCE="
	};

	if (strncmp(e, "REDLOCK_URL=", 12) == 0)
		return strchr(e, '@') != NULL;
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strncmp(e, drop[i], strlen(drop[i])) == 0)
			return 1;
	return 0;
}

/* The number of our own variables in a hook's environment. */
#define HOOKS_VARS 10

/*
 * A hook's environment: ours without env_drop()'s, plus REDLOCK_HOOK
 * (start or exit), REDLOCK_NAME, REDLOCK_HOST, REDLOCK_RUN_ID,
 * REDLOCK_FENCE, REDLOCK_WAIT_MS and, at exit, REDLOCK_OUTCOME,
 * REDLOCK_EXIT_STATUS and REDLOCK_RUN_MS.  Returns a malloc'd vector in
 * one block, or NULL when out of memory.
 */
char **
hooks_env(const struct hook_info *h)
{
	size_t n = 0, size;
	char **env, *p, *end;

	for (char **e = environ; *e != NULL; e++)
		n++;
	size = (n + HOOKS_VARS + 1) * sizeof(char *) + strlen(h->name) +
	    strlen(h->host) + 512;
	if ((env = malloc(size)) == NULL)
		return NULL;
	p = (char *)(env + n + HOOKS_VARS + 1);
	end = (char *)env + size;
	n = 0;
	for (char **e = environ; *e != NULL; e++)
		if (!env_drop(*e))
			env[n++] = *e;
#define HOOKS_PUT(...) do { env[n++] = p; \
	p += snprintf(p, (size_t)(end - p), __VA_ARGS__) + 1; } while (0)
	HOOKS_PUT("REDLOCK_HOOK=%s", h->event);
	HOOKS_PUT("REDLOCK_NAME=%s", h->name);
	HOOKS_PUT("REDLOCK_HOST=%s", h->host);
	HOOKS_PUT("REDLOCK_RUN_ID=%s", h->run_id);
	HOOKS_PUT("REDLOCK_WAIT_MS=%lld", (long long)h->wait_ms);
	if (h->fence > 0)
		HOOKS_PUT("REDLOCK_FENCE=%lld", h->fence);
	if (h->outcome != NULL) {
		HOOKS_PUT("REDLOCK_OUTCOME=%s", h->outcome);
		HOOKS_PUT("REDLOCK_EXIT_STATUS=%d", h->exit_status);
		HOOKS_PUT("REDLOCK_RUN_MS=%lld", (long long)h->run_ms);
	}
#undef HOOKS_PUT
	env[n] = NULL;
	return env;
}

/* In the hook's process, before exec: a group of its own, the caller's
 * signal dispositions, no input, its output on our stderr. */
static void
hook_exec(const char *cmd, char *const env[])
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	int nul = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	sig_child_defaults();
	if (nul >= 0 && nul != STDIN_FILENO) {
		dup2(nul, STDIN_FILENO);
		close(nul);
	}
	dup2(STDERR_FILENO, STDOUT_FILENO);
	close(HOOKS_DONE_FD);
	execve("/bin/sh", argv, env);
	_exit(127);
}

/* Kill the hook's group and every process of its tree. */
static void
kill_all(pid_t hook)
{
	kill(-hook, SIGKILL);
	for (int i = 0; i < HOOKS_KILL_ROUNDS; i++)
		if (tree_signal(getpid(), 0, 0, SIGKILL) <= 0)
			break;
}

/*
 * Wait for every process of the hook's tree until deadline or SIGTERM;
 * *status is the shell's.  Returns 0 when all ended in time, else -1
 * (timed out) or -2 (SIGTERM), and they were killed.  SIGCHLD and
 * SIGTERM are blocked (set).
 */
static int
reap_until(pid_t hook, int64_t deadline, const sigset_t *set, int *status)
{
	int rc = -1;

	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		int64_t left = deadline - clock_ms();
		struct timespec ts;

		if (w == hook)
			*status = st;
		if (w > 0 || (w < 0 && errno == EINTR))
			continue;
		if (w < 0)
			return 0;
		if (left <= 0)
			break;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000L;
		if (sigtimedwait(set, NULL, &ts) == SIGTERM) {
			rc = -2;
			break;
		}
	}
	kill_all(hook);
	while (waitpid(-1, status, 0) > 0 || errno == EINTR)
		;
	return rc;
}

/* The runner: run the hook, bounded by timeout_ms, say how it failed,
 * and exit.  Never returns. */
static void
runner(const char *what, const char *cmd, char *const env[],
    int64_t timeout_ms)
{
	sigset_t set;
	int status = 0, rc;
	pid_t hook;
	char t[32];

	setpgid(0, 0);
	sig_child_defaults();
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if ((hook = fork()) == 0)
		hook_exec(cmd, env);
	if (hook < 0) {
		log_error("cannot run the %s hook: %s", what, strerror(errno));
		_exit(0);
	}
	duration_format(timeout_ms, t, sizeof(t));
	rc = reap_until(hook, clock_ms() + timeout_ms, &set, &status);
	if (rc == -2)
		_exit(0);	/* redlock says why (hooks_exit()) */
	if (rc < 0)
		log_error("the %s hook was still running after %s "
		    "(--hook-timeout): killed it", what, t);
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		log_error("the %s hook failed with exit status %d", what,
		    WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		log_error("the %s hook was killed by signal %d", what,
		    WTERMSIG(status));
	_exit(0);
}

/* Keep only the standard descriptors and fd (as HOOKS_DONE_FD, or
 * none if fd < 0) in a runner. */
static void
runner_fds(int fd)
{
	if (fd >= 0 && fd != HOOKS_DONE_FD) {
		dup2(fd, HOOKS_DONE_FD);
		fd = HOOKS_DONE_FD;
	}
	close_range(fd >= 0 ? HOOKS_DONE_FD + 1 : HOOKS_DONE_FD, ~0U, 0);
}

/* Wait for pid, whatever signals arrive. */
static void
reap(pid_t pid)
{
	int st;

	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/*
 * Start the --on-start hook cmd beside the command, detached; see the
 * top.  Must be called before any thread exists.  Returns the read end
 * of the runner's pipe, for hooks_wait(), or -1 when the hook could not
 * be started (said on stderr).
 */
int
hooks_start(const char *cmd, char *const env[], int64_t timeout_ms)
{
	int p[2];
	pid_t mid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		log_error("cannot run the --on-start hook: %s", strerror(errno));
		return -1;
	}
	if ((mid = fork()) == 0) {
		close(p[0]);
		runner_fds(p[1]);
		if (fork() == 0)
			runner("--on-start", cmd, env, timeout_ms);
		_exit(0);
	}
	close(p[1]);
	if (mid < 0) {
		log_error("cannot run the --on-start hook: %s", strerror(errno));
		close(p[0]);
		return -1;
	}
	reap(mid);
	return p[0];
}

/*
 * Wait until the on-start runner of *fd is done (its pipe's end), at
 * most timeout_ms and the runner's grace, or until a signal asks redlock
 * to end; closes *fd.  Returns that signal, or 0.
 */
int
hooks_wait(int *fd, int64_t timeout_ms)
{
	int64_t until = clock_ms() + timeout_ms + HOOKS_KILL_GRACE_MS;
	struct pollfd pfd[2] = { { .fd = *fd, .events = POLLIN },
		{ .fd = sig_fd(), .events = POLLIN } };
	int end = 0;
	char b;

	if (*fd < 0)
		return 0;
	for (int64_t left; end == 0 && (left = until - clock_ms()) > 0;) {
		int rc = poll(pfd, 2, left > 1000 ? 1000 : (int)left);
		if (rc > 0 && (pfd[0].revents & (POLLIN | POLLHUP)) &&
		    read(*fd, &b, 1) <= 0)
			break;
		if (rc > 0 && (pfd[1].revents & POLLIN))
			end = sig_drain();
	}
	close(*fd);
	*fd = -1;
	return end;
}

/*
 * Wait for the runner pid until it exits, or a signal asks redlock to
 * end: then SIGTERM has it kill the hook's tree, and it gets
 * HOOKS_KILL_GRACE_MS to do so before it is left behind.  Returns that
 * signal, or 0.
 */
static int
reap_or_stop(pid_t pid)
{
	struct pollfd p = { .fd = sig_fd(), .events = POLLIN };
	int64_t until = -1;
	int end = 0;

	/* A SIGCHLD on the self-pipe wakes the poll when the runner exits;
	 * the poll is bounded all the same. */
	while (waitpid(pid, NULL, WNOHANG) == 0) {
		int64_t left = until < 0 ? 1000 : until - clock_ms();

		if (left <= 0)
			break;
		if (poll(&p, 1, left > 1000 ? 1000 : (int)left) <= 0)
			continue;
		if (end == 0 && (end = sig_drain()) != 0) {
			kill(pid, SIGTERM);
			until = clock_ms() + HOOKS_KILL_GRACE_MS;
		} else if (end != 0)
			(void)sig_drain();
	}
	return end;
}

/*
 * Run the --on-exit hook cmd and wait for it (its runner bounds it by
 * timeout_ms), unless a signal that asks redlock to end came first (end,
 * or one on the self-pipe) or comes meanwhile (see the top).  Returns
 * that signal, or 0.
 */
int
hooks_exit(const char *cmd, char *const env[], int64_t timeout_ms, int end)
{
	pid_t pid;

	if (end == 0)
		end = sig_drain();
	if (end != 0) {
		log_error("the --on-exit hook was not run: signal %d asked "
		    "redlock to end", end);
		return end;
	}
	if ((pid = fork()) == 0) {
		runner_fds(-1);
		runner("--on-exit", cmd, env, timeout_ms);
	}
	if (pid < 0) {
		log_error("cannot run the --on-exit hook: %s", strerror(errno));
		return 0;
	}
	if ((end = reap_or_stop(pid)) != 0)
		log_error("the --on-exit hook was stopped, with its tree: "
		    "signal %d asked redlock to end", end);
	return end;
}
