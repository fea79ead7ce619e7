/* refused.h - why the lock was not obtained (refused.c) */
#ifndef REDLOCK_REFUSED_H
#define REDLOCK_REFUSED_H

#include "config.h"
#include "lock.h"

int refused_report(const struct config *c, const struct lock *l,
    enum lock_result res, const struct lock_outcome *o, int *die_by);
void refused_conflict(const struct config *c, const char *msg);

#endif
