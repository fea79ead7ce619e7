/* scan.h - every key that matches a pattern, on every server of a lock
 * (scan.c) */
#ifndef REDLOCK_SCAN_H
#define REDLOCK_SCAN_H

#include <stddef.h>

#include "lock.h"

/* Called with each key found (a string element of SCAN's reply) and
 * the connection it was found on; a negative return (out of memory, or
 * what it read of the key did not come: the reason in err, errlen
 * bytes) ends the scan of that server, which then counts as not
 * answering. */
typedef int scan_fn(void *arg, struct conn *c, const redisReply *key,
    char *err, size_t errlen);

/* What to look for, and where each key goes. */
struct scan_req {
	const char *match;	/* SCAN's MATCH pattern, matchlen bytes */
	size_t matchlen;
	scan_fn *each;
	void *arg;
	/* A Redis Cluster's masters' connections, kept for the caller
	 * (nodes[i], nnodes[i] of them, for server i: free each with
	 * topology_masters_free()); NULL: freed after the scan. */
	struct conn **nodes;
	int *nnodes;
};

int scan_servers(const struct lock *l, const struct scan_req *q, char *err,
    size_t errlen);

#endif
