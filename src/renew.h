/* renew.h - the renewal thread */
#ifndef REDLOCK_RENEW_H
#define REDLOCK_RENEW_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

struct renew;

struct renew *renew_start(const struct lock *l, const struct grant *g,
    int notify_fd, int guard_fd);
int64_t renew_lease_end(struct renew *r);
int renew_lost(struct renew *r, char *why, size_t len);
int renew_stop_asked(struct renew *r);
int64_t renew_stop(struct renew *r);

#endif
