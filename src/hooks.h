/* hooks.h - --on-start and --on-exit: shell commands told the outcome */
#ifndef REDLOCK_HOOKS_H
#define REDLOCK_HOOKS_H

#include <stdint.h>

/* A hook's time limit unless --hook-timeout says otherwise: a ping to a
 * monitor takes well under a second; one that hangs must not hold up a
 * cron job for long. */
#define HOOKS_DEFAULT_TIMEOUT_MS 5000

/* What a hook is told (REDLOCK_* variables in its environment). */
struct hook_info {
	const char *event;	/* "start" or "exit" */
	const char *name, *host, *run_id;
	long long fence;	/* 0: the lock was not obtained */
	const char *outcome;	/* exit: the outcome word; start: NULL */
	int exit_status;
	int64_t wait_ms, run_ms;
};

char **hooks_env(const struct hook_info *h);
int hooks_start(const char *cmd, char *const env[], int64_t timeout_ms);
int hooks_wait(int *fd, int64_t timeout_ms);
int hooks_exit(const char *cmd, char *const env[], int64_t timeout_ms,
    int end);

#endif
