/* status.h - status and list (the verbs in redlock(1)) */
#ifndef REDLOCK_STATUS_H
#define REDLOCK_STATUS_H

#include "config.h"
#include "lock.h"

int status_show(const struct config *c, const struct lock *l);
int status_list(const struct config *c, const struct lock *l);

#endif
