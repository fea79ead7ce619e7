/*
 * guard.c - a small process started by redlock that outlives it.  It
 * reads lease ends (int64_t clock_ms() values) from a pipe and SIGKILLs
 * the command's whole tree when one passes without a newer one, or
 * when the pipe reaches EOF without the stand-down message (redlock
 * died, even by SIGKILL).  So the command never outlives the lock
 * because redlock was killed or stopped.
 *
 * It exists before the command does, knowing the first lease end from
 * its start, and lives in a process group of its own: a signal to
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
 * Creating it is most of what a short run costs beyond the lock itself,
 * so the first guard of a process is not a fork: it is a clone that
 * shares redlock's memory (no page tables to copy, no copy-on-write
 * faults after), running on a stack of its own and calling nothing but
 * system calls: no malloc, no stdio, no errno it could race redlock's
 * for (guard_shared()).  For whatever needs more (killing the tree,
 * waking a suspended redlock), and once it has lived GUARD_SHARED_MS,
 * it execs a fresh copy of redlock as "redlock (guard)" with its state
 * in the environment (guard_exec(), guard_exec_main()), which is then
 * the same guard as a forked one.  Builds with a sanitizer, runs under
 * a preloaded library (which could interpose those calls) and later
 * guards of the same process fork as before.
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
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "clock.h"
#include "tree.h"

/* How many rounds of SIGKILL a tree that keeps forking gets. */
#define GUARD_KILL_ROUNDS 8

/* "REDLOCK_TOKEN=" and a token. */
#define GUARD_MARK_LEN (GUARD_TOKEN_MAX + 16)

/* How long a guard may share redlock's memory: the whole life of the
 * guard of a run shorter than this (most of a fleet's cron jobs take
 * seconds, and a run of a short command milliseconds), so that such a
 * run never pays for a process of its own; after it the guard execs a
 * copy of redlock of its own, so that an out-of-memory kill that picks
 * redlock (which kills every process sharing its memory) cannot take
 * the guard along with it for longer than this. */
#define GUARD_SHARED_MS 1000

/* The stack of a guard that shares redlock's memory: it calls nothing
 * deeper than poll(), read() and execve(), with a page to spare. */
#define GUARD_STACK_SIZE 16384

/* argv[0] of the guard that a sharing guard execs, and the variable
 * that carries its state (guard_exec()). */
#define GUARD_ARGV0 "redlock (guard)"
#define GUARD_ENV "REDLOCK_GUARD"

/* Room for a number of that state: fmt_ll()'s, the space after it
 * taking the place of its NUL. */
#define GUARD_NUM_LEN FMT_LL_SIZE

/* How often a suspended redlock is looked at for a pending SIGTERM or
 * SIGHUP: a person waits that long at most for `kill` to take effect,
 * and a stopped job costs a /proc read ten times a second. */
#define GUARD_WAKE_POLL_MS 100

/* Can this build share its memory with the guard?  Not under a
 * sanitizer, whose runtime keeps per-thread state the guard would
 * share with redlock's main thread. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GUARD_CAN_SHARE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GUARD_CAN_SHARE 0
#endif
#endif
#ifndef GUARD_CAN_SHARE
#define GUARD_CAN_SHARE 1
#endif

/* What a guard knows: its pipe, the command (0 until told), redlock,
 * the margin and the lease end, the token that marks the command's
 * processes ("" for none), and whether the pipe closed without the
 * stand-down (redlock is gone: kill at once). */
struct guard_state {
	int fd;
	pid_t command, redlock;
	int64_t margin, end;
	int lost;
	char token[GUARD_TOKEN_MAX + 1];
};

/* The state and the stack of the one guard of this process that shares
 * its memory: guard_start() writes the state before the clone, and from
 * then on only that guard touches either. */
static struct guard_state shared_state;
static char shared_stack[GUARD_STACK_SIZE] __attribute__((aligned(64)));
static int shared_used;

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
 * shorter than PIPE_BUF, so it came whole), into g->token.  A short read
 * leaves the old one.  Calls read() only. */
static void
guard_read_token(struct guard_state *g)
{
	char token[GUARD_TOKEN_MAX];

	if (read(g->fd, token, GUARD_TOKEN_MAX) != GUARD_TOKEN_MAX)
		return;
	memcpy(g->token, token, GUARD_TOKEN_MAX);
	g->token[GUARD_TOKEN_MAX] = '\0';
}

/* Read one message into g: returns 1 for the stand-down, -1 when the
 * pipe closed or failed (redlock is gone), else 0.  The pipe blocks and
 * every signal that could interrupt is ignored, so a failure is not
 * EINTR and errno is not read: a guard that shares redlock's memory may
 * call this. */
static int
guard_read(struct guard_state *g)
{
	int64_t msg;
	ssize_t n = read(g->fd, &msg, sizeof(msg));

	if (n <= 0)
		return -1;
	if (n != (ssize_t)sizeof(msg))
		return 0;
	if (msg == 0)
		return 1;
	if (msg < 0)
		g->command = (pid_t)-msg;
	else if (msg == GUARD_MARK)
		guard_read_token(g);
	else
		g->end = msg;
	return 0;
}

/* The ms left before g's lease must be enforced (kill margin ms before
 * its end), or INT64_MAX when there is no lease to enforce. */
static int64_t
guard_lease_left(const struct guard_state *g, int64_t now)
{
	if (g->end == GUARD_NO_LEASE || g->end == GUARD_SUSPENDED)
		return INT64_MAX;
	return g->end - g->margin - now;
}

/* The guard with a process of its own: enforce g until the stand-down,
 * then exit; kill the command's tree when the lease ends or redlock is
 * gone. */
static void
guard_main(struct guard_state *g)
{
	struct pollfd p = { .events = POLLIN };
	char mark[GUARD_MARK_LEN];
	int r;

	p.fd = g->fd = guard_detach(g->fd);
	while (!g->lost) {
		int64_t left = -1;	/* no lease: wait for a message */

		if (g->end == GUARD_SUSPENDED) {
			/* A stopped redlock acts on SIGTERM or SIGHUP once
			 * continued; it says what comes next when it has. */
			if (term_pending(g->redlock)) {
				kill(g->redlock, SIGCONT);
				g->end = GUARD_NO_LEASE;
			} else
				left = GUARD_WAKE_POLL_MS;
		} else if ((left = guard_lease_left(g, clock_ms())) <= 0)
			break;
		else if (left == INT64_MAX)
			left = -1;
		if (poll(&p, 1, left < 0 ? -1 : left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		if ((r = guard_read(g)) > 0)
			_exit(0);
		g->lost = r < 0;
	}
	guard_set_mark(mark, g->token);
	guard_kill(g->command, mark, g->redlock);
	_exit(g->lost ? 0 : GUARD_FIRED_EXIT);
}

/* Append v in decimal and a space at *p. */
static void
put_num(char **p, int64_t v)
{
	*p += fmt_ll(*p, v);
	*(*p)++ = ' ';
}

/* Become a guard with a process of its own: exec redlock again (the
 * binary this process runs, even if it has been replaced on disk since)
 * with g in GUARD_ENV, for guard_exec_main().  Returns only if the exec
 * failed.  Calls memcpy(), fcntl() and execve() only: a guard that
 * shares redlock's memory calls it. */
static void
guard_exec(struct guard_state *g)
{
	char env[sizeof(GUARD_ENV) + 6 * (size_t)GUARD_NUM_LEN + GUARD_TOKEN_MAX + 1];
	char *p = env;
	char *argv[] = { GUARD_ARGV0, NULL }, *envp[] = { env, NULL };

	memcpy(p, GUARD_ENV "=", sizeof(GUARD_ENV));
	p += sizeof(GUARD_ENV);
	put_num(&p, g->fd);
	put_num(&p, g->command);
	put_num(&p, g->redlock);
	put_num(&p, g->margin);
	put_num(&p, g->end);
	put_num(&p, g->lost);
	memcpy(p, g->token, GUARD_TOKEN_MAX + 1);	/* NUL-terminated */
	fcntl(g->fd, F_SETFD, 0);
	execve("/proc/self/exe", argv, envp);
}

/*
 * The guard while it shares redlock's memory (guard_start()): system
 * calls only, on its own stack; its state is g, which redlock no longer
 * touches.  Whatever is more than waiting for a message (the tree to
 * kill, a suspended redlock to watch) and the end of GUARD_SHARED_MS
 * make it exec a guard of its own.  If that exec fails it goes on
 * sharing, and kills what it can without /proc: the command's group
 * and the command.
 */
static int
guard_shared(void *arg)
{
	struct guard_state *g = arg;
	struct pollfd p = { .events = POLLIN };
	int64_t until = clock_ms() + GUARD_SHARED_MS;
	sigset_t none;
	int r, stuck = 0;

	p.fd = g->fd = guard_detach(g->fd);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (;;) {
		int64_t now = clock_ms(), left = until - now;
		int64_t lease = guard_lease_left(g, now);

		if (lease <= 0)
			break;
		if (!stuck && (left <= 0 || g->end == GUARD_SUSPENDED)) {
			guard_exec(g);
			stuck = 1;	/* keep enforcing the lease */
		}
		if (stuck || left > 60000)
			left = 60000;
		if (lease < left)
			left = lease;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if ((r = guard_read(g)) > 0)
			_exit(0);
		if (r < 0) {
			g->lost = 1;
			break;
		}
	}
	guard_exec(g);
	if (g->command > 0) {
		kill(-g->command, SIGKILL);
		kill(g->command, SIGKILL);
	}
	_exit(0);
}

/*
 * The entry of a guard that a sharing one exec'd: main() calls this
 * first.  Returns at once unless this process is such a guard (argv[0]
 * GUARD_ARGV0 and its state in GUARD_ENV); otherwise never returns.
 */
void
guard_exec_main(int argc, char **argv)
{
	struct guard_state g = { 0 };
	const char *s;
	char *end;
	long long v[6];

	if (argc != 1 || strcmp(argv[0], GUARD_ARGV0) != 0 ||
	    (s = getenv(GUARD_ENV)) == NULL)
		return;
	for (int i = 0; i < 6; i++) {
		v[i] = strtoll(s, &end, 10);
		if (end == s || *end != ' ')
			return;
		s = end + 1;
	}
	g.fd = (int)v[0];
	g.command = (pid_t)v[1];
	g.redlock = (pid_t)v[2];
	g.margin = v[3];
	g.end = v[4];
	g.lost = v[5] != 0;
	snprintf(g.token, sizeof(g.token), "%s", s);
	unsetenv(GUARD_ENV);
	guard_main(&g);
}

/* Clone a guard that shares our memory, with every signal blocked until
 * it has ignored them (a signal meant for us must not run our handlers
 * on its stack).  Returns its pid, or -1. */
static pid_t
guard_clone(struct guard_state *g)
{
	sigset_t all, old;
	pid_t pid;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = clone(guard_shared, shared_stack + sizeof(shared_stack),
	    CLONE_VM | SIGCHLD, g);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

/* May this guard share our memory (see the top of this file)? */
static int
guard_may_share(void)
{
	return GUARD_CAN_SHARE && !shared_used && getenv("LD_PRELOAD") == NULL;
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
	struct guard_state own = { 0 };
	struct guard_state *g = guard_may_share() ? &shared_state : &own;
	int gp[2];

	*guard = 0;
	*fd = -1;
	if (pipe2(gp, O_CLOEXEC) < 0)
		return -1;
	/* No token (a re-entrant run): the token is our parent's, and so
	 * are the processes that carry it. */
	*g = (struct guard_state){ .fd = gp[0], .redlock = getpid(),
	    .margin = margin, .end = end };
	if (token != NULL)
		fmt_cat(g->token, sizeof(g->token), token, (char *)NULL);
	*guard = -1;
	if (g == &shared_state && (*guard = guard_clone(g)) > 0)
		shared_used = 1;
	if (*guard < 0)
		*guard = fork();
	if (*guard < 0) {
		close(gp[0]);
		close(gp[1]);
		*guard = 0;
		return -1;
	}
	if (*guard == 0) {
		close(gp[1]);
		guard_main(g);
	}
	/* Also from here: no window in which the guard could still be in
	 * our group. */
	setpgid(*guard, *guard);
	close(gp[0]);
	*fd = gp[1];
	return 0;
}

/* Start a guard in the place of one that is gone, on its descriptor fd,
 * told the command, token and lease end; it execs at once (guard_exec()),
 * so threads may run meanwhile.  Returns 0 with *guard set, or -1. */
int
guard_again(pid_t *guard, int fd, pid_t command, const char *token,
    int64_t margin, int64_t end)
{
	struct guard_state g = { .command = command, .redlock = getpid(),
	    .margin = margin, .end = end };
	int gp[2];

	if (token != NULL)
		fmt_cat(g.token, sizeof(g.token), token, (char *)NULL);
	if (pipe2(gp, O_CLOEXEC) < 0)
		return -1;
	g.fd = gp[0];
	if ((*guard = fork()) == 0) {
		guard_exec(&g);
		_exit(127);
	}
	close(gp[0]);
	if (*guard > 0)
		setpgid(*guard, *guard);
	if (*guard < 0 || dup3(gp[1], fd, O_CLOEXEC) < 0) {
		close(gp[1]);
		*guard = 0;
		return -1;
	}
	close(gp[1]);
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

/* How long guard_reap() waits: the guard's last rounds of killing the
 * command's tree, on a loaded machine, with time to spare. */
#define GUARD_REAP_MS 2000

/*
 * In a sanitizer build, wait until the guard (pid guard, stood down)
 * has exited, at most GUARD_REAP_MS.  LeakSanitizer's check at
 * redlock's exit runs in a child of redlock, which a guard still
 * killing the command's tree (a lease that ran out) takes for one of
 * the tree's processes and kills; the check then waits for that child
 * forever.  Other builds have no such child: they return at once, and
 * the guard exits by itself.
 */
void
guard_reap(pid_t guard)
{
#if !GUARD_CAN_SHARE
	struct timespec ms = { 0, 1000000 };
	int64_t end = clock_ms() + GUARD_REAP_MS;

	while (guard > 0 && waitpid(guard, NULL, WNOHANG) == 0 &&
	    clock_ms() < end)
		nanosleep(&ms, NULL);
#else
	(void)guard;
#endif
}
