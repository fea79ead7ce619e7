/* quorum.h - one request on every server at once, counted against a
 * majority.  One server is a quorum of one. */
#ifndef REDLOCK_QUORUM_H
#define REDLOCK_QUORUM_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "proto.h"

/* How many servers make a majority of n. */
static inline int
quorum_of(int n)
{
	return n / 2 + 1;
}

/* The outcome of a round, decided from counts of its replies. */
enum verdict {
	VERDICT_PENDING,	/* replies still due could change it */
	VERDICT_YES,		/* a majority agreed */
	VERDICT_NO,		/* a majority answered, and not enough agreed */
	VERDICT_NONE		/* no majority answered: unavailable */
};

enum verdict quorum_decide(int n, int yes, int answered, int pending);
/* How a round of quorum_exec() runs; what a caller leaves zero is not
 * used (but intr_fd must be -1 for none). */
struct quorum_how {
	int64_t deadline;	/* a clock_ms() value */
	int intr_fd;		/* give up when it becomes readable; -1 never */
	conn_settled_fn *settled;	/* stop once the replies in hand decide;
					 * NULL: wait for every reply */
	const char *skip;	/* skip[i]: server i is not asked; NULL: none */
	char *err;		/* the first server's failure; NULL: unwanted */
	size_t errlen;
};

int quorum_exec(struct conn *conns, int n, struct args *a,
    struct conn_req *r, const struct quorum_how *how);
int quorum_distinct(struct conn *conns, int n, char *err, size_t errlen);
void quorum_note(const struct conn *c, const struct conn_req *r, char *err,
    size_t errlen);
void quorum_why(const struct conn_req *r, char *why, size_t len);
const redisReply *quorum_array(const struct conn *c, const struct conn_req *r,
    size_t n, char *err, size_t errlen);

#endif
