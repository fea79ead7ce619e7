/* lock_types.h - the types the lock's family shares: what a lock is
 * (struct lock), a waiter's place in its queues, and what became of an
 * operation.  lock.c takes the lock; hold.c, holder.c and failover.c
 * work on the same types, which is why they live here and not in
 * lock.h: those files' headers include this one, and lock.c includes
 * theirs, with no header including its includer back. */
#ifndef REDLOCK_LOCK_TYPES_H
#define REDLOCK_LOCK_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "proto.h"

#define LOCK_TOKEN_LEN 36

enum lock_result {
	LOCK_HELD,		/* granted by a quorum with validity left */
	LOCK_REENTRANT,		/* already held by one of REDLOCK_HELD's tokens */
	LOCK_BUSY,		/* held by someone else */
	LOCK_UNAVAILABLE,	/* too few servers answered */
	LOCK_INTERRUPTED,	/* a signal arrived (intr_fd readable) */
	LOCK_SELF_SHARED	/* exclusive request, but one of REDLOCK_HELD's
				 * tokens holds the lock shared: it would wait
				 * for itself */
};

/* Who holds a lock and since when: stored beside it, expiring with it. */
struct lock_meta {
	char host[256];
	long pid;
	char user[64];
	char cmd[256];
	int64_t start_ms;	/* wall clock */
};

/* What a lock is, and who we are when we hold it.  Set up once. */
struct lock {
	struct conn *conns;	/* one a server; not owned */
	int n, quorum;
	struct keys k;
	const char *name;
	size_t namelen;
	int64_t ttl;
	int64_t op_timeout;	/* per-command deadline for one attempt */
	int64_t deadline;	/* no attempt waits past it (-w); -1: none */
	const char *held;	/* tokens inherited from REDLOCK_HELD, or NULL */
	struct lock_meta meta;
	int shared;		/* -s or --limit: a shared hold */
	long limit;		/* --limit N, or 0: any number of shared holders */
	/* Scheduling (SCHEDULING in redlock-scheduling(7); proto.c says how the servers keep
	 * it). */
	int64_t delay;		/* --lock-delay: ms that a loss of our grant
				 * holds NAME back; recorded with the grant */
	int replace;		/* --replace: claim NAME ahead of waiters */
	int replace_told;	/* what -v said of it (replace.c) */
	long long replace_since;	/* the claim's since, server ms (0:
					 * not asserted yet; replace.c) */
	int standby;		/* --respawn: our waiter ids say so */
	int fair;		/* --fair: wait in the queue (fair.c) */
	int64_t done_period;	/* > 0: the release records a success of
				 * --once-per with this period */
	int64_t done_since;	/* clock_ms() when --once-per found the
				 * period open: the success is that
				 * period's (once.c) */
	/* The grant, after LOCK_HELD or LOCK_REENTRANT. */
	char token[LOCK_TOKEN_LEN + 1];
	long long fence;
	int64_t sent_at;	/* clock_ms() when the winning attempt was sent */
	int64_t granted_at;	/* clock_ms() when its replies were in */
};

/*
 * A waiter's place in the lock's queues (proto.c says how the servers
 * keep them): wait.c owns it for the length of one wait, and each
 * attempt of that wait carries it (lock_try()).  An exclusive waiter is
 * queued as a writer, so that shared requests wait behind it.
 */
struct lock_waiter {
	char id[LOCK_TOKEN_LEN + 1];	/* the queue entry's id: the first
					 * attempt's token ('s' first for a
					 * --respawn standby) */
	int64_t queue_ms;	/* queue for this long when busy; 0: never */
	int64_t mark_ms;	/* a busy attempt marks that a waiter waits,
				 * for this long; 0: it will not wait */
	int queued;		/* entries (writers, waiters) may be on the
				 * servers */
	int woken;		/* this attempt follows a wake-up */
};

/* What became of one operation, beyond its return value. */
struct lock_outcome {
	int slow;		/* a server timed out */
	int64_t busy_pttl;	/* after LOCK_BUSY: shortest TTL left, -1 none */
	int stop;		/* renew, extend: an operator asked the holder
				 * to stop (redlock stop) */
	int self_shared;	/* acquire: an inherited token holds it shared */
	int64_t hold_ms;	/* after LOCK_BUSY: a server grants nothing for
				 * this long after a failover (failover.c),
				 * a lost holder's --lock-delay or a
				 * --replace claim (proto.c) */
	int fair_pos;		/* --fair: our place in the queue, from 1;
				 * 0: not known */
	char err[384];		/* why servers failed, for the message */
};

#endif
