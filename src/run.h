/* run.h - the run form: acquire, run the command, release */
#ifndef REDLOCK_RUN_H
#define REDLOCK_RUN_H

#include "config.h"
#include "lock.h"

void run_holder(const struct config *c, struct lock_meta *m);
int run_command(const struct config *c, const struct lock *l, int claim,
    int64_t wait_since, struct grant *g, int *die_by);

#endif
