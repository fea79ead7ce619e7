/* inspect.h - the operators' view of a lock, whoever holds it */
#ifndef REDLOCK_INSPECT_H
#define REDLOCK_INSPECT_H

#include "lock.h"

/* One server's view of a lock, for status, list and break. */
struct lock_view {
	int answered;
	int held;
	char token[72];		/* the value, as far as it fits */
	long long pttl;		/* -1: no expiry */
	int has_meta;
	struct lock_meta meta;
	long long fence;
};

int inspect_lock(struct lock *l, struct lock_view *v, int remove,
    struct lock_outcome *o);
int inspect_forget_fence(struct lock *l, struct lock_outcome *o);
const struct lock_view *inspect_agreed(const struct lock *l,
    const struct lock_view *v);

#endif
