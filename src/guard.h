/* guard.h - the guard process: the command never outlives redlock */
#ifndef REDLOCK_GUARD_H
#define REDLOCK_GUARD_H

#include <stdint.h>
#include <sys/types.h>

/* A lease end that tells the guard there is no lease to enforce (no
 * lock of ours, --on-lost ignore, or the whole job is suspended). */
#define GUARD_NO_LEASE INT64_MAX

/* No lease to enforce because redlock stopped itself with the job: the
 * guard continues it (SIGCONT) when a SIGTERM or SIGHUP is pending for
 * it, which a stopped process would otherwise never act on. */
#define GUARD_SUSPENDED (INT64_MAX - 1)

/* Followed by GUARD_TOKEN_MAX bytes: the token that the command's
 * processes carry from now on (a waiter's token changes with every
 * attempt), NUL-padded; empty for none (a re-entrant run, whose token
 * is an enclosing redlock's). */
#define GUARD_MARK (INT64_MAX - 2)
#define GUARD_TOKEN_MAX 48

/* The guard's exit status once it enforced a lease end (it killed the
 * command's tree); 0 after a stand-down, or when redlock was gone. */
#define GUARD_FIRED_EXIT 3

void guard_exec_main(int argc, char **argv);
int guard_start(pid_t *guard, int *fd, const char *token, int64_t margin,
    int64_t end);
int guard_again(pid_t *guard, int fd, pid_t command, const char *token,
    int64_t margin, int64_t end);
void guard_command(int fd, pid_t command);
void guard_mark(int fd, const char *token, int64_t end);
void guard_lease(int fd, int64_t end);
void guard_stop(int *fd);
void guard_reap(pid_t guard);

#endif
