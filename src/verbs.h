/* verbs.h - the terminal verbs (the verbs in redlock(1)): verbs.c dispatches
 * them, status.c, stop.c and runs.c hold some */
#ifndef REDLOCK_VERBS_H
#define REDLOCK_VERBS_H

#include "config.h"
#include "lock.h"

void verbs_holder(const struct config *c, struct lock_meta *m);
int verbs_run(const struct config *c, const struct lock *l, int *die_by);

#endif
