/* fair.h - a fair queue of waiters (--fair): its protocol (fair.c);
 * waiting in it is wait.c's */
#ifndef REDLOCK_FAIR_H
#define REDLOCK_FAIR_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

/*
 * How often a waiter renews its place, at least: the longest it blocks
 * between two renewals.  Well under FAIR_LEASE_MS (fair.c), so that a
 * live waiter never lapses, even with a slow round trip or two.
 */
#define FAIR_RENEW_MS 250

/* A waiter's place in the queue, for the length of one wait. */
struct fair_waiter {
	char member[LOCK_TOKEN_LEN + 2];	/* 'x' or 's', then an id */
	char *key[4];		/* queue, leases, metadata, own wake list */
	size_t len[4];
	char meta[sizeof(struct lock_meta)];	/* host \0 pid \0 user */
	size_t metalen;
	long long arrival;	/* agreed by a quorum (server us); 0: not yet */
	int go;			/* a quorum said it may take NAME */
	int pos;		/* its place, from 1; 0: not known */
	int64_t renewed;	/* clock_ms() when the last renewal that a
				 * quorum took was sent */
};

/* One waiter of a queue, as status shows it. */
struct fair_entry {
	int shared;
	char host[256], user[64];
	long pid;
	long long since_ms;	/* wall clock (the server's) */
};

/* The queue as one server sees it: its first FAIR_VIEW_MAX waiters
 * (src/lua/fair.lua's view), in order. */
#define FAIR_VIEW_MAX 100
struct fair_view {
	int count;		/* waiters in all */
	long long now_ms;	/* the server's clock */
	int n;
	struct fair_entry *e;	/* n of them; fair_view_free() */
};

int fair_begin(const struct lock *l, struct fair_waiter *f);
void fair_end(struct fair_waiter *f);
int fair_enter(const struct lock *l, struct fair_waiter *f, int intr_fd,
    struct lock_outcome *o);
int fair_fresh(const struct fair_waiter *f, int64_t ms);
void fair_leave(const struct lock *l, struct fair_waiter *f);
void fair_leave_granted(const struct lock *l, struct fair_waiter *f);
int fair_view(const struct lock *l, struct fair_view *v);
void fair_view_free(struct fair_view *v);

#endif
