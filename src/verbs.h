/* verbs.h - the terminal verbs (SPEC section 6) */
#ifndef REDLOCK_VERBS_H
#define REDLOCK_VERBS_H

#include "config.h"
#include "lock.h"

int verbs_run(const struct config *c, struct lock *l, int *die_by);
int verbs_not_acquired(const struct config *c, enum lock_result res,
    const struct lock_outcome *o, int *die_by);
int status_show(const struct config *c, struct lock *l);
int status_list(const struct config *c, struct lock *l);
void verbs_conflict(const struct config *c, const char *msg);
int stop_run(const struct config *c, struct lock *l, int *die_by);
int runs_show(const struct config *c, struct lock *l);

#endif
