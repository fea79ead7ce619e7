/* run.h - the run form: acquire, run the command, release */
#ifndef REDLOCK_RUN_H
#define REDLOCK_RUN_H

#include "config.h"
#include "lock.h"

int run_command(const struct config *c, struct lock *l, int *die_by);

#endif
