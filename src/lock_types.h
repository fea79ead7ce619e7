/* lock_types.h - the types the lock's family shares: what a lock is
 * (struct lock, with its struct lock_policy), what an attempt returns
 * (struct grant), what a release needs (struct release), a waiter's
 * place in its queues and the state of its wait, and what became of an
 * operation.  lock.c takes the lock; hold.c, holder.c and failover.c
 * work on the same types, which is why they live here and not in
 * lock.h: those files' headers include this one, and lock.c includes
 * theirs, with no header including its includer back.  Who owns each
 * and for how long: doc/DESIGN.md, 2.1. */
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

/*
 * How the lock is taken and held: the options that say so, set once
 * with the lock (lock_setup()) and read everywhere after.  --replace is
 * not here: whether a wait claims NAME is the waiter's (struct
 * lock_waiter), since only the first round of --respawn claims it.
 */
struct lock_policy {
	const char *held;	/* tokens inherited from REDLOCK_HELD, or NULL */
	int shared;		/* -s or --limit: a shared hold */
	long limit;		/* --limit N, or 0: any number of shared holders */
	/* Scheduling (SCHEDULING in redlock-scheduling(7); proto.c says
	 * how the servers keep it). */
	int64_t delay;		/* --lock-delay: ms that a loss of our grant
				 * holds NAME back; recorded with the grant */
	int standby;		/* --respawn: our waiter ids say so */
	int fair;		/* --fair: wait in the queue (fair.c) */
};

/*
 * What a lock is, and who we are when we hold it: written by lock_init()
 * and lock_setup() only, and read through a const pointer everywhere
 * else.  What an attempt produces is a struct grant, the caller's; what
 * a wait keeps between attempts is its struct lock_waiter; what a
 * release needs is its struct release.
 */
struct lock {
	struct conn *conns;	/* one a server; not owned */
	int n, quorum;
	struct keys k;
	const char *name;
	size_t namelen;
	int64_t ttl;
	int64_t op_timeout;	/* per-command deadline for one attempt */
	struct lock_meta meta;	/* who we are (its start_ms is 0: a run's
				 * start is its grant's) */
	struct lock_policy policy;
};

/*
 * The grant, after LOCK_HELD or LOCK_REENTRANT: what an attempt
 * (lock_try(), lock_retake()) returns to its caller, the run or the
 * verb, which owns it.  A grant zeroed by construction is one that was
 * never held (fence 0).
 */
struct grant {
	char token[LOCK_TOKEN_LEN + 1];
	long long fence;
	int64_t sent_at;	/* clock_ms() when the winning attempt was sent
				 * (after lock_retake(), the renewal's) */
	int64_t granted_at;	/* clock_ms() when its replies were in */
	int64_t start_ms;	/* wall clock: the start its holder record
				 * shows (its attempt's send) */
};

/*
 * What a release needs beyond the lock (lock_release(); an extend and
 * an expiry take its token, brief and until): whose hold, how long to
 * leave it, how long to try, and a success of --once-per to record
 * with it.
 */
struct release {
	const char *token;
	int64_t keep_ms;	/* > 0: leave the lease to expire then
				 * (--min-hold) */
	int brief;		/* one short try: after a loss the servers
				 * may be unreachable */
	int64_t until;		/* try no longer (clock_ms(): the -w deadline
				 * of a wait that gives back a failed
				 * attempt); 0: none */
	int64_t done_period;	/* > 0: the release records a success of
				 * --once-per with this period */
	int64_t done_since;	/* clock_ms() when --once-per found the
				 * period open: the success is that
				 * period's (once.c) */
};

/*
 * A waiter's place in the lock's queues (proto.c says how the servers
 * keep them), and what else one wait keeps between its attempts: wait.c
 * owns it for the length of one wait, and each attempt of that wait
 * carries it (lock_try()).  An exclusive waiter is queued as a writer,
 * so that shared requests wait behind it.
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
	int64_t until;		/* the -w deadline (clock_ms()): no attempt
				 * waits past it; 0: none */
	int64_t start_ms;	/* wall clock when the last attempt was sent:
				 * the start of the holder record
				 * (grant.start_ms) */
	/* --replace (replace.c): whether this wait claims NAME ahead of the
	 * other waiters, and how the claim stands. */
	int claim;		/* 1: it does (until a later claim wins) */
	int claim_told;		/* what -v said of it */
	long long claim_since;	/* the claim's since, server ms (0: not
				 * asserted yet) */
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
	int answered;		/* release, extend: the servers that said
				 * whether the token holds the lock */
	char err[384];		/* why servers failed, for the message */
};

#endif
