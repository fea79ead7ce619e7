/* lock.h - the lock protocol over one or more independent servers */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

#define LOCK_TOKEN_LEN 36

enum lock_result {
	LOCK_HELD,		/* granted by a quorum with validity left */
	LOCK_REENTRANT,		/* already held by one of REDLOCK_HELD's tokens */
	LOCK_BUSY,		/* held by someone else */
	LOCK_UNAVAILABLE,	/* too few servers answered */
	LOCK_INTERRUPTED	/* a signal arrived (intr_fd readable) */
};

/* Who wrote the lock and when: stored beside it, expiring with it. */
struct lock_meta {
	char host[256];
	long pid;
	char user[64];
	char cmd[256];
	int64_t start_ms;	/* wall clock */
};

struct lock {
	struct conn *conns;	/* main thread's connections, one a server */
	int n, quorum;
	char *key, *fence_key, *meta_key, *wake_key;
	size_t keylen, fence_keylen, meta_keylen, wake_keylen;
	const char *name;
	size_t namelen;
	char token[LOCK_TOKEN_LEN + 1];
	int64_t ttl;
	int64_t op_timeout;	/* per-command deadline for one attempt */
	int brief;		/* release and extend: one op_timeout try */
	int slow;		/* the last attempt had a server time out */
	long long fence;
	char (*run_id)[48];	/* per server, as seen when granted */
	int64_t sent_at;	/* clock_ms() when the winning attempt was sent */
	int64_t granted_at;	/* clock_ms() when its replies were in */
	int64_t busy_pttl;	/* after LOCK_BUSY: shortest TTL left, -1 none */
	const char *held;	/* tokens inherited from REDLOCK_HELD, or NULL */
	struct lock_meta meta;
	char err[384];		/* after LOCK_UNAVAILABLE: why */
};

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

int lock_init(struct lock *l, struct conn *conns, int n, const char *prefix,
    const char *name, int64_t ttl);
void lock_free(struct lock *l);
int64_t lock_lease_end(const struct lock *l, int64_t sent);
enum lock_result lock_try(struct lock *l, int intr_fd);
enum lock_result lock_acquire(struct lock *l, int64_t wait, int intr_fd);
int lock_renew(const struct lock *l, struct conn *conns, char (*run_id)[48],
    int64_t deadline, int *lost, char *why, size_t whylen);
int lock_release(struct lock *l, const char *token, int64_t keep_ms,
    int *others);
int lock_extend(struct lock *l, const char *token, int *others);
int lock_inspect(struct lock *l, struct lock_view *v, int remove);
int lock_forget_fence(struct lock *l);
int lock_held_by_parent(const struct lock *l, const char *token);

#endif
