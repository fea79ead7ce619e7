/*
 * sig.c - signal plumbing, in one place.
 *
 * Handlers only write the signal number to a self-pipe; the main loop
 * polls its read end along with everything else (the renewal thread
 * writes SIG_EVENT there).  Handlers are in place before fork, so no
 * signal is lost between fork and supervision.
 *
 * A signal that redlock was started with ignored (nohup, trap '' HUP,
 * SIGINT and SIGQUIT in a background job of a non-interactive shell)
 * stays ignored, in redlock and in the command, as coreutils timeout(1)
 * does: the caller asked for it.
 */
#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"

static int pipe_fd[2] = { -1, -1 };

/* Standard descriptors that were closed when we started (bit fd). */
static unsigned closed_std;

/* Signals handled: forwarded to the command, and SIGCHLD, on which
 * supervision looks at the command.  Beside the six of redlock(1) every
 * other signal whose default ends a process and that can be caught, so
 * that none ends a wait without taking back what it left in Redis
 * (timeout -s ALRM, a CPU or file size limit). */
static const int handled[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD,
	SIGALRM, SIGVTALRM, SIGPROF, SIGPWR, SIGXCPU, SIGXFSZ
};

/* The job-control stops that sig_catch_stops() catches while the
 * command runs. */
static const int stops[] = { SIGTSTP, SIGTTIN, SIGTTOU };

/* Are they caught now (sig_catch_stops())? */
static int catching_stops;

/* The last signal read from the self-pipe that asks redlock to end
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT): --respawn stops on it. */
static int end_asked;

/* Signals that were SIG_IGN at start-up (bit sig). */
static unsigned long long ignored_at_start;

static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;

	(void)!write(pipe_fd[1], &b, 1);
	errno = saved;
}

/*
 * Make descriptors 0, 1 and 2 safe before anything else opens a file:
 * a closed one gets /dev/null, close-on-exec, so that the self-pipe or
 * a socket never lands there (a diagnostic would then be read as
 * signals) and the command still finds it closed.  Returns 0, or -1.
 */
int
sig_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		int nul;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul < 0)
			return -1;
		if (nul != fd) {
			/* A lower descriptor was closed too and took it. */
			if (dup3(nul, fd, O_CLOEXEC) < 0)
				return -1;
			close(nul);
		}
		closed_std |= 1u << fd;
	}
	return 0;
}

/* Was descriptor fd (0-2) closed when we started? */
int
sig_std_was_closed(int fd)
{
	return fd >= 0 && fd < 3 && (closed_std & (1u << fd)) != 0;
}

/* Is sig one of handled[]? */
static int
sig_handled(int sig)
{
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		if (handled[i] == sig)
			return 1;
	return 0;
}

/* Was sig ignored when we started? */
int
sig_ignored(int sig)
{
	return sig > 0 && sig < 64 && (ignored_at_start >> sig & 1) != 0;
}

/*
 * Create the self-pipe and install the handlers, leaving alone the
 * signals that were ignored; SIGPIPE is ignored (a server closing its
 * socket must be an error, not our death).  Returns 0, or -1 with errno
 * set.
 */
int
sig_init(void)
{
	struct sigaction sa, old;

	if (pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) {
		int sig = handled[i];

		if (sigaction(sig, NULL, &old) < 0)
			return -1;
		if (old.sa_handler == SIG_IGN && sig != SIGCHLD) {
			ignored_at_start |= 1ULL << sig;
			continue;
		}
		if (sigaction(sig, &sa, NULL) < 0)
			return -1;
	}
	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		ignored_at_start |= 1ULL << SIGPIPE;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		if (sigaction(stops[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			ignored_at_start |= 1ULL << stops[i];
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* SIGTSTP, SIGTTIN or SIGTTOU (those not ignored at start) caught (on),
 * or back to their defaults.  While the command runs a job-control stop
 * sent to redlock alone (kill -TSTP %1: redlock's group, not the
 * command's, which has one of its own) must stop the command too: it
 * is forwarded to the command like any signal, whose stop then stops
 * redlock (supervise.c), as the terminal's Ctrl-Z does. */
static void
stops_set(int on)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on ? on_signal : SIG_DFL;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		if (!sig_ignored(stops[i]))
			sigaction(stops[i], &sa, NULL);
}

void
sig_catch_stops(int on)
{
	catching_stops = on;
	stops_set(on);
}

/* The descriptor that becomes readable when a signal or event arrived. */
int
sig_fd(void)
{
	return pipe_fd[0];
}

/* Where the renewal thread writes SIG_EVENT. */
int
sig_notify_fd(void)
{
	return pipe_fd[1];
}

/* The next byte from the self-pipe: a signal number, SIG_EVENT, or -1
 * when there is none. */
int
sig_next(void)
{
	unsigned char b;

	if (read(pipe_fd[0], &b, 1) != 1)
		return -1;
	if (sig_asks_end(b))
		end_asked = b;
	return b;
}

/* Does sig ask redlock to end, when no command runs to take it: SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT, or one of the others of handled[] but
 * SIGUSR1 and SIGUSR2 (which are for the command)? */
int
sig_asks_end(int sig)
{
	return sig != SIGUSR1 && sig != SIGUSR2 && sig != SIGCHLD &&
	    sig_handled(sig);
}

/*
 * Read the self-pipe dry while no command runs to take what it holds
 * (a --respawn standby waiting or pausing).  Returns the last signal
 * that asks redlock to end, or 0; the others (SIGUSR1, SIGUSR2, said
 * under -v; SIGCHLD, SIG_EVENT) are dropped.
 */
int
sig_drain(void)
{
	int sig, end = 0;

	while ((sig = sig_next()) >= 0)
		if (sig_asks_end(sig))
			end = sig;
		else if (sig == SIGUSR1 || sig == SIGUSR2)
			log_info("signal %d ignored: no command runs to take it",
			    sig);
	return end;
}

/* sig_drain(), for a standby whose wait a byte there interrupted: the
 * signal that asks redlock to end is written back to the pipe, for
 * whoever reports it (refused.c).  Returns it, or 0. */
int
sig_keep_end(void)
{
	int end = sig_drain();

	if (end != 0) {
		unsigned char b = (unsigned char)end;

		(void)!write(pipe_fd[1], &b, 1);
	}
	return end;
}

/* The last signal read by sig_next() that asks redlock to end (SIGINT,
 * SIGTERM, SIGHUP or SIGQUIT, forwarded to the command or not), or 0. */
int
sig_end_asked(void)
{
	return end_asked;
}

/*
 * In the command, between vfork and exec: the handled signals back to
 * their defaults except those ignored at start, SIGPIPE as we found it,
 * and an empty mask.  System calls only.
 */
void
sig_child_defaults(void)
{
	sigset_t none;

	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		signal(handled[i], sig_ignored(handled[i]) ? SIG_IGN : SIG_DFL);
	signal(SIGPIPE, sig_ignored(SIGPIPE) ? SIG_IGN : SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * Stop this process as a job-control stop by sig (SIGTSTP, SIGTTIN,
 * SIGTTOU), so that the shell sees the job stopped; returns when it is
 * continued.  SIGTERM and SIGHUP stay caught: a stopped process acts on
 * them only once continued, which the guard sees to (guard.c), so that
 * redlock ends the job as it would while running.
 */
void
sig_stop_self(int sig)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	/* Continued: by fg or bg, by the guard for a SIGTERM or SIGHUP
	 * that came meanwhile (still caught, it is handled now), or by the
	 * kernel after the terminal's hangup. */
	stops_set(catching_stops);
}

/*
 * Die of sig as the command did, so that the calling shell sees what
 * it would see without redlock: default disposition, no core dump,
 * unblocked, raised.  With group, sig goes to our whole process group:
 * the terminal's Ctrl-C reached only the command's group, which had the
 * terminal, and a script that ran us stops its loop only if it gets the
 * signal too (as it would have without redlock).  Returns only if that
 * did not kill us.
 */
void
sig_die_by(int sig, int group)
{
	struct rlimit none = { 0, 0 };
	sigset_t one;

	if (sig_ignored(sig))
		return;
	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	if (group)
		kill(0, sig);
	raise(sig);
}
