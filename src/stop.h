/* stop.h - redlock stop (redlock(1), "redlock stop") */
#ifndef REDLOCK_STOP_H
#define REDLOCK_STOP_H

#include "config.h"
#include "lock.h"

int stop_run(const struct config *c, const struct lock *l, int *die_by);

#endif
