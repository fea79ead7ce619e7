/*
 * pairtime - wall time of several commands run in turn, one run of each
 * a round, for row A of bench/run.sh: a machine whose speed drifts over
 * a run (these are shared) then slows every command of a round alike,
 * and a ratio taken round by round cancels the drift, where blocks of
 * runs of one command at a time (hyperfine) do not.
 *
 *   pairtime ROUNDS WARMUP LIMIT-S OUTDIR -- CMD [ARG...] [-- CMD ...]...
 *
 * Runs WARMUP rounds not recorded, then ROUNDS rounds, each command once
 * a round, the order rotating by one each round so that no command
 * always follows the same one; stops early once LIMIT-S seconds have
 * passed.  Each command runs with stdin, stdout and stderr on /dev/null
 * and its wall time (fork to reaped) in ms, one line a round, goes to
 * OUTDIR/I.ms (I: 0 for the first command).  Exit status 0, 1 when a
 * command failed (its round is not recorded), 64 usage.  Not installed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 16

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Run argv with its standard streams on fd devnull; its wall time in
 * ms, or -1 when it did not exit 0. */
static double
timed(char **argv, int devnull)
{
	double start = now_ms();
	int status;
	pid_t p = fork();

	if (p == 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (p < 0 || waitpid(p, &status, 0) != p)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return now_ms() - start;
}

int
main(int argc, char **argv)
{
	char **cmd[MAX_CMDS], path[4096];
	FILE *out[MAX_CMDS];
	double t[MAX_CMDS], deadline;
	int k = 0, rounds, warm, failed = 0, devnull;

	if (argc < 7 || strcmp(argv[5], "--") != 0) {
		fprintf(stderr, "usage: pairtime ROUNDS WARMUP LIMIT-S OUTDIR -- CMD... [-- CMD...]...\n");
		return 64;
	}
	rounds = atoi(argv[1]);
	warm = atoi(argv[2]);
	deadline = now_ms() + atof(argv[3]) * 1e3;
	for (int i = 5; i < argc; i++) {
		if (strcmp(argv[i], "--") != 0)
			continue;
		argv[i] = NULL;
		if (i + 1 < argc && k < MAX_CMDS)
			cmd[k++] = &argv[i + 1];
	}
	devnull = open("/dev/null", O_RDWR);
	if (k == 0 || devnull < 0)
		return 64;
	for (int j = 0; j < k; j++) {
		snprintf(path, sizeof(path), "%s/%d.ms", argv[4], j);
		if ((out[j] = fopen(path, "w")) == NULL) {
			perror(path);
			return 64;
		}
	}
	for (int r = 0; r < warm + rounds && now_ms() < deadline; r++) {
		int ok = 1;

		for (int j = 0; j < k; j++) {
			int c = (r + j) % k;

			t[c] = timed(cmd[c], devnull);
			ok &= t[c] >= 0;
		}
		if (!ok) {
			failed = 1;
			continue;
		}
		for (int c = 0; c < k && r >= warm; c++)
			fprintf(out[c], "%.6f\n", t[c]);
	}
	for (int j = 0; j < k; j++)
		fclose(out[j]);
	return failed;
}
