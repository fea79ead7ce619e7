/*
 * hold.c - the usual round over a lock's servers (lock_round()), and
 * what a holder does with its token: renew, extend, release
 * (the exclusive script first and, when the lock is held shared, the
 * shared one), and the best-effort notes of a waiter that gives up and
 * of a holder that was asked to stop.  One round of quorum_exec() over
 * all servers each, as lock.c's attempts are.
 */
#include "hold.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "lease.h"
#include "log.h"
#include "quorum.h"
#include "scripts.h"

/*
 * The usual round: a on every server of l until deadline, with nothing
 * to interrupt it; a server's failure goes to o->err when o is not NULL
 * and o->err is still empty.  Returns quorum_exec()'s count of
 * replies; the caller frees them (conn_req_clear()).
 */
int
lock_round(const struct lock *l, struct args *a, struct conn_req *r,
    int64_t deadline, struct lock_outcome *o)
{
	return quorum_exec(l->conns, l->n, a, r, &(struct quorum_how){
	    .deadline = deadline, .intr_fd = -1, .err = o ? o->err : NULL,
	    .errlen = o ? sizeof(o->err) : 0 });
}

/* How long a release, extend or undo waits for its replies.  Inside a
 * wait bounded by -w (until, 0: none), no longer than that, but long
 * enough to hand the request to the servers (LOCK_UNDO_MIN_MS): a
 * stalled server still runs it when it wakes. */
#define LOCK_UNDO_MIN_MS 50
#define LOCK_RELEASE_MS 2000

static int64_t
token_deadline(const struct lock *l, int brief, int64_t until)
{
	int64_t now = clock_ms(), cap;
	int64_t d = now + (brief || l->n > 1 ? l->op_timeout : LOCK_RELEASE_MS);

	if (until <= 0)
		return d;
	cap = until > now + LOCK_UNDO_MIN_MS ? until : now + LOCK_UNDO_MIN_MS;
	return cap < d ? cap : d;
}

/* The least time an exclusive holder's record outlives its lease when
 * a renewal extends it: a TTL, but no less than this, so that with a
 * short TTL (renewals every ttl/3) the record is not extended every
 * few renewals; still short against the minute after which nothing of
 * a name is left. */
#define RECORD_SLACK_MS 10000

/* The lease lock_expire() leaves: the shortest PEXPIRE there is, so the
 * lease ends at once, by expiry. */
#define LOCK_EXPIRE_MS 1

/* How long a lease of ttl ms makes an exclusive holder's record live:
 * the lease and the slack, or with --lock-delay the lease and exactly
 * the delay (proto.c): every renewal sets it so. */
static int64_t
record_ms_for(const struct lock *l, int64_t ttl)
{
	if (l->policy.delay > 0)
		return ttl + l->policy.delay;
	return ttl + (ttl > RECORD_SLACK_MS ? ttl : RECORD_SLACK_MS);
}

/* The record's life for a renewal of the usual lease. */
int64_t
lock_record_ms(const struct lock *l)
{
	return record_ms_for(l, l->ttl);
}

/* A renewal's outcome on a server that gave no usable reply (the
 * others: the script's, enum token_reply in scripts.h). */
#define RENEW_NONE 9

static int
renew_code(const redisReply *p)
{
	return p != NULL && p->type == REDIS_REPLY_INTEGER ?
	    (int)p->integer : RENEW_NONE;
}

/* Did a Redis Cluster answer TRYAGAIN: a command on several keys while
 * their slot migrates and the node has some of them, not all? */
static int
is_tryagain(const redisReply *p)
{
	return reply_error(p) == SERVER_TRYAGAIN;
}

/* A request done key by key (while a Redis Cluster migrates the slot):
 * for token, held shared or not, on the servers marked in split[],
 * until deadline. */
struct by_key {
	int shared;
	const char *token;
	const char *split;
	int64_t deadline;
};

/* One step of release_by_key(): its script, where it takes the token
 * and a number (0: it does not), the number, and the first step's
 * outcome it needs (RENEW_NONE: a release). */
struct step_of_release {
	enum script script;
	int tok, nump;
	long long num;
	int need;
	int nump2;		/* a second number, where a step takes one */
	long long num2;
};

/*
 * A renewal that met TRYAGAIN on the servers marked in split[]: a Redis
 * Cluster migrates the lock's slot and has moved some of its keys, not
 * all, which no script on several keys survives however long it is
 * retried.  A migration is not a lost key: renew there key by key, with
 * a script of one key each, which runs where its key is (following its
 * own ASK).  The key that says whether the token holds the lock goes
 * first (K for an exclusive holder, the holders' set for a shared one),
 * and the others are touched only where it said so, so that a lease the
 * token no longer holds is never extended.  code[i] gets each split
 * server's outcome, as renew_code() has it.
 */
static void
renew_by_key(const struct lock *l, const struct by_key *b, int64_t ttl,
    int64_t record_ms, int *code, struct lock_outcome *o)
{
	/* Each step: its script, and where it takes the token and the
	 * duration (the TTL; the record's for renew_record.lua). */
	static const struct {
		enum script script;
		int token, ms;
	} step[2][3] = {
		{ { SCRIPT_RENEW_LEASE, ARG_RENEW_TOKEN, ARG_RENEW_TTL },
		  { SCRIPT_RENEW_RECORD, ARG_RENEW_RECORD_TOKEN,
		    ARG_RENEW_RECORD_RECORD_MS } },
		{ { SCRIPT_SH_RENEW_SET, ARG_SH_RENEW_SET_TOKEN,
		    ARG_SH_RENEW_SET_TTL },
		  { SCRIPT_SH_RENEW_MARK, ARG_SH_RENEW_MARK_TOKEN,
		    ARG_SH_RENEW_MARK_TTL },
		  { SCRIPT_SH_RENEW_META, ARG_SH_RENEW_META_TOKEN,
		    ARG_SH_RENEW_META_TTL } },
	};
	int shared = b->shared, steps = shared ? 3 : record_ms > 0 ? 2 : 1;
	struct conn_req r[l->n];
	char skip[l->n];

	o->err[0] = '\0';
	for (int s = 0; s < steps; s++) {
		struct args a;
		int left = 0;

		for (int i = 0; i < l->n; i++) {
			skip[i] = (char)(!b->split[i] ||
			    (s > 0 && code[i] != TOKEN_DONE &&
			    code[i] != TOKEN_STOP));
			left += !skip[i];
		}
		if (left == 0)
			return;
		args_script(&a, step[shared][s].script, &l->k);
		args_put_str(&a, step[shared][s].token, b->token);
		args_put_num(&a, step[shared][s].ms,
		    s == 1 && !shared ? record_ms : ttl);
		quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
		    .deadline = b->deadline, .intr_fd = -1, .skip = skip,
		    .err = o->err, .errlen = sizeof(o->err) });
		for (int i = 0; i < l->n; i++) {
			int c = renew_code(r[i].reply);

			/* Later steps: no reply fails the renewal; K not
			 * held shared loses it; metadata may ask to stop. */
			if (!skip[i] && (s == 0 || c == RENEW_NONE ||
			    (shared && c != TOKEN_DONE)))
				code[i] = c;
		}
		conn_req_clear(r, l->n);
	}
}

/* sh_release_set.lua's reply when the token was the last holder. */
#define RELEASE_LAST 3

/* One step of a request key by key: a on the servers where skip[] is
 * 0 (none: nothing is sent), each one's integer reply into code[]
 * (RENEW_NONE: none, or skipped). */
static void
key_step(const struct lock *l, struct args *a, const char *skip,
    int64_t deadline, int *code, struct lock_outcome *o)
{
	struct conn_req r[l->n];

	for (int i = 0; i < l->n; i++)
		code[i] = RENEW_NONE;
	if (memchr(skip, 0, (size_t)l->n) == NULL)
		return;
	quorum_exec(l->conns, l->n, a, r, &(struct quorum_how){
	    .deadline = deadline, .intr_fd = -1, .skip = skip,
	    .err = o->err, .errlen = sizeof(o->err) });
	for (int i = 0; i < l->n; i++)
		if (!skip[i])
			code[i] = renew_code(r[i].reply);
	conn_req_clear(r, l->n);
}

/* key_step() of script s with the token (at argument tok, 0: none)
 * and the number num (at argument nump, 0: none), on the split
 * servers where code[] is `need` (RENEW_NONE: any that was released). */
static void
release_step(const struct lock *l, const struct by_key *b,
    const struct keys *k, const int code[], struct step_of_release st,
    struct lock_outcome *o)
{
	char skip[l->n];
	int out[l->n];
	struct args a;

	for (int i = 0; i < l->n; i++)
		skip[i] = (char)(!b->split[i] || (st.need == RENEW_NONE ?
		    code[i] != TOKEN_DONE && code[i] != RELEASE_LAST :
		    code[i] != st.need));
	args_script(&a, st.script, k);
	if (st.tok > 0)
		args_put_str(&a, st.tok, b->token);
	if (st.nump > 0)
		args_put_num(&a, st.nump, st.num);
	if (st.nump2 > 0)
		args_put_num(&a, st.nump2, st.num2);
	key_step(l, &a, skip, b->deadline, out, o);
}

/*
 * Release rel (rel->token's hold) where a release met TRYAGAIN, on the
 * servers marked in b->split: as renew_by_key(), key by key, the key
 * that says whether the token holds the lock first (K; the holders'
 * set when shared), then, where it was released, the holder's record,
 * --once-per's success, K held shared when the last shared holder left,
 * and a wake-up (both lists when shared: whether writers wait is
 * another key's).  code[i] gets each split server's outcome of the
 * first step (TOKEN_DONE released, or release.lua's others).
 */
static void
release_by_key(const struct lock *l, const struct release *rel,
    const struct by_key *b, int *code, struct lock_outcome *o)
{
	static const int tok_arg[2] = { ARG_RELEASE_KEY_TOKEN,
	    ARG_SH_RELEASE_SET_TOKEN };
	struct keys xk = l->k;
	struct args a;
	int sh = b->shared != 0;
	char skip[l->n];

	for (int i = 0; i < l->n; i++)
		skip[i] = (char)!b->split[i];
	args_script(&a, sh ? SCRIPT_SH_RELEASE_SET : SCRIPT_RELEASE_KEY, &l->k);
	args_put_str(&a, tok_arg[sh], b->token);
	o->err[0] = '\0';
	key_step(l, &a, skip, b->deadline, code, o);
	release_step(l, b, &l->k, code, sh ?
	    (struct step_of_release){ SCRIPT_SH_RELEASE_META,
	    ARG_SH_RELEASE_META_TOKEN, 0, 0, RENEW_NONE, 0, 0 } :
	    (struct step_of_release){ SCRIPT_RELEASE_RECORD,
	    ARG_RELEASE_RECORD_TOKEN, 0, 0, RENEW_NONE, 0, 0 }, o);
	if (!sh && rel->done_period > 0)
		release_step(l, b, &l->k, code, (struct step_of_release){
		    SCRIPT_ONCE_DONE, 0, ARG_ONCE_DONE_PERIOD,
		    rel->done_period, RENEW_NONE, ARG_ONCE_DONE_AGE,
		    clock_ms() - rel->done_since }, o);
	if (sh)
		release_step(l, b, &l->k, code, (struct step_of_release){
		    SCRIPT_SH_RELEASE_MARK, 0, 0, 0, RELEASE_LAST, 0, 0 }, o);
	release_step(l, b, &l->k, code, (struct step_of_release){
	    SCRIPT_WAKE_PUSH, 0, ARG_WAKE_PUSH_LINGER, PROTO_WAKE_LINGER_MS,
	    RENEW_NONE, 0, 0 }, o);
	xk.wake = xk.xwake;
	xk.wakelen = xk.xwakelen;
	if (sh)
		release_step(l, b, &xk, code, (struct step_of_release){
		    SCRIPT_WAKE_PUSH, 0, ARG_WAKE_PUSH_LINGER,
		    PROTO_WAKE_LINGER_MS, RELEASE_LAST, 0, 0 }, o);
	for (int i = 0; i < l->n; i++)
		if (code[i] == RELEASE_LAST)
			code[i] = TOKEN_DONE;
}

/*
 * Extend token's lease on every server (the renewal thread, which owns
 * the connections while the command runs), and with record_ms > 0 the
 * holder's record's to that (0: leave it).  Returns how many servers
 * renewed; *lost is set when so many servers found the lock gone or
 * held by another token that a quorum can no longer renew; o->stop when
 * a server says an operator asked us to stop.
 */
int
lock_renew(const struct lock *l, const char *token, int64_t deadline,
    int64_t record_ms, int *lost, struct lock_outcome *o)
{
	*lost = 0;
	if (l->n <= 0)
		return 0;
	struct conn_req r[l->n];
	struct args a;
	int ok = 0, gone = 0, code[l->n], splits = 0;
	char split[l->n];

	args_script(&a, l->policy.shared ? SCRIPT_SH_RENEW : record_ms > 0 ?
	    SCRIPT_RENEW : SCRIPT_RENEW_LEASE, &l->k);
	if (l->policy.shared) {
		args_put(&a, ARG_SH_RENEW_TOKEN, token, LOCK_TOKEN_LEN);
		args_put_num(&a, ARG_SH_RENEW_TTL, l->ttl);
	} else {
		args_put(&a, ARG_RENEW_TOKEN, token, LOCK_TOKEN_LEN);
		args_put_num(&a, ARG_RENEW_TTL, l->ttl);
		if (record_ms > 0)
			args_put_num(&a, ARG_RENEW_RECORD_MS, record_ms);
	}
	a.tryagain = 1;		/* see renew_by_key() */
	o->err[0] = '\0';
	o->stop = 0;
	lock_round(l, &a, r, deadline, o);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		code[i] = renew_code(p);
		splits += split[i] = (char)is_tryagain(p);
		if (p != NULL && p->type != REDIS_REPLY_INTEGER &&
		    p->type != REDIS_REPLY_ERROR)
			quorum_note(&l->conns[i], &r[i], o->err, sizeof(o->err));
	}
	conn_req_clear(r, l->n);
	if (splits > 0)
		renew_by_key(l, &(struct by_key){ .shared = l->policy.shared,
		    .token = token, .split = split, .deadline = deadline },
		    l->ttl, record_ms, code, o);
	for (int i = 0; i < l->n; i++) {
		if (code[i] == RENEW_NONE)
			continue;
		if (code[i] == TOKEN_DONE || code[i] == TOKEN_STOP) {
			ok++;
			o->stop |= code[i] == TOKEN_STOP;
			continue;
		}
		gone++;
		snprintf(o->err, sizeof(o->err), "%s: %s", l->conns[i].name,
		    code[i] == TOKEN_OTHER ?
		    "the lock is held by another token" :
		    code[i] == TOKEN_SHARED ?
		    "the lock is held shared by others" :
		    "the lock is gone");
	}
	*lost = l->n - gone < l->quorum;
	return ok;
}

/*
 * a = script s for rel->token with arg (the TTL of an extend, the keep
 * ms of a release): release.lua, or release_done.lua with rel's success
 * of --once-per, renew.lua (extend), sh_renew.lua, sh_release.lua.  An
 * exclusive release says nothing of keeping unless it keeps the lock.
 */
static void
token_args(const struct lock *l, enum script s, const struct release *rel,
    long long arg, struct args *a)
{
	args_script(a, s, &l->k);
	switch (s) {
	case SCRIPT_RELEASE:
		args_put_str(a, ARG_RELEASE_TOKEN, rel->token);
		if (arg > 0)
			args_put_num(a, ARG_RELEASE_KEEP_MS, arg);
		break;
	case SCRIPT_RELEASE_DONE:
		args_put_str(a, ARG_RELEASE_DONE_TOKEN, rel->token);
		args_put_num(a, ARG_RELEASE_DONE_PERIOD, rel->done_period);
		args_put_num(a, ARG_RELEASE_DONE_AGE,
		    clock_ms() - rel->done_since);
		if (arg > 0)
			args_put_num(a, ARG_RELEASE_DONE_KEEP_MS, arg);
		break;
	case SCRIPT_RENEW:
		args_put_str(a, ARG_RENEW_TOKEN, rel->token);
		args_put_num(a, ARG_RENEW_TTL, arg);
		args_put_num(a, ARG_RENEW_RECORD_MS, record_ms_for(l, arg));
		break;
	case SCRIPT_SH_RENEW:
		args_put_str(a, ARG_SH_RENEW_TOKEN, rel->token);
		args_put_num(a, ARG_SH_RENEW_TTL, arg);
		break;
	default:	/* SCRIPT_SH_RELEASE */
		args_put_str(a, ARG_SH_RELEASE_TOKEN, rel->token);
		args_put_num(a, ARG_SH_RELEASE_KEEP_MS, arg);
		args_put_num(a, ARG_SH_RELEASE_FENCE_LINGER,
		    PROTO_FENCE_LINGER_MS);
		args_put_num(a, ARG_SH_RELEASE_WAKE_LINGER,
		    PROTO_WAKE_LINGER_MS);
		break;
	}
}

/*
 * Script s of token_args() key by key on the servers of b->split, which
 * answered TRYAGAIN: an extend (and lock_expire()'s) and a release
 * with --min-hold as a renewal (renew_by_key()), a release as
 * release_by_key().  code[i] gets each one's outcome as the script's.
 */
static void
token_by_key(const struct lock *l, enum script s, const struct release *rel,
    long long arg, const struct by_key *b, int *code, struct lock_outcome *o)
{
	if (s == SCRIPT_RENEW || s == SCRIPT_SH_RENEW)
		renew_by_key(l, b, arg, s == SCRIPT_RENEW ?
		    record_ms_for(l, arg) : 0, code, o);
	else if (arg > 0)	/* kept: its lease and record end then */
		renew_by_key(l, b, arg, arg, code, o);
	else
		release_by_key(l, rel, b, code, o);
}

/*
 * Run script s for rel->token on the servers not marked done, once (key
 * by key where a Redis Cluster answers TRYAGAIN: token_by_key()).  A
 * server that failed at once (a connection it had closed) stays
 * unmarked for one more try; done[i] is set for the others.  Returns
 * how many servers did it; adds to *others those where another token
 * holds the lock, and to *shared those where shared holders do (-2).
 */
static int
token_once(const struct lock *l, enum script s, const struct release *rel,
    long long arg, char *done, int *others, int *shared,
    struct lock_outcome *o)
{
	struct conn_req r[l->n];
	struct args a;
	int ok = 0, code[l->n], splits = 0;
	char split[l->n];
	int64_t deadline = token_deadline(l, rel->brief, rel->until);

	/* After a successful run of --once-per the release records it. */
	if (s == SCRIPT_RELEASE && rel->done_period > 0)
		s = SCRIPT_RELEASE_DONE;
	token_args(l, s, rel, arg, &a);
	a.tryagain = 1;		/* see token_by_key() */
	o->err[0] = '\0';
	quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
	    .deadline = deadline, .intr_fd = -1, .skip = done,
	    .err = o->err, .errlen = sizeof(o->err) });
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		code[i] = RENEW_NONE;
		split[i] = (char)(!done[i] && is_tryagain(p));
		splits += split[i];
		if (done[i])
			continue;
		done[i] = (char)(p != NULL || r[i].timed_out);
		if (p != NULL && p->type == REDIS_REPLY_INTEGER)
			code[i] = (int)p->integer;
		else if (p != NULL && p->type != REDIS_REPLY_ERROR)
			quorum_note(&l->conns[i], &r[i], o->err, sizeof(o->err));
	}
	conn_req_clear(r, l->n);
	if (splits > 0)
		token_by_key(l, s, rel, arg, &(struct by_key){ .shared =
		    s == SCRIPT_SH_RENEW || s == SCRIPT_SH_RELEASE,
		    .token = rel->token, .split = split,
		    .deadline = deadline }, code, o);
	for (int i = 0; i < l->n; i++) {
		if (code[i] == RENEW_NONE)
			continue;
		o->answered++;
		ok += code[i] >= TOKEN_DONE;
		o->stop |= code[i] == TOKEN_STOP &&
		    (s == SCRIPT_RENEW || s == SCRIPT_SH_RENEW);
		*others += code[i] == TOKEN_OTHER;
		*shared += code[i] == TOKEN_SHARED;
	}
	return ok;
}

/*
 * token_once() on every server, then once more on the servers that
 * failed at once, unless rel->brief.  s is the exclusive script; a lock
 * held shared (l's policy, or a server's -2) gets its shared
 * counterpart sh.
 */
static int
token_op(const struct lock *l, enum script s, enum script sh,
    const struct release *rel, long long arg, int *others,
    struct lock_outcome *o)
{
	if (l->n <= 0)
		return 0;
	char done[l->n];
	int ok, shared = 0;

	if (l->policy.shared)
		s = sh;
	memset(done, 0, sizeof(done));
	*others = 0;
	o->stop = 0;
	o->answered = 0;
	ok = token_once(l, s, rel, arg, done, others, &shared, o);
	if (memchr(done, 0, sizeof(done)) != NULL && !rel->brief)
		ok += token_once(l, s, rel, arg, done, others, &shared, o);
	if (shared > 0 && s != sh) {
		/* Only shared holders: is TOKEN one of them? */
		memset(done, 0, sizeof(done));
		*others = 0;
		o->answered = 0;
		ok = token_once(l, sh, rel, arg, done, others, &shared, o);
	}
	return ok;
}

/*
 * Release rel->token's hold, or with rel->keep_ms > 0 leave it to
 * expire then (struct release says the rest).  Returns the number of
 * servers where the token held the lock; *others counts those where
 * another token holds it.
 */
int
lock_release(const struct lock *l, const struct release *rel, int *others,
    struct lock_outcome *o)
{
	return token_op(l, SCRIPT_RELEASE, SCRIPT_SH_RELEASE, rel, rel->keep_ms,
	    others, o);
}

/* Reset token's lease to l->ttl; as lock_release().  o->stop: an
 * operator asked its holder to stop. */
int
lock_extend(const struct lock *l, const char *token, int *others,
    struct lock_outcome *o)
{
	return token_op(l, SCRIPT_RENEW, SCRIPT_SH_RENEW,
	    &(struct release){ .token = token }, l->ttl, others, o);
}

/*
 * After a loss, with --lock-delay: let token's lease end now instead of
 * releasing it, so that its record holds NAME back for the delay as
 * after an expiry (the lease set to LOCK_EXPIRE_MS, the record to that
 * and the delay).  One short try; as lock_release().
 */
int
lock_expire(const struct lock *l, const char *token, int *others,
    struct lock_outcome *o)
{
	return token_op(l, SCRIPT_RENEW, SCRIPT_SH_RENEW,
	    &(struct release){ .token = token, .brief = 1 }, LOCK_EXPIRE_MS,
	    others, o);
}

/* A waiter gives up: leave the writers' queue and the waiters, so that
 * nothing of it is left; interrupted (a signal leaves nothing behind),
 * also take back a --replace claim, which otherwise lapses
 * PROTO_CLAIM_MS after its last assertion (unqueue.lua).  Best effort. */
void
lock_unqueue(const struct lock *l, struct lock_waiter *w, int interrupted)
{
	struct conn_req r[l->n];
	struct args a;
	int claim = interrupted && w->claim;

	if (!w->queued && !claim)
		return;
	args_script(&a, SCRIPT_UNQUEUE, &l->k);
	args_put(&a, ARG_UNQUEUE_ID, w->id, LOCK_TOKEN_LEN);
	if (claim)
		args_put(&a, ARG_UNQUEUE_CLAIM, "1", 1);
	lock_round(l, &a, r, token_deadline(l, 1, w->until), NULL);
	conn_req_clear(r, l->n);
	w->queued = 0;
}

/* A holder stopped by redlock stop has released: wake the redlock stop
 * that waits for it.  Best effort. */
void
lock_notify_stopped(const struct lock *l)
{
	struct conn_req r[l->n];
	struct args a;

	args_script(&a, SCRIPT_NOTIFY, &l->k);
	args_put_num(&a, ARG_NOTIFY_LINGER, PROTO_WAKE_LINGER_MS);
	lock_round(l, &a, r, clock_ms() + l->op_timeout, NULL);
	conn_req_clear(r, l->n);
}
