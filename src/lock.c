/*
 * lock.c - taking one lock: the attempt, its replies, and giving back
 * what a failed attempt took.  What a holder then does with its token
 * (renew, extend, release) is hold.c's.
 *
 * Every operation is one round of quorum_exec() over all servers, so
 * the single server case and Redlock (QUORUM in redlock-protocol(7)) share one code
 * path; what the replies mean is decoded here, whether enough servers
 * said it is quorum_decide()'s.  Waiting between attempts is wait.c's.
 * A shared hold (-s, --limit; one server) runs scripts of its own
 * (src/lua/sh_*.lua) that answer as the exclusive ones do, so it takes
 * the same paths; release and extend by a token that may be either try
 * the exclusive script first and, when the lock is held shared, the
 * shared one.
 *
 * The lock itself is written here only: lock_init() and lock_setup()
 * set it up once, and everything after, here and elsewhere, takes it
 * const.  What an attempt produces goes to the caller's struct grant,
 * what a wait keeps to its struct lock_waiter (doc/DESIGN.md, 2.1).
 */
#include "lock.h"

#include <stdio.h>
#include <string.h>

#include <uuid/uuid.h>

#include "fmt.h"
#include "clock.h"
#include "cluster.h"
#include "failover.h"
#include "hold.h"
#include "holder.h"
#include "lease.h"
#include "log.h"
#include "quorum.h"
#include "scripts.h"

/* Set up l for NAME under prefix on n servers (the connections stay the
 * caller's).  Returns 0, or -1 when out of memory. */
int
lock_init(struct lock *l, struct conn *conns, int n, const char *prefix,
    const char *name, int64_t ttl)
{
	memset(l, 0, sizeof(*l));
	l->conns = conns;
	l->n = n;
	l->quorum = quorum_of(n);
	l->name = name;
	l->namelen = strlen(name);
	l->ttl = ttl;
	l->op_timeout = lease_op_timeout(n, ttl);
	return proto_keys(&l->k, prefix, name);
}

/* The rest of l, once, before it is taken: how (p) and who we are (m;
 * NULL: nobody, for the verbs that take nothing). */
void
lock_setup(struct lock *l, const struct lock_policy *p,
    const struct lock_meta *m)
{
	l->policy = *p;
	if (m != NULL)
		l->meta = *m;
}

void
lock_free(struct lock *l)
{
	proto_keys_free(&l->k);
}

/* Until when the lock is surely ours after a grant or renewal sent at
 * clock_ms() value sent. */
int64_t
lock_lease_end(const struct lock *l, int64_t sent)
{
	return lease_end(sent, l->ttl);
}

/* An acquire reply's kind: 1 granted (a bare fence, or {1, fence} from
 * the shared script), 2 re-entrant, 0 busy (3, held shared by an
 * inherited token, 4, held back after a failover, and 5, held back by a
 * lost holder's lock-delay or a --replace claim, count as busy), -1
 * none. */
/* The acquire scripts' array replies share one layout (tests/unit.c
 * checks that acquire.lua's and sh_acquire.lua's are acquire_any.lua's). */
#define REPLY_CODE REPLY_ACQUIRE_ANY_CODE
#define REPLY_VALUE REPLY_ACQUIRE_ANY_VALUE
#define REPLY_TOKEN REPLY_ACQUIRE_ANY_TOKEN

static int
acquire_kind(const redisReply *p)
{
	long long k;

	if (p != NULL && p->type == REDIS_REPLY_INTEGER)
		return p->integer > 0 ? 1 : -1;
	if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements < 2)
		return -1;
	k = reply_int(p, REPLY_CODE);
	return k == ACQUIRE_SELF_SHARED || k == ACQUIRE_FAILOVER_HELD ||
	    k == ACQUIRE_HELD_BACK ? ACQUIRE_BUSY : (int)k;
}

/* The fence of a grant or re-entrant reply (acquire_kind() 1 or 2); 0
 * for no reply. */
static long long
acquire_fence(const redisReply *p)
{
	if (p == NULL)
		return 0;
	return p->type == REDIS_REPLY_INTEGER ? p->integer :
	    reply_int(p, REPLY_VALUE);
}

/* Has an acquire round decided?  A quorum granted, or a quorum says
 * re-entrant, or the replies in hand (count[k]: replies of kind k, see
 * acquire_kind()) and those still due rule both out. */
static int
acquire_decided(int n, const int count[3], int pending)
{
	int answered = count[0] + count[1] + count[2];
	enum verdict granted = quorum_decide(n, count[1], answered, pending);
	enum verdict reentrant = quorum_decide(n, count[2], answered, pending);

	return granted == VERDICT_YES || reentrant == VERDICT_YES ||
	    (granted != VERDICT_PENDING && reentrant != VERDICT_PENDING);
}

/* conn_exec_until()'s question for an acquire round. */
static int
acquire_settled(const struct conn_req *r, int n)
{
	int count[3] = { 0, 0, 0 }, pending = 0;

	for (int i = 0; i < n; i++) {
		int k = acquire_kind(r[i].reply);
		/* A Redis Cluster's redirection is followed after the
		 * round: its answer is still due. */
		if (r[i].argc > 0 && ((r[i].reply == NULL &&
		    r[i].fail == CONN_FAIL_NONE) || cluster_hop(r[i].reply)))
			pending++;
		else if (k >= 0 && k <= 2)
			count[k]++;
	}
	return acquire_decided(n, count, pending);
}

/* How many servers of a bump round raised their counters. */
static int
bumped(const struct conn_req *r, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += r[i].reply != NULL && r[i].reply->type == REDIS_REPLY_INTEGER;
	return ok;
}

/* conn_exec_until()'s question for a bump round: have a majority raised
 * their counters?  That is all a bump needs; a server that does not
 * answer must not keep the command waiting while the lease runs. */
static int
bump_settled(const struct conn_req *r, int n)
{
	return bumped(r, n) >= quorum_of(n);
}

/* Raise the fencing counters to g->fence; see src/lua/bump.lua.  Returns
 * how many servers did. */
static int
fence_bump(const struct lock *l, const struct grant *g, struct lock_outcome *o)
{
	if (l->n <= 0)
		return 0;
	struct conn_req r[l->n];
	struct args a;
	int ok;

	args_script(&a, SCRIPT_BUMP, &l->k);
	args_put_num(&a, ARG_BUMP_FENCE_VALUE, g->fence);
	args_put_num(&a, ARG_BUMP_LINGER, PROTO_FENCE_LINGER_MS);
	quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
	    .deadline = clock_ms() + l->op_timeout, .intr_fd = -1,
	    .settled = bump_settled, .err = o->err, .errlen = sizeof(o->err) });
	ok = bumped(r, l->n);
	conn_req_clear(r, l->n);
	return ok;
}

/* Does l inherit a token (REDLOCK_HELD) that may hold the lock? */
static int
inherits(const struct lock *l)
{
	const char *p = l->policy.held;
	size_t w;

	while (holder_next_token(&p, &w) != NULL)
		if (w == LOCK_TOKEN_LEN)
			return 1;
	return 0;
}

/* sh_acquire.lua's arguments but the inherited tokens. */
static void
sh_acquire_args(const struct lock *l, const struct lock_waiter *w,
    const struct grant *g, struct args *a)
{
	const struct lock_meta *m = &l->meta;

	args_script(a, SCRIPT_SH_ACQUIRE, &l->k);
	args_put(a, ARG_SH_ACQUIRE_TOKEN, g->token, LOCK_TOKEN_LEN);
	args_put_num(a, ARG_SH_ACQUIRE_TTL, l->ttl);
	args_put_str(a, ARG_SH_ACQUIRE_HOST, m->host);
	args_put_num(a, ARG_SH_ACQUIRE_PID, m->pid);
	args_put_str(a, ARG_SH_ACQUIRE_USER, m->user);
	args_put_str(a, ARG_SH_ACQUIRE_CMD, m->cmd);
	args_put_num(a, ARG_SH_ACQUIRE_START, g->start_ms);
	args_put_num(a, ARG_SH_ACQUIRE_LIMIT, l->policy.limit);
	args_put_num(a, ARG_SH_ACQUIRE_WAKE_LINGER, PROTO_WAKE_LINGER_MS);
	args_put_str(a, ARG_SH_ACQUIRE_WOKEN, w->woken ? "1" : "0");
	args_put_num(a, ARG_SH_ACQUIRE_MARK_MS, w->mark_ms);
	args_put_str(a, ARG_SH_ACQUIRE_WAITER, w->id);
	failover_arg(a, ARG_SH_ACQUIRE_GUARD, ARG_SH_ACQUIRE_EPOCH, l);
}

/* acquire_any.lua's arguments but the inherited tokens; rec as in
 * acquire_args(). */
static void
acquire_any_args(const struct lock *l, const struct lock_waiter *w,
    const struct grant *g, struct args *a, char *rec)
{
	args_script(a, SCRIPT_ACQUIRE_ANY, &l->k);
	args_put(a, ARG_ACQUIRE_ANY_TOKEN, g->token, LOCK_TOKEN_LEN);
	args_put_num(a, ARG_ACQUIRE_ANY_TTL, l->ttl);
	/* A quorum's counters linger after each grant (proto.c). */
	args_put_str(a, ARG_ACQUIRE_ANY_LINGER, l->n > 1 ? "1" : "0");
	args_put(a, ARG_ACQUIRE_ANY_RECORD, rec, holder_record(l, g, rec));
	args_put_num(a, ARG_ACQUIRE_ANY_QUEUE_MS, w->queue_ms);
	args_put_str(a, ARG_ACQUIRE_ANY_WAITER, w->id);
	args_put_str(a, ARG_ACQUIRE_ANY_QUEUED, w->queued ? "1" : "0");
	failover_arg(a, ARG_ACQUIRE_ANY_GUARD, ARG_ACQUIRE_ANY_EPOCH, l);
	args_put_num(a, ARG_ACQUIRE_ANY_MARK_MS, w->mark_ms);
	/* The record outlives K by the lock-delay (proto.c). */
	args_put_num(a, ARG_ACQUIRE_ANY_RECORD_MS, l->ttl + l->policy.delay);
}

/* The tokens inherited from REDLOCK_HELD, from ARGV position pos on. */
static void
inherited_args(const struct lock *l, struct args *a, int pos)
{
	size_t tl;

	for (const char *p = l->policy.held, *t;
	    (t = holder_next_token(&p, &tl));)
		if (tl == LOCK_TOKEN_LEN)
			args_put(a, pos++, t, tl);
}

/*
 * May an attempt take the fast path, acquire.lua, with as few arguments
 * as it needs (each costs the server)?  Only the usual request: by the
 * policy, exclusive, on one server, inheriting no token (no re-entrance
 * to check), with no Sentinel (no failover guard) and no --lock-delay
 * (nothing to record of it); by the waiter, claiming nothing
 * (--replace).  Any other request takes acquire_any.lua, or
 * sh_acquire.lua when shared, which handle each of these.
 */
static int
acquire_fast(const struct lock *l, const struct lock_waiter *w)
{
	const struct lock_policy *p = &l->policy;

	return !p->shared && l->n == 1 && !inherits(l) &&
	    !failover_guarded(l) && p->delay == 0 && !w->claim;
}

/*
 * The acquire call for grant g (its token): the script, the token, our
 * metadata (the exclusive scripts take it as their record's tail, built
 * in rec, of HOLDER_RECORD_MAX bytes; the shared one field by field),
 * how the request waits, and the tokens we inherited (for re-entrance).
 * The fast path's way of waiting (acquire_fast()) is built in wait, of
 * LOCK_TOKEN_LEN + 2 bytes.
 */
static void
acquire_args(const struct lock *l, const struct lock_waiter *w,
    const struct grant *g, struct args *a, char *rec, char *wait)
{
	if (acquire_fast(l, w)) {
		args_script(a, SCRIPT_ACQUIRE, &l->k);
		args_put(a, ARG_ACQUIRE_TOKEN, g->token, LOCK_TOKEN_LEN);
		args_put_num(a, ARG_ACQUIRE_TTL, l->ttl);
		args_put(a, ARG_ACQUIRE_RECORD, rec, holder_record(l, g, rec));
		wait[0] = w->queued ? 'W' : 'w';
		memcpy(wait + 1, w->id, LOCK_TOKEN_LEN + 1);
		args_put(a, ARG_ACQUIRE_WAIT, wait, w->queued || w->mark_ms > 0 ?
		    LOCK_TOKEN_LEN + 1 : 0);
		return;
	}
	if (l->policy.shared)
		sh_acquire_args(l, w, g, a);
	else
		acquire_any_args(l, w, g, a, rec);
	inherited_args(l, a, l->policy.shared ? ARG_SH_ACQUIRE_TOKENS :
	    ARG_ACQUIRE_ANY_TOKENS);
}

/* Is p the error of a script that failed while it ran (which Redis
 * says from where in the script: "@user_script:7"), rather than of one
 * refused before it ran (NOPERM, NOSCRIPT)? */
static int
ran_and_failed(const redisReply *p)
{
	return p != NULL && p->type == REDIS_REPLY_ERROR &&
	    strstr(p->str, "user_script") != NULL;
}

/* Release g's token everywhere after a failed or interrupted attempt of
 * w's wait (within its -w deadline), keeping the reason the attempt
 * failed.  A request that does not wait (-n, no mark_ms) ends with it:
 * the release needs only to be handed to the servers (token_deadline()'s
 * least), not a server that does not answer waited for, which runs it
 * when it wakes, after the attempt.  errored: servers whose script
 * failed while it ran (ran_and_failed()), which may have taken the lock
 * first (a server does not undo a script's writes): if giving it back
 * fails too, the lock may stay held for its TTL, which is said. */
static void
undo(const struct lock *l, const struct lock_waiter *w, const struct grant *g,
    int errored)
{
	struct lock_outcome o = { 0 };
	int others;

	lock_release(l, &(struct release){ .token = g->token,
	    .until = w->mark_ms == 0 ? clock_ms() : w->until }, &others, &o);
	if (errored > 0 && o.err[0] != '\0')
		log_error("lock '%s' may stay held until its TTL runs out: the "
		    "failed attempt could not be given back: %s", l->name,
		    o.err);
}

/*
 * Is p a "held back" answer ({5, ms}: a lost holder's --lock-delay, or
 * another's --replace claim, keeps the free lock from us; proto.c)?
 * Then o->hold_ms becomes the shortest hold, -v says why, and 1 is
 * returned.
 */
static int
held_back(const struct lock *l, const redisReply *p, struct lock_outcome *o)
{
	long long ms;

	if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements != 2 ||
	    reply_int(p, REPLY_CODE) != ACQUIRE_HELD_BACK)
		return 0;
	ms = reply_int(p, REPLY_VALUE) > 0 ? reply_int(p, REPLY_VALUE) : 1;
	if (o->hold_ms <= 0 || ms < o->hold_ms)
		o->hold_ms = ms;
	log_info("lock '%s' is free but held back for %lld.%03lld s (a lost "
	    "holder's lock-delay, or a replacement's claim)", l->name,
	    ms / 1000, ms % 1000);
	return 1;
}

/* Tally an attempt's replies into its grant g and o; count[k] counts
 * the servers whose reply was of kind k (see acquire_kind()). */
static int
tally_try(const struct lock *l, struct conn_req *r, struct grant *g,
    struct lock_outcome *o, int count[3], char *inherited, size_t len)
{
	int at_max = 0;

	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;
		int k = acquire_kind(p);

		o->slow |= r[i].timed_out;
		if (failover_held_back(&l->conns[i], p, o) ||
		    held_back(l, p, o)) {
			count[0]++;
			continue;
		}
		if (k < 0 || k > 2) {
			if (p != NULL && p->type != REDIS_REPLY_ERROR)
				quorum_note(&l->conns[i], &r[i], o->err,
				    sizeof(o->err));
			continue;
		}
		count[k]++;
		if (k == ACQUIRE_BUSY &&
		    reply_int(p, REPLY_CODE) == ACQUIRE_SELF_SHARED)
			o->self_shared = 1;
		if (k == 0) {
			long long t = reply_int(p, REPLY_VALUE);
			if (t >= 0 && (o->busy_pttl < 0 || t < o->busy_pttl))
				o->busy_pttl = t;
			continue;
		}
		if (acquire_fence(p) > g->fence)
			g->fence = acquire_fence(p);
		if (k == 2)
			snprintf(inherited, len, "%s",
			    reply_str(p, REPLY_TOKEN));
	}
	/* Granting servers whose counter is already the fence. */
	for (int i = 0; i < l->n; i++)
		if (acquire_kind(r[i].reply) == 1 &&
		    acquire_fence(r[i].reply) == g->fence)
			at_max++;
	return at_max;
}

/* The least time an attempt waits for its replies, even at the -w
 * deadline: a server on loopback answers in well under a millisecond,
 * one across a network in tens. */
#define LOCK_ATTEMPT_MIN_MS 50

/* When an attempt sent at `sent` stops waiting for its replies: the
 * per-command timeout (and ahead_ms, see lock_try()), but never past
 * the waiter's deadline (-w), which bounds the whole wait. */
static int64_t
attempt_deadline(const struct lock *l, const struct lock_waiter *w,
    int64_t sent, int64_t ahead_ms)
{
	int64_t d = sent + l->op_timeout + ahead_ms, least;

	if (w->until <= 0)
		return d;
	/* Even at the deadline, time for a server to answer at all. */
	least = sent + (l->op_timeout < LOCK_ATTEMPT_MIN_MS ?
	    l->op_timeout : LOCK_ATTEMPT_MIN_MS);
	return w->until < least ? least : w->until < d ? w->until : d;
}

/* Before an attempt: a fresh token in g unless !fresh, the waiter's
 * name, a grant with no fence and the waiter's start, and an outcome
 * with nothing in it yet. */
static void
try_begin(const struct lock *l, struct lock_waiter *w, struct grant *g,
    struct lock_outcome *o, int fresh)
{
	uuid_t u;

	if (fresh) {
		uuid_generate_random(u);
		fmt_uuid(u, g->token);
	}
	/* A writer's place in the queue is named after its first token;
	 * a standby's (--respawn) starts with 's', and a --fair waiter's
	 * has a 'q' second, never a hex digit (status counts the standbys
	 * and leaves the --fair waiters to their queue: inspect.lua). */
	if (w->id[0] == '\0') {
		memcpy(w->id, g->token, sizeof(w->id));
		if (l->policy.standby)
			w->id[0] = 's';
		if (l->policy.fair)
			w->id[1] = 'q';
	}
	o->err[0] = '\0';
	o->slow = 0;
	o->self_shared = 0;
	o->busy_pttl = -1;
	o->hold_ms = 0;
	g->fence = 0;
	g->start_ms = w->start_ms;
}

/*
 * One attempt on every server at once, with a fresh token unless
 * !fresh (then g->token again).  On LOCK_HELD, g (token, fence,
 * sent_at, granted_at) describes the grant; on anything short of a
 * quorum the token is removed from every server again (a server that
 * timed out may still have granted it).  ahead_ms: see lock_try().
 */
static enum lock_result
try_token(const struct lock *l, struct lock_waiter *w, struct grant *g,
    struct lock_outcome *o, int intr_fd, int fresh, int64_t ahead_ms)
{
	struct conn_req r[l->n];
	struct args a;
	char rec[HOLDER_RECORD_MAX], wait[LOCK_TOKEN_LEN + 2];
	char inherited[LOCK_TOKEN_LEN + 1] = "";
	int count[3] = { 0, 0, 0 }, at_max, rc, unsent = 0, errored = 0;
	enum verdict v;

	try_begin(l, w, g, o, fresh);
	acquire_args(l, w, g, &a, rec, wait);
	g->sent_at = clock_ms();
	rc = quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
	    .deadline = attempt_deadline(l, w, g->sent_at, ahead_ms),
	    .intr_fd = intr_fd, .settled = acquire_settled, .err = o->err,
	    .errlen = sizeof(o->err) });
	g->granted_at = clock_ms();
	at_max = tally_try(l, r, g, o, count, inherited, sizeof(inherited));
	/* A request that never left (no connection, no handshake) took
	 * nothing there: no need to give it back. */
	for (int i = 0; i < l->n; i++) {
		unsent += r[i].reply == NULL && !r[i].sent;
		errored += ran_and_failed(r[i].reply);
	}
	conn_req_clear(r, l->n);
	/* A busy reply queued us (writers, waiters); a grant took us out. */
	if ((w->queue_ms > 0 || w->mark_ms > 0) && count[0] > 0)
		w->queued = 1;
	else if (count[1] > 0)
		w->queued = 0;
	if (rc >= 0 && count[2] >= l->quorum) {
		memcpy(g->token, inherited, sizeof(g->token));
		return LOCK_REENTRANT;
	}
	v = quorum_decide(l->n, count[1], count[0] + count[1] + count[2], 0);
	if (rc >= 0 && v == VERDICT_YES &&
	    lock_lease_end(l, g->sent_at) > g->granted_at) {
		/* Counters that move together (the usual case: the same
		 * servers grant every time) need no bump. */
		if (at_max >= l->quorum || fence_bump(l, g, o) >= l->quorum)
			return LOCK_HELD;
		v = VERDICT_NONE;
	}
	if (count[1] > 0 || count[0] + count[1] + count[2] + unsent < l->n)
		undo(l, w, g, errored);
	if (rc < 0)
		return LOCK_INTERRUPTED;
	if (v == VERDICT_NO && o->self_shared)
		return LOCK_SELF_SHARED;
	/* A majority answered: the lock is taken (or our grant came too
	 * late); servers that did not answer are not the reason. */
	return v == VERDICT_NONE ? LOCK_UNAVAILABLE : LOCK_BUSY;
}

/*
 * One attempt of w's wait with a fresh token, into the caller's grant g:
 * see try_token().  ahead_ms > 0: it
 * goes out behind a command queued ahead of it (conn_queue_ahead())
 * that may take that long to answer, wait.c's BLPOP, so that the server
 * makes the attempt the moment the wait ends.  Its lease counts from
 * when both were sent: keep ahead_ms well under the TTL.
 */
enum lock_result
lock_try(const struct lock *l, struct lock_waiter *w, int64_t ahead_ms,
    struct grant *g, struct lock_outcome *o, int intr_fd)
{
	/* The holder record's start: this attempt's, not the wait's, so
	 * that status tells since when the lock is held (to within the
	 * wait it rides behind, ahead_ms). */
	w->start_ms = clock_wall_ms();
	return try_token(l, w, g, o, intr_fd, 1, ahead_ms);
}

/*
 * After a suspension, before the command may run again: renew grant g's
 * lease, or take the lock again with the same token if it has become
 * free.  Returns LOCK_HELD (g->sent_at is the renewal's send time),
 * LOCK_BUSY (someone else holds it) or LOCK_UNAVAILABLE.
 */
enum lock_result
lock_retake(const struct lock *l, struct grant *g, struct lock_outcome *o)
{
	int64_t sent = clock_ms();
	int lost, ok = lock_renew(l, g->token, sent + l->op_timeout,
	    lock_record_ms(l), &lost, o);

	if (ok < l->quorum && lost) {
		/* Not a waiter: a busy answer ends it (75); its record
		 * keeps the grant's start. */
		struct lock_waiter none = { .id = "", .start_ms = g->start_ms };
		enum lock_result res = try_token(l, &none, g, o, -1, 0, 0);
		if (res != LOCK_HELD)
			return res;
		sent = clock_ms();
		ok = lock_renew(l, g->token, sent + l->op_timeout,
		    lock_record_ms(l), &lost, o);
	}
	if (ok >= l->quorum) {
		g->sent_at = sent;
		return LOCK_HELD;
	}
	return lost ? LOCK_BUSY : LOCK_UNAVAILABLE;
}

