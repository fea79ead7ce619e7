/* record.h - --record: NAME's last run, kept in Redis for the fleet */
#ifndef REDLOCK_RECORD_H
#define REDLOCK_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "outcome.h"

/* NAME's record as read back (status, list, runs). */
struct record {
	int found;
	char *name, *key;	/* malloc'd (record_free()), or NULL */
	size_t namelen, keylen;
	char host[256], user[64], outcome[16], success_host[256];
	long pid;
	int exit_status;
	long long fence, skips;
	int64_t start_ms, end_ms, duration_ms, wait_ms, success_ms, updated_ms;
	long long runs[OUTCOME_COUNT];
};

/* One run, as the run form writes it at its end. */
struct record_run {
	enum outcome outcome;
	int exit_status;
	int64_t run_ms;		/* how long the command ran; -1: it did not */
	int64_t wait_ms;	/* how long the lock was waited for */
	long long fence;	/* its grant's */
};

/* Who held NAME when an attempt found it busy. */
struct record_holder {
	int state;		/* 0 free now, 1 a redlock (below), 2 another
				 * client, 3 shared holders (below: the
				 * earliest of count, if known) */
	long long count;
	char host[256], user[64];
	long pid;
	int64_t start_ms;
};

int record_run(const struct lock *l, const struct record_run *run, char *err,
    size_t errlen);
long long record_skip(const struct lock *l, enum outcome o,
    struct record_holder *h, char *err, size_t errlen);
int record_read(const struct lock *l, struct record *rec);
int record_parse(const void *reply, struct record *rec);
void record_free(struct record *rec);
void record_text(const struct record *rec);
void record_json(const struct record *rec);
char *record_key(const char *key, size_t keylen, size_t *len);
void record_ago(int64_t ms, char *buf, size_t len);

#endif
