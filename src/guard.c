/*
 * guard.c - a small process forked from redlock that outlives it.  It
 * reads lease ends (int64_t clock_ms() values) from a pipe and SIGKILLs
 * the command's whole tree when one passes without a newer one, or
 * when the pipe reaches EOF without the stand-down message (redlock
 * died, even by SIGKILL).  So the command never outlives the lock
 * because redlock was killed or stopped.
 *
 * It exists before the command does, knowing the first lease end from
 * the fork, and lives in a process group of its own: a signal to
 * redlock's group (timeout -s KILL, kill %1, kill -STOP %1) never
 * reaches it.  The command's pid comes later, as a message; until then
 * the tree is found below redlock (a stopped redlock's children are
 * still its children) and by the token the command inherits.
 *
 * A run that has to wait for the lock starts its guard while it waits,
 * with no lease, so that the fork is not between the release that
 * wakes it and its command; the lease end follows as a message, before
 * the command is started.
 *
 * Messages: a lease end; 0 stands down; GUARD_NO_LEASE means "no lease
 * to enforce"; GUARD_SUSPENDED the same while redlock is stopped with
 * its job, whom the guard wakes when a SIGTERM or SIGHUP waits for it
 * (redlock(1), "Running a command under the lock": such a signal ends a suspended job);
 * GUARD_MARK and a token to find the command's processes by; a negative
 * value is the command's pid, negated.
 */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "clock.h"
#include "tree.h"

/* How many rounds of SIGKILL a tree that keeps forking gets. */
#define GUARD_KILL_ROUNDS 8

/* "REDLOCK_TOKEN=" and a token. */
#define GUARD_MARK_LEN (GUARD_TOKEN_MAX + 16)

/* How often a suspended redlock is looked at for a pending SIGTERM or
 * SIGHUP: a person waits that long at most for `kill` to take effect,
 * and a stopped job costs a /proc read ten times a second. */
#define GUARD_WAKE_POLL_MS 100

/* Is SIGTERM or SIGHUP pending for process pid (its SigPnd and ShdPnd
 * masks in /proc/PID/status)? */
static int
term_pending(pid_t pid)
{
	char path[64], line[128];
	unsigned long long want = 1ULL << (SIGTERM - 1) | 1ULL << (SIGHUP - 1);
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "SigPnd:", 7) == 0 ||
		    strncmp(line, "ShdPnd:", 7) == 0)
			found = (strtoull(line + 7, NULL, 16) & want) != 0;
	fclose(f);
	return found;
}

/* The "REDLOCK_TOKEN=token" that marks the command's processes, into
 * mark (GUARD_MARK_LEN bytes); "" for no token. */
static void
guard_set_mark(char *mark, const char *token)
{
	fmt_cat(mark, GUARD_MARK_LEN, token[0] ? "REDLOCK_TOKEN=" : "", token,
	    (char *)NULL);
}

/* Kill the command's tree: its group, its descendants, redlock's other
 * children while redlock lives (the command before its pid came), and,
 * since redlock may be gone and the parent links with it, every process
 * that carries our token. */
static void
guard_kill(pid_t command, const char *mark, pid_t redlock)
{
	if (command > 0)
		kill(-command, SIGKILL);
	for (int i = 0; i < GUARD_KILL_ROUNDS; i++) {
		int n = command > 0 ? tree_signal(command, 0, 0, SIGKILL) : 0;
		int m = mark[0] != '\0' ? tree_signal_marked(mark, SIGKILL) : 0;
		int r = getppid() == redlock ?
		    tree_signal(redlock, getpid(), 0, SIGKILL) : 0;

		if (command > 0)
			kill(command, SIGKILL);
		if (n <= 0 && m <= 0 && r <= 0)
			break;
	}
}

/* Hold nothing of the caller's: not its terminal, its pipes (a shell's
 * $(...) would wait for them) or its Redis sockets; fd becomes 3. */
static int
guard_detach(int fd)
{
	int null = open("/dev/null", O_RDWR);

	for (int i = 0; i < 3; i++)
		if (null >= 0)
			dup2(null, i);
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	close_range(4, ~0U, 0);
	/* Signals meant for redlock's process group are not for us, nor
	 * are SIGKILL and SIGSTOP sent to the whole group. */
	setpgid(0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGALRM, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	return fd;
}

/* After GUARD_MARK: the token, which the same write() sent (it is
 * shorter than PIPE_BUF, so it came whole).  A short read leaves the
 * old mark. */
static void
guard_read_mark(int fd, char *mark)
{
	char token[GUARD_TOKEN_MAX + 1];
	ssize_t n;

	do
		n = read(fd, token, GUARD_TOKEN_MAX);
	while (n < 0 && errno == EINTR);
	if (n != GUARD_TOKEN_MAX)
		return;
	token[GUARD_TOKEN_MAX] = '\0';
	guard_set_mark(mark, token);
}

static void
guard_main(int fd, char *mark, int64_t margin, int64_t end, pid_t redlock)
{
	struct pollfd p = { .events = POLLIN };
	pid_t command = 0;
	int64_t msg;

	p.fd = fd = guard_detach(fd);
	for (;;) {
		int64_t left = -1;	/* no lease: wait for a message */
		ssize_t n;

		if (end == GUARD_SUSPENDED) {
			/* A stopped redlock acts on SIGTERM or SIGHUP once
			 * continued; it says what comes next when it has. */
			if (term_pending(redlock)) {
				kill(redlock, SIGCONT);
				end = GUARD_NO_LEASE;
			} else
				left = GUARD_WAKE_POLL_MS;
		} else if (end != GUARD_NO_LEASE &&
		    (left = end - margin - clock_ms()) <= 0)
			break;
		if (poll(&p, 1, left < 0 ? -1 : left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		n = read(fd, &msg, sizeof(msg));
		if (n == (ssize_t)sizeof(msg) && msg == 0)
			_exit(0);
		if (n == (ssize_t)sizeof(msg) && msg < 0)
			command = (pid_t)-msg;
		else if (n == (ssize_t)sizeof(msg) && msg == GUARD_MARK)
			guard_read_mark(fd, mark);
		else if (n == (ssize_t)sizeof(msg))
			end = msg;
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
	}
	guard_kill(command, mark, redlock);
	_exit(0);
}

/*
 * Start the guard before the command: it kills the command's tree
 * margin ms before each lease end it is sent, the first being `end`
 * (GUARD_NO_LEASE: none); token (or NULL) marks the command's
 * processes.  Tell it the command with guard_command().  Call before
 * any thread exists.  Returns 0 with *guard and *fd set, or -1 (the run
 * goes on unguarded, as with flock).
 */
int
guard_start(pid_t *guard, int *fd, const char *token, int64_t margin,
    int64_t end)
{
	pid_t redlock = getpid();
	char mark[GUARD_MARK_LEN];
	int gp[2];

	*guard = 0;
	*fd = -1;
	/* No token (a re-entrant run): the token is our parent's, and so
	 * are the processes that carry it. */
	guard_set_mark(mark, token ? token : "");
	if (pipe2(gp, O_CLOEXEC) < 0)
		return -1;
	*guard = fork();
	if (*guard < 0) {
		close(gp[0]);
		close(gp[1]);
		*guard = 0;
		return -1;
	}
	if (*guard == 0) {
		close(gp[1]);
		guard_main(gp[0], mark, margin, end, redlock);
	}
	/* Also from here: no window in which the guard could still be in
	 * our group. */
	setpgid(*guard, *guard);
	close(gp[0]);
	*fd = gp[1];
	return 0;
}

/* Tell the guard the command's pid.  fd -1 does nothing. */
void
guard_command(int fd, pid_t command)
{
	int64_t msg = -(int64_t)command;

	if (fd >= 0 && command > 0)
		(void)!write(fd, &msg, sizeof(msg));
}

/* Tell the guard the token the command will carry (NULL: none), then
 * the lease end `end` unless it is GUARD_NO_LEASE, in one write: one
 * wake-up.  fd -1 does nothing. */
void
guard_mark(int fd, const char *token, int64_t end)
{
	char msg[2 * sizeof(int64_t) + GUARD_TOKEN_MAX] = { 0 };
	int64_t kind = GUARD_MARK;
	size_t len = sizeof(kind) + GUARD_TOKEN_MAX;

	if (fd < 0)
		return;
	memcpy(msg, &kind, sizeof(kind));
	if (token != NULL)
		memcpy(msg + sizeof(kind), token,
		    strnlen(token, GUARD_TOKEN_MAX - 1));
	if (end != GUARD_NO_LEASE) {
		memcpy(msg + len, &end, sizeof(end));
		len += sizeof(end);
	}
	(void)!write(fd, msg, len);
}

/* Tell the guard a new lease end: see the top of this file.
 * Async-signal-safe; fd -1 does nothing. */
void
guard_lease(int fd, int64_t end)
{
	if (fd >= 0)
		(void)!write(fd, &end, sizeof(end));
}

/* Stand the guard down.  It exits at once; we reap it if we are still
 * around, init does otherwise. */
void
guard_stop(int *fd)
{
	if (*fd < 0)
		return;
	guard_lease(*fd, 0);
	close(*fd);
	*fd = -1;
}
