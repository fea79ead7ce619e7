/* respawn.h - --respawn: a standby that runs the command whenever it
 * gets the lock, until it is signalled */
#ifndef REDLOCK_RESPAWN_H
#define REDLOCK_RESPAWN_H

#include "config.h"
#include "lock.h"

int respawn_run(const struct config *c, const struct lock *l, int *die_by);

#endif
