/*
 * child.c - running the command: fork/exec, its process tree, reaping,
 * and the terminal.
 *
 * The command runs in a process group of its own; when redlock runs in
 * the foreground of a terminal the group is given the terminal, so
 * Ctrl-C, Ctrl-Z and interactive programs reach it as without us.
 * Stopping the command stops its whole tree (tree.c), also the
 * processes that left the group.
 */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmt.h"
#include "clock.h"
#include "exit.h"
#include "sig.h"
#include "tree.h"

/* How many rounds of SIGKILL a tree that keeps forking gets. */
#define CHILD_KILL_ROUNDS 8

/*
 * In the child, between vfork and exec: a group of its own, the
 * terminal if redlock had it, the caller's signal dispositions.  Only
 * system calls here: the child borrows the parent's memory and stack.
 */
static void
child_setup(const struct child *ch)
{
	setpgid(0, 0);
	if (ch->foreground) {
		signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpid());
	}
	sig_child_defaults();
}

/*
 * The rest of the child's life between vfork and exec (system calls
 * only, as child_setup()): exec argv, or write why not to fd.
 */
static void __attribute__((noreturn))
child_exec(const struct child *ch, pid_t parent, char *const argv[],
    char *const envp[], int fd)
{
	int err;

	child_setup(ch);
	/* Nothing protects the command once redlock is gone; the guard
	 * also stops the rest of its tree then. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(EXIT_NOTFOUND);
	/* A redlock stopped before the vfork for longer than the lease:
	 * the guard has come and gone, so start nothing. */
	if (ch->exec_by != 0 && clock_ms() >= ch->exec_by)
		err = ETIME;
	else {
		execvpe(argv[0], argv, envp);
		err = errno;
	}
	(void)!write(fd, &err, sizeof(err));
	_exit(EXIT_NOTFOUND);
}

/* Is redlock in the foreground of the terminal on stdin? */
static int
in_foreground(void)
{
	return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

/*
 * Start argv with envp (PATH is searched as by the shell), in a process
 * group of its own.  vfork: no page tables are copied, and the parent
 * sleeps until the child has exec'd or failed.  exec's errno comes back
 * through a close-on-exec pipe, which also works where vfork is a plain
 * fork (valgrind).  Must be called before any thread exists.  Returns 0
 * when the command runs; -1 when it could not be started, with
 * ch->exec_errno set (the child has been reaped then): ETIME when
 * ch->exec_by had passed.
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
	ch->foreground = in_foreground();
	/* Orphans of the command's tree come to us, not to init, so that
	 * we can find and stop them, and see when they are gone. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* vfork, not posix_spawn: the child must also set PR_SET_PDEATHSIG,
	 * and it makes only system calls before exec, as glibc's own
	 * posix_spawn child does. */
	pid = vfork(); // NOLINT(clang-analyzer-security.insecureAPI.vfork)
	if (pid == 0)
		child_exec(ch, parent, argv, envp, ep[1]); // NOLINT(clang-analyzer-unix.Vfork)
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
		child_take_terminal(ch);
		return -1;
	}
	return 0;
}

/* Send sig once to every process of the command's tree: its process
 * group, then each process that left the group. */
void
child_signal(const struct child *ch, int sig)
{
	pid_t sent = ch->pid;

	if (ch->pid <= 0)
		return;
	/* No group (the command left it): the walk reaches the command. */
	if (kill(-ch->pid, sig) < 0)
		sent = 0;
	if (tree_signal(getpid(), ch->guard, sent, sig) < 0 && sent == 0)
		kill(ch->pid, sig);
}

/* SIGKILL the whole tree, again while it is still forking. */
void
child_kill_tree(const struct child *ch)
{
	if (ch->pid > 0)
		kill(-ch->pid, SIGKILL);
	for (int i = 0; i < CHILD_KILL_ROUNDS; i++)
		if (tree_signal(getpid(), ch->guard, 0, SIGKILL) <= 0)
			break;
}

/*
 * Is any process of the command's tree left?  Its topmost living
 * processes are our children (the command, or orphans handed to us as
 * subreaper), so our list of children answers without a walk: empty
 * but for the guard means the tree is gone.
 */
int
child_tree_alive(const struct child *ch)
{
	char path[64], buf[4096], self[FMT_LL_SIZE];
	siginfo_t si;
	ssize_t n;
	int fd;

	if (ch->pid > 0 && (kill(-ch->pid, 0) == 0 || errno == EPERM))
		return 1;
	memset(&si, 0, sizeof(si));
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return 0;	/* ECHILD: no children at all */
	fmt_ll(self, (long long)getpid());
	fmt_cat(path, sizeof(path), "/proc/self/task/", self, "/children",
	    (char *)NULL);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return tree_signal(getpid(), ch->guard, 0, 0) > 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* The kernel's list: decimal pids, each followed by a space.  Read
	 * by hand, not strtol(), for the plain run's pages (Makefile). */
	for (char *p = buf; *p >= '0' && *p <= '9';) {
		long pid = 0;

		while (*p >= '0' && *p <= '9')
			pid = pid * 10 + (*p++ - '0');
		if (pid > 0 && pid != (long)ch->guard)
			return 1;
		while (*p == ' ' || *p == '\n')
			p++;
	}
	return 0;
}

/*
 * Reap every child that ended: the command (then *status is set and
 * CHILD_EXITED returned), and the orphans of its tree, which the kernel
 * hands to redlock as their subreaper.  A command stopped by job control
 * is CHILD_STOPPED (*status says by what).  Else CHILD_NONE.
 */
enum child_event
child_reap(struct child *ch, int *status)
{
	enum child_event ev = CHILD_NONE;
	int st;
	pid_t r;

	while ((r = waitpid(-1, &st, WNOHANG | WUNTRACED)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == ch->pid && WIFSTOPPED(st)) {
			*status = st;
			ev = CHILD_STOPPED;
		} else if (r == ch->pid) {
			*status = st;
			return CHILD_EXITED;
		} else if (r == ch->guard) {
			ch->guard = 0;
			ch->guard_status = st;
		}
	}
	return ev;
}

/* The shell's convention: the exit code, or 128 + the signal. */
int
child_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return EXIT_SIGNAL_BASE + WTERMSIG(status);
	return EXIT_INTERNAL;
}

/* Take the terminal back from the command's group. */
void
child_take_terminal(const struct child *ch)
{
	if (ch->foreground) {
		void (*old)(int) = signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpgrp());
		signal(SIGTTOU, old);
	}
}

/* Give the terminal to the command's group again if redlock has it
 * (after fg, not after bg). */
void
child_give_terminal(struct child *ch)
{
	ch->foreground = in_foreground();
	if (ch->foreground) {
		void (*old)(int) = signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, ch->pid);
		signal(SIGTTOU, old);
	}
}
