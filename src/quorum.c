/*
 * quorum.c - the broadcast-and-tally skeleton every lock operation
 * shares: one argument vector sent to every server at once, each reply
 * counted, and the first failure kept for the message.  Where each
 * request goes (a Sentinel's master, a Redis Cluster's redirections)
 * and a script the server does not know are the routing layer's
 * (route.c), so that a cluster is one server like any other.  What a
 * reply means is the caller's; whether enough servers said it is
 * quorum_decide()'s.
 */
#include "quorum.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "route.h"

/* How long the servers have to tell their run ids: a server slower than
 * this is not checked (a stopped server must not cost a second before
 * the lock operation's own timeout). */
#define QUORUM_DISTINCT_TIMEOUT_MS 250
/* Once a majority has told theirs, how long the rest still have: this,
 * or as long again as the majority took if that is longer.  Two URLs
 * of one server answer together, so the check loses nothing, and a
 * stopped minority delays an attempt (and -n) by this, not by the
 * whole timeout. */
#define QUORUM_DISTINCT_GRACE_MS 20

/*
 * The verdict of n servers of which `yes` agreed and `answered` (yes
 * included) gave a usable reply, with `pending` replies still due.
 * Busy is busy with a minority down: a majority that answered without
 * agreeing is NO, never NONE.
 */
enum verdict
quorum_decide(int n, int yes, int answered, int pending)
{
	int q = quorum_of(n);

	if (yes >= q)
		return VERDICT_YES;
	if (yes + pending >= q)
		return VERDICT_PENDING;
	if (answered >= q)
		return VERDICT_NO;
	return answered + pending >= q ? VERDICT_PENDING : VERDICT_NONE;
}

/* Keep why server c gave no usable reply in err, unless err already
 * holds a reason. */
void
quorum_note(const struct conn *c, const struct conn_req *r, char *err,
    size_t errlen)
{
	/* A reply that was no longer needed (conn_exec_until() settled
	 * without it) is no failure. */
	if (err == NULL || err[0] != '\0' ||
	    (r->reply == NULL && r->fail == CONN_FAIL_UNNEEDED))
		return;
	if (r->reply != NULL && r->reply->type == REDIS_REPLY_ERROR)
		snprintf(err, errlen, "%s: %s", c->name, r->reply->str);
	else if (r->reply != NULL)
		snprintf(err, errlen, "%s: unexpected reply", c->name);
	else
		snprintf(err, errlen, "%s", r->err);
}

/* Why a request r gave no usable reply, as quorum_note() says it but
 * without the server's name (status names it beside): its error reply,
 * or why the request failed. */
void
quorum_why(const struct conn_req *r, char *why, size_t len)
{
	if (r->reply != NULL && r->reply->type == REDIS_REPLY_ERROR)
		snprintf(why, len, "%s", r->reply->str);
	else if (r->reply != NULL)
		snprintf(why, len, "unexpected reply");
	else
		snprintf(why, len, "%s", r->err + r->reason);
}

/*
 * Server c's reply r if it is an array of n elements (n 0: of any
 * length), else NULL; a reply of another shape is noted in err as
 * unexpected (quorum_exec() has noted errors and silence already).
 */
const redisReply *
quorum_array(const struct conn *c, const struct conn_req *r, size_t n,
    char *err, size_t errlen)
{
	const redisReply *p = r->reply;

	if (p != NULL && p->type == REDIS_REPLY_ARRAY &&
	    (n == 0 || p->elements == n))
		return p;
	if (p != NULL && p->type != REDIS_REPLY_ERROR)
		quorum_note(c, r, err, errlen);
	return NULL;
}

/*
 * Send a to every server i not skipped (how->skip) and collect the
 * replies into r[0..n) until how->deadline, or until how->settled(r, n)
 * says the replies in hand decide the matter: route_send(), which finds
 * each server's answer wherever it is (a may be changed to its EVAL
 * form).  how->err gets the first server's failure.  Returns -1 when
 * how->intr_fd became readable, else the number of replies; the caller
 * frees them with conn_req_clear().
 */
int
quorum_exec(struct conn *conns, int n, struct args *a, struct conn_req *r,
    const struct quorum_how *how)
{
	const struct route_how to = { how->deadline, how->intr_fd,
	    how->settled, how->skip };
	int rc = route_send(conns, n, a, r, &to);

	for (int i = 0; i < n; i++)
		if (r[i].argc > 0 && (r[i].reply == NULL ||
		    r[i].reply->type == REDIS_REPLY_ERROR))
			quorum_note(&conns[i], &r[i], how->err, how->errlen);
	return rc < 0 ? -1 : conn_req_replies(r, n);
}

/* The run_id field of an INFO server reply, copied into id (or ""). */
static void
run_id_of(const redisReply *p, char *id, size_t len)
{
	const char *s;

	id[0] = '\0';
	if (p == NULL || p->type != REDIS_REPLY_STRING ||
	    (s = strstr(p->str, "run_id:")) == NULL)
		return;
	s += 7;
	snprintf(id, len, "%.*s", (int)strcspn(s, "\r\n"), s);
}

/* The run id round's clock (quorum_distinct() runs on the main thread
 * alone, before anything else is started): when it began, and when a
 * majority had answered (0: not yet). */
static int64_t distinct_began, distinct_majority;

/* conn_exec_until()'s question for the run id round: have all answered,
 * or a majority and the grace after it (QUORUM_DISTINCT_GRACE_MS) run
 * out? */
static int
distinct_settled(const struct conn_req *r, int n)
{
	int64_t now = clock_ms(), grace;
	int got = conn_req_replies(r, n);

	if (got < n / 2 + 1)
		return 0;
	if (distinct_majority == 0)
		distinct_majority = now;
	grace = distinct_majority - distinct_began;
	if (grace < QUORUM_DISTINCT_GRACE_MS)
		grace = QUORUM_DISTINCT_GRACE_MS;
	return got == n || now - distinct_majority >= grace;
}

/*
 * Several URLs must be several servers: a majority of the same server
 * twice is no majority.  Several nodes of one Redis Cluster are one
 * server of the quorum, the cluster, and the first of them to answer
 * turns to the others when its node cannot be reached
 * (route_merge()).  Asks every server its run id (INFO server, one
 * round, only with several URLs; a second round only for cluster
 * nodes).  Returns how many servers conns[0..) holds now, or -1 with
 * the two servers named in err; servers that do not answer in time
 * (distinct_settled()) are left to the operation that follows.
 */
int
quorum_distinct(struct conn *conns, int n, char *err, size_t errlen)
{
	struct conn_req r[n];
	struct args a = { .script = -1 };
	char id[n][48];
	int rc = 0;

	args_str(&a, "INFO");
	args_str(&a, "server");
	for (int i = 0; i < n; i++) {
		r[i].argc = a.argc;
		r[i].argv = a.argv;
		r[i].argvlen = a.len;
	}
	distinct_began = clock_ms();
	distinct_majority = 0;
	route_exec_until(conns, r, n, distinct_began +
	    QUORUM_DISTINCT_TIMEOUT_MS, -1, distinct_settled, 0);
	for (int i = 0; i < n; i++)
		run_id_of(r[i].reply, id[i], sizeof(id[i]));
	for (int i = 0; i < n && rc == 0; i++)
		for (int j = 0; j < i && rc == 0; j++)
			if (id[i][0] != '\0' && strcmp(id[i], id[j]) == 0) {
				snprintf(err, errlen, "%s and %s are the same "
				    "server (run id %s): a quorum needs "
				    "independent servers", conns[j].name,
				    conns[i].name, id[i]);
				rc = -1;
			}
	if (rc == 0)
		rc = route_merge(conns, n, r, clock_ms() +
		    QUORUM_DISTINCT_TIMEOUT_MS, err, errlen);
	conn_req_clear(r, n);
	return rc;
}
