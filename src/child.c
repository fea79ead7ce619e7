/*
 * child.c - running the command: signal plumbing, fork/exec, reaping.
 *
 * Signal handlers only write the signal number to a self-pipe; the main
 * loop polls its read end along with everything else (the renewal
 * thread writes a 0 byte there to say "look at me").  Handlers are in
 * place before fork, so no signal is lost between fork and supervise.
 *
 * The command runs in its own process group so that a lost lock stops
 * the whole tree it started, background children included.  When
 * redlock runs in the foreground of a terminal the group is given the
 * terminal, so Ctrl-C and interactive programs behave as without us.
 */
#include "child.h"

#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int sigpipe_fd[2] = { -1, -1 };

static const int forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD
};

static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;

	(void)!write(sigpipe_fd[1], &b, 1);
	errno = saved;
}

/*
 * Create the self-pipe and install the handlers; SIGPIPE is ignored
 * (a server closing its socket must be an error, not our death).
 * Returns 0, or -1 with errno set.
 */
int
child_signals_init(void)
{
	struct sigaction sa;

	if (pipe2(sigpipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (sigaction(forwarded[i], &sa, NULL) < 0)
			return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The descriptor that becomes readable when a signal or event arrived. */
int
child_signal_fd(void)
{
	return sigpipe_fd[0];
}

/* Where the renewal thread writes its 0 byte. */
int
child_notify_fd(void)
{
	return sigpipe_fd[1];
}

/* The next byte from the self-pipe: a signal number, 0 for an event
 * from the renewal thread, or -1 when there is none. */
int
child_next_signal(void)
{
	unsigned char b;

	return read(sigpipe_fd[0], &b, 1) == 1 ? b : -1;
}

/*
 * In the child, between vfork and exec: undo what redlock set up.  Only
 * system calls here: the child borrows the parent's memory and stack.
 * Signals stay blocked until their handlers are back to the default.
 */
static void
child_setup(const struct child *ch)
{
	sigset_t none;

	setpgid(0, 0);
	if (ch->foreground) {
		signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpid());
	}
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		signal(forwarded[i], SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * Start argv with envp (PATH is searched as by the shell), in a process
 * group of its own.  vfork: no page tables are copied, and the parent
 * sleeps until the child has exec'd or failed.  exec's errno comes back
 * through a close-on-exec pipe, which also works where vfork is a plain
 * fork (valgrind).  Must be called before any thread exists.  Returns 0
 * when the command runs; -1 when it could not be started, with
 * ch->exec_errno set (the child has been reaped then).
 */
int
child_spawn(struct child *ch, char *const argv[], char *const envp[])
{
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	int ep[2], err = 0;
	ssize_t n;

	ch->exec_errno = 0;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		ch->exec_errno = errno;
		return -1;
	}
	ch->foreground = isatty(STDIN_FILENO) &&
	    tcgetpgrp(STDIN_FILENO) == getpgrp();
	/* Orphans of the command's tree come to us, not to init, so that
	 * we see when its background processes are gone. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* vfork, not posix_spawn: the child must also set PR_SET_PDEATHSIG,
	 * and it makes only system calls before exec, as glibc's own
	 * posix_spawn child does. */
	pid = vfork(); // NOLINT(clang-analyzer-security.insecureAPI.vfork)
	if (pid == 0) {
		child_setup(ch); // NOLINT(clang-analyzer-unix.Vfork)
		/* Nothing protects the command once redlock is gone; the
		 * guard also stops the rest of its process group then. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execvpe(argv[0], argv, envp);
		err = errno;
		(void)!write(ep[1], &err, sizeof(err));
		_exit(127);
	}
	if (pid < 0)
		err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(ep[1]);
	ch->pid = pid;
	if (pid > 0) {
		setpgid(pid, pid);	/* already done by the child; harmless */
		do
			n = read(ep[0], &err, sizeof(err));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(err))
			err = 0;
	}
	close(ep[0]);
	if (err != 0) {
		int status;
		ch->exec_errno = err;
		while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		ch->pid = 0;
		child_restore_terminal(ch);
		return -1;
	}
	return 0;
}

/* Send sig to the command's whole process group. */
void
child_signal(const struct child *ch, int sig)
{
	if (ch->pid <= 0)
		return;
	if (kill(-ch->pid, sig) < 0 && errno == ESRCH)
		kill(ch->pid, sig);
}

/*
 * Reap every child that ended: the command (then *status and *done are
 * set and 1 is returned), and the orphans of its tree, which the kernel
 * hands to redlock as their subreaper.  Returns 0 otherwise.
 */
int
child_reap(struct child *ch, int *status, int *done)
{
	int st, got = 0;
	pid_t r;

	while ((r = waitpid(-1, &st, WNOHANG)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == ch->pid) {
			*status = st;
			*done = got = 1;
		} else if (r == ch->guard)
			ch->guard = 0;
	}
	return got;
}

/* Is any process left in the command's process group? */
int
child_group_alive(const struct child *ch)
{
	return ch->pid > 0 && (kill(-ch->pid, 0) == 0 || errno == EPERM);
}

/* The shell's convention: the exit code, or 128 + the signal. */
int
child_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 70;
}

/* Take the terminal back from the command's group. */
void
child_restore_terminal(const struct child *ch)
{
	if (ch->foreground) {
		void (*old)(int) = signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpgrp());
		signal(SIGTTOU, old);
	}
}

/*
 * The guard: a small process forked from redlock that outlives it.  It
 * reads lease ends (int64_t clock_ms() values) from a pipe and SIGKILLs
 * the command's process group when one passes without a newer one, or
 * when the pipe reaches EOF without the stand-down message (redlock
 * died, even by SIGKILL).  So the command never outlives the lock
 * because redlock was killed or stopped.  A lease end of 0 stands down;
 * INT64_MAX means "no lease to enforce".
 */
static void
guard_main(int fd, pid_t pgid, int64_t margin)
{
	int64_t end = INT64_MAX, msg;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int null = open("/dev/null", O_RDWR);

	/* Hold nothing of the caller's: not its terminal, its pipes (a
	 * shell's $(...) would wait for them) or its Redis sockets. */
	for (int i = 0; i < 3; i++)
		if (null >= 0)
			dup2(null, i);
	if (fd != 3) {
		dup2(fd, 3);
		fd = p.fd = 3;
	}
	close_range(4, ~0U, 0);
	/* Signals meant for redlock's process group are not for us. */
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		signal(forwarded[i], forwarded[i] == SIGCHLD ? SIG_DFL : SIG_IGN);
	signal(SIGALRM, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	for (;;) {
		int64_t left = end == INT64_MAX ? -1 : end - margin - clock_ms();
		ssize_t n;

		if (end != INT64_MAX && left <= 0)
			break;
		if (poll(&p, 1, left < 0 ? -1 : left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		n = read(fd, &msg, sizeof(msg));
		if (n == (ssize_t)sizeof(msg) && msg == 0)
			_exit(0);
		if (n == (ssize_t)sizeof(msg))
			end = msg;
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
	}
	kill(-pgid, SIGKILL);
	_exit(0);
}

/*
 * Start the guard for the running command, killing it margin ms before
 * each lease end it is sent.  Call before any thread exists.  Returns
 * 0, or -1 (the run goes on unguarded, as with flock).
 */
int
child_guard_start(struct child *ch, int64_t margin)
{
	int gp[2];

	ch->guard = 0;
	ch->guard_fd = -1;
	if (pipe2(gp, O_CLOEXEC) < 0)
		return -1;
	ch->guard = fork();
	if (ch->guard < 0) {
		close(gp[0]);
		close(gp[1]);
		ch->guard = 0;
		return -1;
	}
	if (ch->guard == 0) {
		close(gp[1]);
		guard_main(gp[0], ch->pid, margin);
	}
	close(gp[0]);
	ch->guard_fd = gp[1];
	return 0;
}

/* Tell the guard a new lease end: see guard_main().  Async-safe. */
void
child_guard_lease(int fd, int64_t end)
{
	if (fd >= 0)
		(void)!write(fd, &end, sizeof(end));
}

/* Stand the guard down.  It exits at once; init reaps it if we exit
 * first, so there is no need to wait for it here. */
void
child_guard_stop(struct child *ch)
{
	if (ch->guard_fd < 0)
		return;
	child_guard_lease(ch->guard_fd, 0);
	close(ch->guard_fd);
	ch->guard_fd = -1;
}
