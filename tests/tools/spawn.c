/*
 * tests/tools/spawn.c - the suite's launcher for background jobs
 * ("$SPAWN" in tests/helpers.bash): spawn CMD [ARG...] runs CMD with
 * every signal at its default disposition and none blocked, in a new
 * session (so that teardown can kill the job's whole process group),
 * with every descriptor above 2 closed.  bash makes a background job
 * ignore SIGINT and SIGQUIT, and python ignores SIGPIPE: the tests check
 * what the caller's signals look like, so a job must start clean.
 *
 * The same as the Python script that tests/helpers.bash writes when this
 * is not built, without the interpreter's start-up (about 25 ms of CPU;
 * the suite starts hundreds of jobs).  Test tooling: never installed.
 * Exits 127 if CMD cannot be run, 126 if it cannot be executed, 71 if
 * the session cannot be made.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * spawn_close_from_3(): closes every descriptor above 2; the directory
 * stream's own is skipped while it is read, and goes with closedir().
 */
static void
spawn_close_from_3(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long fd, max;

	if (d == NULL) {
		max = sysconf(_SC_OPEN_MAX);
		for (fd = 3; fd < max; fd++)
			close((int)fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		fd = strtol(e->d_name, NULL, 10);
		if (fd > 2 && fd != dirfd(d))
			close((int)fd);
	}
	closedir(d);
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t none;
	int s;

	if (argc < 2) {
		fputs("usage: spawn CMD [ARG...]\n", stderr);
		return 64;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL); /* SIGKILL, SIGSTOP: refused, harmless */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0) {
		fprintf(stderr, "spawn: setsid: %s\n", strerror(errno));
		return 71;
	}
	spawn_close_from_3();
	execvp(argv[1], argv + 1);
	fprintf(stderr, "spawn: %s: %s\n", argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
