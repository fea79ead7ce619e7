/* sentinel.h - finding the master of a redis+sentinel:// URL */
#ifndef REDLOCK_SENTINEL_H
#define REDLOCK_SENTINEL_H

#include <stddef.h>

#include "conn.h"

int sentinel_open(struct conn *c, char *err, size_t errlen);

#endif
