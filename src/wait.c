/*
 * wait.c - when to try again.  A waiter never spins: between attempts
 * it blocks on the wake lists that releases push to (BLPOP, on every
 * server at once, on the connection it already has), bounded by the
 * holder's TTL (a dead holder's key expires) and by a poll interval (a
 * foreign client releases without waking anyone).
 *
 * Writer preference (one server): an exclusive waiter queues itself on
 * the server with each busy attempt, and the entry lapses
 * PROTO_WAIT_MARK_MS later unless renewed, so a waiter that died holds
 * nobody up for long.  Shared requests are not granted while the queue
 * has an entry.  Exclusive waiters also block on a list of their own,
 * to which a shared request that was woken but must let a writer go
 * first hands its wake-up.
 */
#include "wait.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "failover.h"
#include "fair.h"
#include "hold.h"
#include "quorum.h"
#include "replace.h"
#include "sig.h"

/* The longest sleep between attempts while the lock is busy: the delay
 * before a release by a foreign client (redis-py, ...), which pushes no
 * wake-up, is noticed.  Jittered so that waiters do not move in step. */
#define WAIT_POLL_MS 250
#define WAIT_POLL_JITTER_MS 50

/* The longest nap of a waiter that a lock-delay or a --replace claim
 * holds back: well under PROTO_WAIT_MARK_MS, so that its place among
 * the waiters stays fresh through a long hold. */
#define WAIT_HOLD_NAP_MS 1000

/* Redlock: contenders that split the votes back off by a random delay
 * of up to this before trying again. */
#define WAIT_SPLIT_BACKOFF_MS 30

/* A first attempt that fails is final (69 within seconds), unless
 * servers were merely slow and it took less than this: a busy machine
 * deserves another try. */
#define WAIT_SLOW_FIRST_MS 1000

/* Later failures are final once they persist this many attempts and
 * this long; between them the sleep grows by WAIT_FAIL_STEP_MS. */
#define WAIT_FAIL_TRIES 3
#define WAIT_FAIL_PERSIST_MS 1500
#define WAIT_FAIL_STEP_MS 100

/* A blocked BLPOP's reply may come this late after its timeout (the
 * server checks timeouts hz times a second) without counting as a
 * failure. */
#define WAIT_BLOCK_SLACK_MS 1000

/* The next attempt rides behind a wait (wake_and_try()) only when the
 * wait is at most this fraction of the TTL: the attempt's lease counts
 * from when both were sent, so the wait eats into it. */
#define WAIT_AHEAD_TTL_DIV 4

/* Sleep until t (clock_ms), or return -1 at once if interrupted. */
static int
nap_until(int64_t t, int intr_fd)
{
	struct pollfd p = { .fd = intr_fd, .events = POLLIN };
	int64_t left = t - clock_ms();

	if (left <= 0)
		return 0;
	return poll(&p, intr_fd >= 0 ? 1 : 0, (int)left) > 0 ? -1 : 0;
}

/* Any server answered (a wake-up, or BLPOP's own timeout). */
static int
any_reply(const struct conn_req *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].reply != NULL)
			return 1;
	return 0;
}

/* Is p an error that asking again will not change: the user may not
 * block (NOPERM), is not authenticated, a wake-up list is not a list,
 * the server does not know the command?  (Not LOADING, BUSY and the
 * like, which pass.) */
static int
refused(const redisReply *p)
{
	switch (reply_error(p)) {
	case SERVER_NOPERM:
	case SERVER_NOAUTH:
	case SERVER_WRONGTYPE:
	case SERVER_ERR_PLAIN:
	case SERVER_MAXCLIENTS:
	case SERVER_NOCLUSTER:
		return 1;
	default:
		return 0;
	}
}

/* The lists a wait blocks on. */
struct lists {
	const char *key[3];
	size_t len[3];
	int n;
};

/* One wait for the lock: its limits and how its failures stand. */
struct wait_state {
	int64_t wait;		/* -w in ms; 0: one attempt; <0: forever */
	int64_t start, until;	/* until: the -w deadline, -1: none */
	int64_t since;		/* when the current run of failures began */
	int failures;		/* attempts in a row that failed */
	int seen_busy;		/* an attempt found the lock taken */
	struct lock_waiter waiter;	/* our place in the queues */
	struct grant *grant;	/* the caller's: each attempt's */
	const struct wait_report *report;	/* or NULL: nobody asked */
};

/* a = BLPOP on the lists ls with a timeout of ms (at least 1); t (32
 * bytes) holds the timeout's text. */
static void
blpop_args(struct args *a, const struct lists *ls, int64_t ms, char *t)
{
	snprintf(t, 32, "%.3f", (double)ms / 1000);
	args_str(a, "BLPOP");
	for (int i = 0; i < ls->n; i++)
		args_add(a, ls->key[i], ls->len[i]);
	args_str(a, t);
}

/*
 * Block on the lists ls of every server at once (BLPOP), at most ms and
 * never past `hard` (the -w deadline, or -1); the first answer ends the
 * wait, and connections still blocked are closed (their BLPOP would
 * hold up the next command).  *woken (woken may be NULL): a server
 * popped a wake-up.  Returns 0, -1 on interruption, 1 when no server
 * answered (after sleeping out ms, so that failing servers are not
 * hammered), or 2 when none answered and one refused to (refused()):
 * o->err says why.
 */
static int
wait_lists(const struct lock *l, const struct lists *ls, int64_t ms,
    int64_t hard, int intr_fd, struct lock_outcome *o, int *woken)
{
	if (l->n <= 0)
		return 1;
	struct conn_req r[l->n];
	struct args a = { .script = -1 };
	int64_t until, deadline;
	char t[32];
	int rc, answered = 0, refusals = 0, popped = 0;

	if (ms < 1)
		ms = 1;
	until = clock_ms() + ms;
	deadline = until + l->op_timeout + WAIT_BLOCK_SLACK_MS;
	if (hard >= 0 && deadline > hard)
		deadline = hard;
	blpop_args(&a, ls, ms, t);
	rc = quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
	    .deadline = deadline, .intr_fd = intr_fd, .settled = any_reply });
	for (int i = 0; i < l->n; i++) {
		refusals += refused(r[i].reply);
		if (r[i].reply != NULL && r[i].reply->type != REDIS_REPLY_ERROR)
			answered++;
		else if (r[i].reply == NULL && !r[i].timed_out &&
		    l->conns[i].discard > 0)
			conn_close(&l->conns[i]);
		else if (!(hard >= 0 && clock_ms() >= hard))
			quorum_note(&l->conns[i], &r[i], o->err, sizeof(o->err));
		popped |= r[i].reply != NULL &&
		    r[i].reply->type == REDIS_REPLY_ARRAY;
	}
	conn_req_clear(r, l->n);
	if (woken != NULL)
		*woken = popped;
	if (rc < 0)
		return -1;
	if (answered > 0 || (hard >= 0 && clock_ms() >= hard))
		return 0;
	if (refusals > 0)
		return 2;
	return nap_until(until, intr_fd) < 0 ? -1 : 1;
}

/* The lists waiter w blocks on: the lock's wake list and, for an
 * exclusive waiter on one server, the writers' list first; one that
 * claims NAME (--replace) also the list that a holder it stopped pushes
 * to once released. */
static void
wake_keys(const struct lock *l, const struct lock_waiter *w,
    struct lists *ls)
{
	ls->n = 0;
	if (w->claim) {
		ls->key[ls->n] = l->k.stopped;
		ls->len[ls->n++] = l->k.stoppedlen;
	}
	if (!l->policy.shared && l->n == 1) {
		ls->key[ls->n] = l->k.xwake;
		ls->len[ls->n++] = l->k.xwakelen;
	}
	ls->key[ls->n] = l->k.wake;
	ls->len[ls->n++] = l->k.wakelen;
}

/*
 * Can the next attempt ride behind a wait of ms (wake_and_try())?  One
 * server (a quorum's servers would each run it at another time), an
 * exclusive request (a shared one is told whether it was woken), its
 * connection open, and a wait short against the TTL that ends well
 * before the -w deadline (left ms away, -1: none): the server may
 * answer a BLPOP's timeout late (WAIT_BLOCK_SLACK_MS), and the last
 * stretch must end on time, cut off by us, as wait_lists() does.
 */
static int
may_ride(const struct lock *l, int64_t ms, int64_t left)
{
	return l->n == 1 && !l->policy.shared && l->conns[0].ctx != NULL &&
	    ms * WAIT_AHEAD_TTL_DIV <= l->ttl &&
	    (left < 0 || ms + WAIT_BLOCK_SLACK_MS < left);
}

/*
 * Sleep as wait_wake() does and make the next attempt in the same round
 * trip: the attempt goes out queued behind the BLPOP, so the server runs
 * it as soon as a release wakes us or the wait times out, without
 * waiting for us to hear of it and ask.  See may_ride() for when.
 * Returns the attempt's result (its grant in w->grant), or LOCK_UNAVAILABLE
 * with *no_block set and o->err saying why when the server would not
 * let us block (refused()) and the attempt did not take the lock
 * either.
 */
static enum lock_result
wake_and_try(const struct lock *l, struct wait_state *w, int64_t ms,
    int intr_fd, struct lock_outcome *o, int *no_block)
{
	struct args a = { .script = -1 };
	struct conn_req note = { 0 };
	struct lists ls;
	char t[32];
	enum lock_result res;

	wake_keys(l, &w->waiter, &ls);
	blpop_args(&a, &ls, ms, t);
	*no_block = 0;
	if (conn_queue_ahead(&l->conns[0], a.argc, a.argv, a.len) < 0) {
		snprintf(o->err, sizeof(o->err), "out of memory");
		return LOCK_UNAVAILABLE;
	}
	res = lock_try(l, &w->waiter, ms + WAIT_BLOCK_SLACK_MS, w->grant, o,
	    intr_fd);
	note.reply = conn_take_ahead(&l->conns[0]);
	if (refused(note.reply) && res != LOCK_HELD) {
		*no_block = 1;
		res = LOCK_UNAVAILABLE;
		o->err[0] = '\0';
		quorum_note(&l->conns[0], &note, o->err, sizeof(o->err));
	}
	conn_req_clear(&note, 1);
	return res;
}

/* redlock stop: sleep until a stopped holder says it released; see
 * wait_lists(). */
int
wait_stopped(const struct lock *l, int64_t ms, int64_t hard, int intr_fd,
    struct lock_outcome *o)
{
	struct lists ls = { { l->k.stopped }, { l->k.stoppedlen }, 1 };

	return wait_lists(l, &ls, ms, hard, intr_fd, o, NULL);
}

/* How long to sleep before the next attempt while the lock is busy. */
static int64_t
busy_sleep(const struct lock_outcome *o, int64_t left)
{
	int64_t ms = WAIT_POLL_MS + clock_jitter(WAIT_POLL_JITTER_MS);

	if (o->busy_pttl >= 0 && o->busy_pttl + 1 < ms)
		ms = o->busy_pttl + 1;
	/* Only servers that hold grants back said no: nothing changes
	 * before the first of them lets go, unless a lock-delay is broken
	 * or a --replace claim ends early, whose release or break wakes
	 * the waiters whose place is fresh: so in naps that keep ours. */
	if (o->hold_ms > 0 && o->busy_pttl < 0)
		ms = o->hold_ms < WAIT_HOLD_NAP_MS ? o->hold_ms + 1 :
		    WAIT_HOLD_NAP_MS;
	if (left >= 0 && left < ms)
		ms = left;
	return ms;
}

/* Is this result final, on the first attempt? */
static int
final_first(enum lock_result res, const struct lock_outcome *o, int64_t wait,
    int64_t took)
{
	if (res == LOCK_HELD || res == LOCK_REENTRANT ||
	    res == LOCK_INTERRUPTED || res == LOCK_SELF_SHARED)
		return 1;
	return res == LOCK_UNAVAILABLE &&
	    (!o->slow || wait == 0 || took >= WAIT_SLOW_FIRST_MS);
}

/* Is this result final, after a later attempt? */
static int
final_later(enum lock_result res)
{
	return res != LOCK_BUSY && res != LOCK_UNAVAILABLE;
}

/* Tell the caller of a round that goes on (res, o) before its sleep. */
static void
wait_tell(const struct wait_state *w, enum lock_result res,
    const struct lock_outcome *o)
{
	if (w->report != NULL && w->report->fn != NULL)
		w->report->fn(w->report->ctx, res, o);
}

/* After a busy attempt: how long to pause, or -1 to stop here (res
 * updated). */
static int64_t
pause_busy(const struct lock *l, struct wait_state *w,
    const struct lock_outcome *o, int intr_fd, enum lock_result *res)
{
	int64_t left = w->until < 0 ? -1 : w->until - clock_ms();

	w->failures = 0;
	w->seen_busy = 1;
	if (w->waiter.claim)
		replace_claim(l, &w->waiter);
	if (w->wait == 0 || (w->until >= 0 && left <= 0))
		return -1;
	if (l->n > 1 && nap_until(clock_ms() +
	    clock_jitter(WAIT_SPLIT_BACKOFF_MS), intr_fd) < 0) {
		*res = LOCK_INTERRUPTED;
		return -1;
	}
	return busy_sleep(o, left);
}

/* After a failed attempt: how long to pause, or -1 to give up (res
 * updated).  -w bounds the whole wait, failures included: when it runs
 * out while a server fails, the lock was not obtained in time, as far
 * as it was ever seen (else the servers are unavailable). */
static int64_t
pause_failed(const struct lock *l, struct wait_state *w,
    enum lock_result *res)
{
	int64_t left = w->until < 0 ? -1 : w->until - clock_ms(), ms;

	if (w->until >= 0 && left <= 0) {
		if (w->seen_busy && *res == LOCK_UNAVAILABLE)
			*res = LOCK_BUSY;
		return -1;
	}
	if (w->failures++ == 0)
		w->since = clock_ms();
	if (w->failures >= WAIT_FAIL_TRIES && clock_ms() - w->since >=
	    WAIT_FAIL_PERSIST_MS + failover_patience(l))
		return -1;
	ms = (int64_t)WAIT_FAIL_STEP_MS * w->failures;
	return left >= 0 && left < ms ? left : ms;
}

/* Has the -w deadline passed?  A waiter that was stopped (SIGSTOP,
 * Ctrl-Z) past it and then continued makes no attempt: it gives up as
 * one that timed out (pause_busy()), rather than run its command late. */
static int
past_deadline(const struct wait_state *w)
{
	return w->until >= 0 && clock_ms() >= w->until;
}

/* Sleep ms for the lock to come free (see wait_wake()), then try
 * again; the attempt rides behind the wait where it can (may_ride()). */
static enum lock_result
sleep_and_try(const struct lock *l, struct wait_state *w, int64_t ms,
    enum lock_result res, int intr_fd, struct lock_outcome *o, int *stop)
{
	int64_t left = w->until < 0 ? -1 : w->until - clock_ms();
	struct lists ls;
	int rc;

	*stop = 0;
	if (res == LOCK_BUSY && may_ride(l, ms, left))
		return wake_and_try(l, w, ms, intr_fd, o, stop);
	wake_keys(l, &w->waiter, &ls);
	rc = wait_lists(l, &ls, ms, w->until, intr_fd, o, &w->waiter.woken);
	if (rc < 0 || rc == 2) {
		*stop = 1;
		return rc < 0 ? LOCK_INTERRUPTED : LOCK_UNAVAILABLE;
	}
	if (rc > 0 && w->failures++ == 0)
		w->since = clock_ms();
	if (past_deadline(w))
		return LOCK_BUSY;
	return lock_try(l, &w->waiter, 0, w->grant, o, intr_fd);
}

/* --fair (fair.c): the lists a member of the queue blocks on: its own,
 * which the queue pushes to when it may go, and once it may go the
 * lock's, as any waiter's. */
static void
fair_lists(const struct lock *l, const struct lock_waiter *w,
    const struct fair_waiter *f, struct lists *ls)
{
	ls->n = 0;
	if (f->go)
		wake_keys(l, w, ls);
	ls->key[ls->n] = f->key[3];
	ls->len[ls->n++] = f->len[3];
}

/* One round of a fair wait: renew our place, then an attempt if we may
 * go.  A member that may go and was woken (a release, or the members
 * ahead left) attempts at once while its place is fresh, so that the
 * hand-over costs one round trip; one whose wait ran out renews first,
 * which keeps its place fresh for the wake-up to come. */
static enum lock_result
fair_try(const struct lock *l, struct wait_state *w,
    struct fair_waiter *f, int intr_fd, struct lock_outcome *o)
{
	if (!w->waiter.woken || !fair_fresh(f, 0)) {
		switch (fair_enter(l, f, intr_fd, o)) {
		case -2: return LOCK_INTERRUPTED;
		case -1: return LOCK_UNAVAILABLE;
		case 0: return LOCK_BUSY;
		default: break;
		}
	}
	return lock_try(l, &w->waiter, 0, w->grant, o, intr_fd);
}

/*
 * A fair wait (--fair): as wait_acquire() waits, but in the queue: no
 * attempt until we may go, never a block longer than FAIR_RENEW_MS (so
 * that our place is renewed), and we leave the queue when granted or
 * giving up.  A member that may go makes its attempt once a release
 * woke it, one round trip, but never rides it behind its wait
 * (wake_and_try()): the server would run it for a waiter that is
 * stopped or cut off, which would then hold NAME for a TTL, not lose
 * its place within FAIR_LEASE_MS.
 */
static enum lock_result
wait_fair(const struct lock *l, struct wait_state *w, int intr_fd,
    struct lock_outcome *o)
{
	struct fair_waiter f;
	struct lists ls;
	enum lock_result res = LOCK_UNAVAILABLE;
	int first = 1, stop = 0, rc;

	if (fair_begin(l, &f) < 0) {
		snprintf(o->err, sizeof(o->err), "out of memory");
		stop = 1;
	} else
		res = fair_try(l, w, &f, intr_fd, o);
	while (!stop) {
		int64_t ms;

		if (first ? final_first(res, o, w->wait, clock_ms() -
		    w->start) : final_later(res))
			break;
		first = 0;
		ms = res == LOCK_BUSY ? pause_busy(l, w, o, intr_fd, &res) :
		    pause_failed(l, w, &res);
		if (ms < 0)
			break;
		if (ms > FAIR_RENEW_MS)
			ms = FAIR_RENEW_MS;
		wait_tell(w, res, o);
		fair_lists(l, &w->waiter, &f, &ls);
		rc = wait_lists(l, &ls, ms, w->until, intr_fd, o,
		    &w->waiter.woken);
		if (rc < 0 || rc == 2) {
			res = rc < 0 ? LOCK_INTERRUPTED : LOCK_UNAVAILABLE;
			break;
		}
		if (rc > 0 && w->failures++ == 0)
			w->since = clock_ms();
		res = past_deadline(w) ? LOCK_BUSY :
		    fair_try(l, w, &f, intr_fd, o);
	}
	/* Granted or given up, we leave: the next may go at once.  Granted,
	 * we do not wait for the servers to say so. */
	if (res == LOCK_HELD || res == LOCK_REENTRANT)
		fair_leave_granted(l, &f);
	else
		fair_leave(l, &f);
	fair_end(&f);
	return res;
}

/* Begin w, the wait that q asks for, into the caller's grant g: its
 * limits, and its place in the queues with what else it keeps. */
static void
wait_begin(const struct lock *l, const struct wait_req *q, struct grant *g,
    struct wait_state *w)
{
	int64_t wait = q->wait;

	*w = (struct wait_state){ .wait = wait,
	    .start = q->since > 0 ? q->since : clock_ms(), .grant = g,
	    .report = q->report };
	w->until = wait < 0 ? -1 : w->start + wait;
	w->waiter.queue_ms = !l->policy.shared && l->n == 1 && wait != 0 ?
	    PROTO_WAIT_MARK_MS : 0;
	w->waiter.mark_ms = wait != 0 ? PROTO_WAIT_MARK_MS : 0;
	/* A first attempt under -n still gets its full time. */
	w->waiter.until = wait > 0 ? w->until : 0;
	w->waiter.claim = q->claim;
}

/*
 * Acquire as q asks, waiting up to q->wait ms (0: one attempt;
 * negative: forever), into the caller's grant g.  See
 * WAIT_SLOW_FIRST_MS and WAIT_FAIL_* for when failures are final.
 * q->report (or NULL) hears of each round before the wait sleeps.
 */
enum lock_result
wait_acquire(const struct lock *l, const struct wait_req *q, struct grant *g,
    struct lock_outcome *o)
{
	int64_t wait = q->wait;
	int intr_fd = q->intr_fd;
	struct wait_state w;
	enum lock_result res;
	int first = 1, stop = 0;

	wait_begin(l, q, g, &w);
	if (l->policy.fair) {
		res = wait_fair(l, &w, intr_fd, o);
		if (res != LOCK_HELD)
			lock_unqueue(l, &w.waiter, res == LOCK_INTERRUPTED);
		return res;
	}
	res = lock_try(l, &w.waiter, 0, g, o, intr_fd);
	for (;;) {
		int64_t ms;

		/* A --respawn standby ends only on a signal that asks it to
		 * (sig_keep_end()); it tries again after any other. */
		if (res == LOCK_INTERRUPTED && l->policy.standby &&
		    sig_keep_end() == 0) {
			stop = 0;
			res = lock_try(l, &w.waiter, 0, g, o, intr_fd);
			continue;
		}
		if (stop || (first ? final_first(res, o, wait,
		    clock_ms() - w.start) : final_later(res)))
			break;
		first = 0;
		ms = res == LOCK_BUSY ? pause_busy(l, &w, o, intr_fd, &res) :
		    pause_failed(l, &w, &res);
		if (ms < 0 && res == LOCK_INTERRUPTED)
			continue;
		if (ms < 0)
			break;
		wait_tell(&w, res, o);
		res = sleep_and_try(l, &w, ms, res, intr_fd, o, &stop);
	}
	/* A waiter that gives up leaves the writers' queue at once. */
	if (res != LOCK_HELD)
		lock_unqueue(l, &w.waiter, res == LOCK_INTERRUPTED);
	return res;
}
