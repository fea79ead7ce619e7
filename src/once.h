/* once.h - --once-per: at most one successful run of NAME a period */
#ifndef REDLOCK_ONCE_H
#define REDLOCK_ONCE_H

#include "config.h"
#include "lock.h"

int once_skip(const struct config *c, struct lock *l, int held);
int once_mark(const struct config *c, struct lock *l);

#endif
