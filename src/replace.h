/* replace.h - --replace: take NAME over from whoever holds it */
#ifndef REDLOCK_REPLACE_H
#define REDLOCK_REPLACE_H

#include "lock.h"

void replace_claim(const struct lock *l, struct lock_waiter *w);

#endif
