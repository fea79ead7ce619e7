/* guard.h - the guard process: the command never outlives redlock */
#ifndef REDLOCK_GUARD_H
#define REDLOCK_GUARD_H

#include <stdint.h>
#include <sys/types.h>

/* A lease end that tells the guard there is no lease to enforce (no
 * lock of ours, --on-lost ignore, or the whole job is suspended). */
#define GUARD_NO_LEASE INT64_MAX

int guard_start(pid_t *guard, int *fd, pid_t command, const char *token,
    int64_t margin);
void guard_lease(int fd, int64_t end);
void guard_stop(int *fd);

#endif
