/*
 * stop.c - redlock stop (redlock(1), "redlock stop"): ask every redlock holding
 * NAME to stop its command as on SIGTERM, then wait, without spinning,
 * until none of the holders asked holds NAME any more.
 *
 * The request is a set of the holders' tokens beside the lock (see
 * proto.c); each holder's renewal script finds its token there, so a
 * holder learns of it at its next renewal without a round trip of its
 * own, and a holder that takes NAME later is not in the set.  A holder
 * that nothing renews (acquire, another client) never learns of it:
 * stop then waits for its release or the end of its lease.
 */
#include "stop.h"

#include <stdio.h>

#include "clock.h"
#include "exit.h"
#include "hold.h"
#include "lease.h"
#include "log.h"
#include "refused.h"
#include "quorum.h"
#include "scripts.h"
#include "sig.h"
#include "wait.h"

/* The request outlives the leases of the holders asked by this much,
 * so that each sees it at a renewal before its lease ends. */
#define STOP_MARGIN_MS 5000

/* Look again at least this often: a holder released by `redlock
 * release` or another client, or one whose lease ended, wakes nobody. */
#define STOP_POLL_MS 250

/* Rounds in a row without a quorum of answers before stop gives up. */
#define STOP_FAIL_ROUNDS 3

/* What the servers said: the most of each. */
struct stop_state {
	long long asked;	/* holders asked now */
	long long left;		/* holders asked that still hold NAME */
	long long pttl;		/* the lock's TTL, -2 free */
	int foreign;		/* held by another client: cannot be asked */
};

/*
 * One round of the stop script on every server; record: ask the
 * current holders.  Returns how many servers answered.
 */
static int
stop_round(const struct lock *l, int record, struct stop_state *s,
    struct lock_outcome *o)
{
	struct conn_req r[l->n];
	struct args a;
	int answered = 0;

	args_script(&a, SCRIPT_STOP, &l->k);
	args_put_str(&a, ARG_STOP_RECORD, record ? "1" : "0");
	args_put_num(&a, ARG_STOP_MARGIN_MS, STOP_MARGIN_MS);
	s->asked = s->left = 0;
	s->pttl = -2;
	s->foreign = 0;
	o->err[0] = '\0';
	lock_round(l, &a, r, clock_ms() + LEASE_VERB_TIMEOUT_MS, o);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = quorum_array(&l->conns[i], &r[i],
		    NREPLY_STOP, o->err, sizeof(o->err));

		if (p == NULL)
			continue;
		answered++;
		if (reply_int(p, REPLY_STOP_ASKED) > s->asked)
			s->asked = reply_int(p, REPLY_STOP_ASKED);
		if (reply_int(p, REPLY_STOP_LEFT) > s->left)
			s->left = reply_int(p, REPLY_STOP_LEFT);
		if (reply_int(p, REPLY_STOP_PTTL) > s->pttl)
			s->pttl = reply_int(p, REPLY_STOP_PTTL);
		s->foreign |= reply_int(p, REPLY_STOP_FOREIGN) != 0;
	}
	conn_req_clear(r, l->n);
	return answered;
}

/* How long to sleep before looking again. */
static int64_t
stop_sleep(const struct stop_state *s, int64_t left)
{
	int64_t ms = STOP_POLL_MS;

	if (s->pttl >= 0 && s->pttl + 1 < ms)
		ms = s->pttl + 1;
	if (left >= 0 && left < ms)
		ms = left;
	return ms;
}

/*
 * Wait until the holders asked have let go (exit 0), -w runs out (the
 * conflict status), a signal comes (128+N, *die_by set), or the servers
 * stop answering (69).
 */
static int
stop_wait(const struct config *c, const struct lock *l, struct stop_state *s,
    int *die_by)
{
	int64_t until = c->wait < 0 ? -1 : clock_ms() + c->wait;
	struct lock_outcome o = { 0 };
	int failed = 0, rc;

	while (s->left > 0) {
		int64_t left = until < 0 ? -1 : until - clock_ms();

		if (until >= 0 && left <= 0) {
			char m[80 + CONFIG_NAME_MAX];
			snprintf(m, sizeof(m), c->wait == 0 ?
			    "lock '%s' is still held (-n: not waiting for its "
			    "holders to stop)" : "timed out waiting for the "
			    "holders of lock '%s' to stop", c->name);
			refused_conflict(c, m);
			return c->conflict_exit;
		}
		rc = wait_stopped(l, stop_sleep(s, left), until, sig_fd(), &o);
		if (rc < 0)
			return refused_report(c, l, LOCK_INTERRUPTED, &o,
			    die_by);
		if (rc == 2) {
			log_error("%s", o.err);
			return EXIT_UNAVAILABLE;
		}
		if (stop_round(l, 0, s, &o) >= l->quorum)
			failed = 0;
		else if (++failed >= STOP_FAIL_ROUNDS) {
			log_error("%s", o.err);
			return EXIT_UNAVAILABLE;
		} else
			s->left = 1;
	}
	log_info("the holders of lock '%s' have stopped", c->name);
	return 0;
}

/* stop: ask, then wait.  Returns the exit status (see stop_wait()). */
int
stop_run(const struct config *c, const struct lock *l, int *die_by)
{
	struct stop_state s;
	struct lock_outcome o = { 0 };

	if (stop_round(l, 1, &s, &o) < l->quorum) {
		log_error("%s", o.err);
		return EXIT_UNAVAILABLE;
	}
	if (s.asked == 0 && !s.foreign) {
		log_error("lock '%s' is not held", c->name);
		return EXIT_NOT_HELD;
	}
	if (s.foreign)
		log_error("lock '%s' is held by another client, which cannot "
		    "be asked to stop%s", c->name, c->wait == 0 ? "" :
		    ": waiting for its release");
	else
		log_error("asked %lld holder%s of lock '%s' to stop", s.asked,
		    s.asked == 1 ? "" : "s", c->name);
	return stop_wait(c, l, &s, die_by);
}
