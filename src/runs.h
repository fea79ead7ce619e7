/* runs.h - the run records of every NAME (redlock-monitoring(7)) */
#ifndef REDLOCK_RUNS_H
#define REDLOCK_RUNS_H

#include "config.h"
#include "lock.h"

int runs_show(const struct config *c, const struct lock *l);

#endif
