/* once.h - --once-per: at most one successful run of NAME a period */
#ifndef REDLOCK_ONCE_H
#define REDLOCK_ONCE_H

#include <stdint.h>

#include "config.h"
#include "lock.h"

int once_skip(const struct config *c, const struct lock *l,
    const struct grant *g, int held, int64_t *since);
int once_mark(const struct config *c, const struct lock *l,
    const struct grant *g, int64_t since);

#endif
