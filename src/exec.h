/* exec.h - one request on each of several connections at once, and
 * what became of each (exec.c) */
#ifndef REDLOCK_EXEC_H
#define REDLOCK_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* One command for one connection, and what became of it. */
struct conn_req {
	int argc;		/* 0: nothing to send on this connection */
	const char **argv;
	const size_t *argvlen;
	redisReply *reply;	/* set on success; the caller frees it */
	char err[320];		/* set when reply is NULL: "NAME: why" */
	int reason;		/* err + reason: the why alone */
	enum conn_fail fail;	/* set when reply is NULL */
	int timed_out;		/* no answer by the deadline */
	int sent;		/* written out in full: it may have run */
};

/* Has a quorum decided?  Then conn_exec_until() stops waiting. */
typedef int conn_settled_fn(const struct conn_req *r, int n);

int conn_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd);
int conn_exec_until(struct conn *c, struct conn_req *r, int n,
    int64_t deadline, int intr_fd, conn_settled_fn *settled);
void conn_req_clear(struct conn_req *r, int n);
int conn_req_replies(const struct conn_req *r, int n);

/* Work to do while the next requests are on their way: see exec.c. */
typedef void conn_meanwhile_fn(void *arg);
void conn_exec_meanwhile(conn_meanwhile_fn *fn, void *arg);

#endif
