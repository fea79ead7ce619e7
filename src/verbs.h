/* verbs.h - the terminal verbs: acquire, release, extend, status, list, break */
#ifndef REDLOCK_VERBS_H
#define REDLOCK_VERBS_H

#include "config.h"
#include "lock.h"

int verbs_run(const struct config *c, struct lock *l);
void meta_fill(struct lock_meta *m, const struct config *c, long pid);
int main_not_acquired(const struct config *c, const struct lock *l,
    enum lock_result res);

#endif
