/* inspect.h - the operators' view of a lock, whoever holds it */
#ifndef REDLOCK_INSPECT_H
#define REDLOCK_INSPECT_H

#include "lock.h"

/* One server's view of a lock, for status, list and break.  Held
 * shared, the holders are views of their own (held, token, pttl, meta,
 * fence), and the lock's own pttl is that of its latest lease. */
struct lock_view {
	int answered;
	char why[160];		/* not answered: why, without the server's name */
	int held;
	char token[72];		/* the value, as far as it fits */
	char type[16];		/* not a string: the key's type ("list") */
	long long pttl;		/* -1: no expiry */
	int has_meta;
	struct lock_meta meta;
	long long fence;
	int shared;		/* held by shared holders */
	int nholders;
	struct lock_view *holders;	/* malloc'd; inspect_views_free() */
	struct lock_sched {	/* SCHEDULING in redlock-scheduling(7) */
		int waiters;	/* live waiters, standbys among them */
		int standbys;	/* --respawn waiters */
		long long delay_ms;	/* free: a lost holder's lock-delay left */
		long long now_ms;	/* the server's clock with delay_ms */
		long long claim_ms;	/* free: a --replace claim left */
	} sched;
};

int inspect_lock(const struct lock *l, struct lock_view *v, int remove,
    struct lock_outcome *o);
int inspect_forget_fence(const struct lock *l, struct lock_outcome *o);
void inspect_views_free(struct lock_view *v, int n);
const struct lock_view *inspect_agreed(const struct lock *l,
    const struct lock_view *v);
struct lock_sched inspect_sched(const struct lock *l,
    const struct lock_view *v);
const char *inspect_hold_words(const struct lock_sched *s, char *buf,
    size_t len);
int inspect_held_back(const struct lock *l, char *buf, size_t len);

#endif
