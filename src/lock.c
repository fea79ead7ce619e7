/*
 * lock.c - the lock protocol, over one or several independent servers.
 *
 * One server is a quorum of one: every operation is sent to all servers
 * at once with conn_exec() and counted against a majority, so the single
 * server case and Redlock (SPEC section 5) share one code path.
 *
 * Keys (K = prefix + NAME, byte for byte):
 *   K               the lock; its value is the bare token, so redis-py,
 *                   redsync and node-redlock interoperate with --prefix ''
 *   base "\0fence"  the fencing counter (persistent)
 *   base "\0meta"   holder metadata, a hash expiring with K
 *   base "\0wake"   a list that releases push to, waiters BLPOP
 * where base keeps K's Redis Cluster hash slot (see aux_base()).  An
 * argv string cannot hold a NUL byte, so no NAME can collide with them.
 */
#include "lock.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>

#include <uuid/uuid.h>

#include "clock.h"
#include "lease.h"

/*
 * Take the lock if it is free; a fencing counter missing (new name, or
 * removed by an operator) is seeded from the server clock in
 * microseconds, which is beyond any value it can have had, so fences
 * only ever increase.  Returns {1, fence, run_id} when granted,
 * {2, fence, token} when one of the inherited tokens (ARGV[8..]) holds
 * it, {0, pttl} when someone else does.  The run id (a few microseconds
 * of INFO) lets renewals notice a restart from the start.
 */
static const char acquire_lua[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v then\n"
    "  for i = 8, #ARGV do\n"
    "    if ARGV[i] == v then\n"
    "      local f = redis.call('HGET', KEYS[3], 'fence') or '0'\n"
    "      return {2, tonumber(f), v}\n"
    "    end\n"
    "  end\n"
    "  return {0, redis.call('PTTL', KEYS[1])}\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
    "  local t = redis.call('TIME')\n"
    "  redis.call('SET', KEYS[2], string.format('%.0f', t[1] * 1000000 + t[2]))\n"
    "end\n"
    "local f = redis.call('INCR', KEYS[2])\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "redis.call('DEL', KEYS[3])\n"
    "redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4],\n"
    "  'user', ARGV[5], 'cmd', ARGV[6], 'start', ARGV[7],\n"
    "  'fence', string.format('%.0f', f), 'ttl', ARGV[2])\n"
    "redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
    "return {1, f, string.match(redis.call('INFO', 'server'),\n"
    "  'run_id:(%x+)') or ''}\n";

/*
 * Extend the lease if the token still holds it.  Returns {1, run_id}
 * renewed, {0, run_id} the key is gone or holds another token, {-1,
 * run_id} the server restarted since the last renewal (its run id is not
 * ARGV[3]; with no persistence the key may have been lost and taken by
 * someone else meanwhile).
 */
static const char renew_lua[] =
    "local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''\n"
    "if ARGV[3] ~= '' and id ~= ARGV[3] then return {-1, id} end\n"
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, id} end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "return {1, id}\n";

/*
 * Release if the token holds the lock: delete it and wake one waiter,
 * or with ARGV[2] > 0 (--min-hold) leave it to expire that much later.
 * Returns 1 released, 2 left to expire, 0 held by another token,
 * -1 free.
 */
static const char release_lua[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v ~= ARGV[1] then\n"
    "  if v then return 0 end\n"
    "  return -1\n"
    "end\n"
    "if tonumber(ARGV[2]) > 0 then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "  return 2\n"
    "end\n"
    "redis.call('DEL', KEYS[1], KEYS[2])\n"
    "redis.call('RPUSH', KEYS[3], '1')\n"
    "redis.call('LTRIM', KEYS[3], 0, 0)\n"
    "redis.call('PEXPIRE', KEYS[3], 10000)\n"
    "return 1\n";

/*
 * Quorum mode: raise the fencing counter to the fence of this grant
 * (the largest among the granting servers).  Once a majority holds a
 * counter at least this high, every later grant, whose majority shares
 * a server with this one, mints a larger fence.
 */
static const char bump_lua[] =
    "if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then\n"
    "  redis.call('SET', KEYS[1], ARGV[1])\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[2]) == 1 then\n"
    "  redis.call('HSET', KEYS[2], 'fence', ARGV[1])\n"
    "end\n"
    "return 1\n";

/* Reset the TTL if the token holds the lock: 1, else 0 held, -1 free. */
static const char extend_lua[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v ~= ARGV[1] then\n"
    "  if v then return 0 end\n"
    "  return -1\n"
    "end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "return 1\n";

/*
 * Read (ARGV[1] == '1': and remove) the lock whoever holds it.  Returns
 * {} when there is no lock, else {value, pttl, {meta field, value...}}.
 */
static const char inspect_lua[] =
    "if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then return {} end\n"
    "local v = redis.call('GET', KEYS[1])\n"
    "local r = {v, redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2])}\n"
    "if ARGV[1] == '1' then\n"
    "  redis.call('DEL', KEYS[1], KEYS[2])\n"
    "  redis.call('RPUSH', KEYS[3], '1')\n"
    "  redis.call('LTRIM', KEYS[3], 0, 0)\n"
    "  redis.call('PEXPIRE', KEYS[3], 10000)\n"
    "end\n"
    "return r\n";

/* Until when the lock is surely ours after a grant or renewal sent at
 * clock_ms() value sent. */
int64_t
lock_lease_end(const struct lock *l, int64_t sent)
{
	return lease_end(sent, l->ttl);
}

/* Does the key have a Redis Cluster hash tag: a non-empty "{...}"? */
static int
has_hash_tag(const char *k, size_t n)
{
	const char *o = memchr(k, '{', n), *c;

	if (o == NULL)
		return 0;
	c = memchr(o + 1, '}', n - (size_t)(o + 1 - k));
	return c != NULL && c > o + 1;
}

/*
 * Build base + "\0" + suffix into a new buffer, where base is K itself
 * when K has a hash tag (the suffix does not move its slot), "{K}" when
 * K has no '}' (the tag is exactly K), and K otherwise.
 */
static char *
aux_key(const char *k, size_t n, const char *suffix, size_t *len)
{
	size_t sl = strlen(suffix);
	int wrap = !has_hash_tag(k, n) && memchr(k, '}', n) == NULL;
	char *b = malloc(n + sl + 4), *p = b;

	if (b == NULL)
		return NULL;
	if (wrap)
		*p++ = '{';
	memcpy(p, k, n);
	p += n;
	if (wrap)
		*p++ = '}';
	*p++ = '\0';
	memcpy(p, suffix, sl);
	p += sl;
	*len = (size_t)(p - b);
	return b;
}

/*
 * Set up l for NAME under prefix on n servers.  The connections stay
 * the caller's.  Returns 0, or -1 when out of memory.
 */
int
lock_init(struct lock *l, struct conn *conns, int n, const char *prefix,
    const char *name, int64_t ttl)
{
	size_t pl = strlen(prefix), nl = strlen(name);

	memset(l, 0, sizeof(*l));
	l->conns = conns;
	l->n = n;
	l->quorum = n / 2 + 1;
	l->name = name;
	l->namelen = nl;
	l->ttl = ttl;
	/* One server: its answer is needed, give it time.  Several: a
	 * server that does not answer quickly is passed over (Redlock
	 * wants the timeout small against the TTL). */
	l->op_timeout = n == 1 ? clock_clamp(ttl / 10, 50, 2000) :
	    clock_clamp(ttl / 20, 100, 1000);
	l->busy_pttl = -1;
	if ((l->key = malloc(pl + nl + 1)) == NULL)
		return -1;
	memcpy(l->key, prefix, pl);
	memcpy(l->key + pl, name, nl + 1);
	l->keylen = pl + nl;
	l->fence_key = aux_key(l->key, l->keylen, "fence", &l->fence_keylen);
	l->meta_key = aux_key(l->key, l->keylen, "meta", &l->meta_keylen);
	l->wake_key = aux_key(l->key, l->keylen, "wake", &l->wake_keylen);
	l->run_id = calloc((size_t)n, sizeof(*l->run_id));
	if (l->fence_key == NULL || l->meta_key == NULL ||
	    l->wake_key == NULL || l->run_id == NULL)
		return -1;
	return 0;
}

void
lock_free(struct lock *l)
{
	free(l->key);
	free(l->fence_key);
	free(l->meta_key);
	free(l->wake_key);
	free(l->run_id);
	explicit_bzero(l->token, sizeof(l->token));
	l->key = l->fence_key = l->meta_key = l->wake_key = NULL;
	l->run_id = NULL;
}

/* An argument vector: strings with lengths, built up one at a time. */
struct args {
	int argc;
	const char *argv[64];
	size_t len[64];
	char num[8][24];
	int nums;
};

static void
arg(struct args *a, const char *s, size_t n)
{
	if (a->argc < 64) {
		a->argv[a->argc] = s;
		a->len[a->argc++] = n;
	}
}

static void
arg_str(struct args *a, const char *s)
{
	arg(a, s, strlen(s));
}

static void
arg_num(struct args *a, long long v)
{
	char *b = a->num[a->nums++ & 7];

	snprintf(b, sizeof(a->num[0]), "%lld", v);
	arg_str(a, b);
}

/* EVAL script with the lock key and nkeys - 1 of its auxiliary keys. */
static void
arg_eval(struct args *a, const char *script, const struct lock *l,
    int nkeys, const char *aux1, size_t len1, const char *aux2, size_t len2)
{
	arg_str(a, "EVAL");
	arg_str(a, script);
	arg_num(a, nkeys);
	arg(a, l->key, l->keylen);
	if (nkeys >= 2)
		arg(a, aux1, len1);
	if (nkeys >= 3)
		arg(a, aux2, len2);
}

/* Point every request at the same argument vector. */
static void
req_all(struct conn_req *r, int n, struct args *a)
{
	for (int i = 0; i < n; i++) {
		r[i].argc = a->argc;
		r[i].argv = a->argv;
		r[i].argvlen = a->len;
	}
}

static long long
elem_int(const redisReply *r, size_t i)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return 0;
	r = r->element[i];
	return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

static const char *
elem_str(const redisReply *r, size_t i)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return "";
	r = r->element[i];
	return r->type == REDIS_REPLY_STRING ? r->str : "";
}

/* Note why a server gave no usable reply; keeps the first reason. */
static void
note_err(struct lock *l, const struct conn_req *r, int i)
{
	if (l->err[0] != '\0')
		return;
	if (r->reply != NULL && r->reply->type == REDIS_REPLY_ERROR)
		snprintf(l->err, sizeof(l->err), "%s: %s", l->conns[i].name,
		    r->reply->str);
	else if (r->reply != NULL)
		snprintf(l->err, sizeof(l->err), "%s: unexpected reply",
		    l->conns[i].name);
	else
		snprintf(l->err, sizeof(l->err), "%s", r->err);
}

/* How many replies are an integer (or array headed by one) equal to v;
 * with v < 0, how many are anything else, failures included. */
static int
count_kind(const struct conn_req *r, int n, long long v)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		const redisReply *p = r[i].reply;
		long long got = LLONG_MIN;

		if (p != NULL && p->type == REDIS_REPLY_INTEGER)
			got = p->integer;
		else if (p != NULL && p->type == REDIS_REPLY_ARRAY)
			got = elem_int(p, 0);
		if (v >= 0 ? got == v : (got != 1 && (p != NULL || r[i].err[0])))
			k++;
	}
	return k;
}

/* Acquire or renew: a quorum said yes, or too many said no to get one. */
static int
quorum_settled(const struct conn_req *r, int n, const void *arg)
{
	int quorum = n / 2 + 1;

	(void)arg;
	return count_kind(r, n, 1) >= quorum || count_kind(r, n, 2) >= quorum ||
	    count_kind(r, n, -1) > n - quorum;
}

/* Raise the fencing counters to l->fence; see bump_lua. */
static int
fence_bump(struct lock *l)
{
	struct conn_req r[l->n];
	struct args a = { 0 };
	int ok;

	arg_str(&a, "EVAL");
	arg_str(&a, bump_lua);
	arg_str(&a, "2");
	arg(&a, l->fence_key, l->fence_keylen);
	arg(&a, l->meta_key, l->meta_keylen);
	arg_num(&a, l->fence);
	req_all(r, l->n, &a);
	conn_exec_until(l->conns, r, l->n, clock_ms() + l->op_timeout, -1,
	    quorum_settled, NULL);
	ok = count_kind(r, l->n, 1);
	for (int i = 0; ok < l->quorum && i < l->n; i++)
		if (r[i].reply == NULL || r[i].reply->type != REDIS_REPLY_INTEGER)
			note_err(l, &r[i], i);
	conn_req_clear(r, l->n);
	return ok;
}

/*
 * The next blank-separated word of *p (REDLOCK_HELD's tokens) with its
 * length in *w, advancing *p; NULL at the end or when *p is NULL.
 */
static const char *
held_word(const char **p, size_t *w)
{
	const char *s;

	if (*p == NULL)
		return NULL;
	s = *p + strspn(*p, " ");
	if (*s == '\0')
		return NULL;
	*w = strcspn(s, " ");
	*p = s + *w;
	return s;
}

/* Is token one of the tokens in l->held (inherited from REDLOCK_HELD)? */
int
lock_held_by_parent(const struct lock *l, const char *token)
{
	size_t n = strlen(token), w;

	for (const char *p = l->held, *t; (t = held_word(&p, &w)) != NULL;)
		if (w == n && memcmp(t, token, n) == 0)
			return 1;
	return 0;
}

/* Release our token everywhere after a failed or interrupted attempt,
 * keeping the reason the attempt failed. */
static void
undo(struct lock *l)
{
	char err[sizeof(l->err)];
	int others;

	memcpy(err, l->err, sizeof(err));
	lock_release(l, l->token, 0, &others);
	memcpy(l->err, err, sizeof(err));
}

/*
 * One attempt on every server at once, with a fresh token.  On
 * LOCK_HELD, l->token, fence, sent_at and run_id describe the grant; on
 * anything short of a quorum our token is removed from every server
 * again (a server that timed out may still have granted it).
 */
enum lock_result
lock_try(struct lock *l, int intr_fd)
{
	if (l->n <= 0)
		return LOCK_UNAVAILABLE;
	struct conn_req r[l->n];
	struct args a = { 0 };
	int granted = 0, reentrant = 0, busy = 0, at_max = 0, rc;
	char pid[24], start[24];
	size_t w;
	uuid_t u;
	enum lock_result res;

	uuid_generate_random(u);
	uuid_unparse_lower(u, l->token);
	snprintf(pid, sizeof(pid), "%ld", l->meta.pid);
	snprintf(start, sizeof(start), "%lld", (long long)l->meta.start_ms);
	arg_eval(&a, acquire_lua, l, 3, l->fence_key, l->fence_keylen,
	    l->meta_key, l->meta_keylen);
	arg(&a, l->token, LOCK_TOKEN_LEN);
	arg_num(&a, l->ttl);
	arg_str(&a, l->meta.host);
	arg_str(&a, pid);
	arg_str(&a, l->meta.user);
	arg_str(&a, l->meta.cmd);
	arg_str(&a, start);
	for (const char *p = l->held, *t; (t = held_word(&p, &w)) != NULL;)
		if (w == LOCK_TOKEN_LEN)
			arg(&a, t, w);
	req_all(r, l->n, &a);
	l->err[0] = '\0';
	l->busy_pttl = -1;
	l->fence = 0;
	l->sent_at = clock_ms();
	rc = conn_exec_until(l->conns, r, l->n, l->sent_at + l->op_timeout,
	    intr_fd, quorum_settled, NULL);
	l->granted_at = clock_ms();
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;
		long long kind;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements < 2) {
			note_err(l, &r[i], i);
			continue;
		}
		kind = elem_int(p, 0);
		if ((kind == 1 || kind == 2) && elem_int(p, 1) > l->fence)
			l->fence = elem_int(p, 1);
		if (kind == 1) {
			snprintf(l->run_id[i], sizeof(l->run_id[i]), "%s",
			    elem_str(p, 2));
			granted++;
		}
		else if (kind == 2) {
			reentrant++;
			snprintf(l->token, sizeof(l->token), "%s", elem_str(p, 2));
		} else {
			long long t = elem_int(p, 1);
			busy++;
			if (t >= 0 && (l->busy_pttl < 0 || t < l->busy_pttl))
				l->busy_pttl = t;
		}
	}
	l->slow = 0;
	for (int i = 0; i < l->n; i++) {
		l->slow |= r[i].timed_out;
		/* Granting servers whose counter is already the fence. */
		if (r[i].reply != NULL && elem_int(r[i].reply, 0) == 1 &&
		    elem_int(r[i].reply, 1) == l->fence)
			at_max++;
	}
	conn_req_clear(r, l->n);
	if (rc < 0)
		res = LOCK_INTERRUPTED;
	else if (reentrant >= l->quorum)
		return LOCK_REENTRANT;
	else if (granted >= l->quorum &&
	    lock_lease_end(l, l->sent_at) > l->granted_at) {
		/* Counters that move together (the usual case: the same
		 * servers grant every time) need no bump. */
		if (at_max >= l->quorum || fence_bump(l) >= l->quorum)
			return LOCK_HELD;
		res = LOCK_UNAVAILABLE;
	} else if (granted + reentrant + busy >= l->quorum)
		/* Enough servers answered: the lock is taken (or our grant came
		 * too late); servers that did not answer are not the reason. */
		res = LOCK_BUSY;
	else
		res = LOCK_UNAVAILABLE;
	if (reentrant == 0 && (granted > 0 || granted + busy < l->n))
		undo(l);
	return res;
}

/* Any server answered (a wake-up, or BLPOP's own timeout). */
static int
any_reply(const struct conn_req *r, int n, const void *arg)
{
	(void)arg;
	for (int i = 0; i < n; i++)
		if (r[i].reply != NULL)
			return 1;
	return 0;
}

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

/*
 * Sleep until the lock may have become free, at most ms: block on the
 * wake lists that releases push to, on every server at once, so that a
 * release wakes one waiter per server at once; the first answer ends the
 * wait, and the connections still blocked are closed (their BLPOP would
 * hold up the next command).  Returns 0, -1 on interruption, or 1 when
 * no server answered (after sleeping out ms, so that failing servers
 * are not hammered).
 */
static int
wait_wake(struct lock *l, int64_t ms, int intr_fd)
{
	if (l->n <= 0)
		return 1;
	struct conn_req r[l->n];
	struct args a = { 0 };
	int64_t until;
	char t[32];
	int rc, answered = 0;

	if (ms < 1)
		ms = 1;
	until = clock_ms() + ms;
	snprintf(t, sizeof(t), "%.3f", (double)ms / 1000);
	arg_str(&a, "BLPOP");
	arg(&a, l->wake_key, l->wake_keylen);
	arg_str(&a, t);
	req_all(r, l->n, &a);
	rc = conn_exec_until(l->conns, r, l->n, until + l->op_timeout + 1000,
	    intr_fd, any_reply, NULL);
	for (int i = 0; i < l->n; i++) {
		if (r[i].reply != NULL && r[i].reply->type != REDIS_REPLY_ERROR)
			answered++;
		else if (r[i].reply == NULL && !r[i].timed_out &&
		    l->conns[i].discard > 0)
			conn_close(&l->conns[i]);
		else if (l->err[0] == '\0')
			note_err(l, &r[i], i);
	}
	conn_req_clear(r, l->n);
	if (rc < 0)
		return -1;
	if (answered > 0)
		return 0;
	return nap_until(until, intr_fd) < 0 ? -1 : 1;
}

/* How long to sleep before the next attempt while the lock is busy. */
static int64_t
busy_sleep(const struct lock *l, int64_t left)
{
	/* A holder's PTTL bounds the wait (a crashed holder's key expires);
	 * the poll cap bounds it when a foreign client releases without
	 * waking anyone. */
	int64_t ms = 250 + clock_jitter(50);

	if (l->busy_pttl >= 0 && l->busy_pttl + 1 < ms)
		ms = l->busy_pttl + 1;
	if (left >= 0 && left < ms)
		ms = left;
	return ms;
}

/*
 * Acquire, waiting up to wait ms (0: one attempt; negative: forever).
 * A first attempt that fails gives LOCK_UNAVAILABLE at once, unless
 * servers were merely slow, we may wait, and it was quick about it: a
 * busy machine deserves another try.  Later failures must persist
 * (three attempts and 1.5 seconds) before they do.
 */
enum lock_result
lock_acquire(struct lock *l, int64_t wait, int intr_fd)
{
	int64_t start = clock_ms(), since = 0;
	int64_t until = wait < 0 ? -1 : start + wait;
	int failures = 0, first = 1;

	for (;;) {
		enum lock_result res = lock_try(l, intr_fd);
		int64_t left, ms;
		int rc;

		if (res == LOCK_HELD || res == LOCK_REENTRANT ||
		    res == LOCK_INTERRUPTED ||
		    (res == LOCK_UNAVAILABLE && first && (!l->slow || wait == 0 ||
		    clock_ms() - start >= 1000)))
			return res;
		first = 0;
		left = until < 0 ? -1 : until - clock_ms();
		if (res == LOCK_BUSY) {
			failures = 0;
			if (wait == 0 || (until >= 0 && left <= 0))
				return res;
			/* Redlock: contenders that split the votes back off
			 * by a random delay before trying again. */
			if (l->n > 1 && nap_until(clock_ms() + clock_jitter(30),
			    intr_fd) < 0)
				return LOCK_INTERRUPTED;
			ms = busy_sleep(l, left);
		} else {
			if (failures++ == 0)
				since = clock_ms();
			if (failures >= 3 && clock_ms() - since >= 1500)
				return res;
			ms = 100LL * failures;
		}
		rc = wait_wake(l, ms, intr_fd);
		if (rc < 0)
			return LOCK_INTERRUPTED;
		if (rc > 0 && failures++ == 0)
			since = clock_ms();
	}
}

/*
 * Extend the lease on every server with conns (the renewal thread's
 * own).  run_id[i] holds server i's run id as last seen ("": unknown)
 * and is updated.  Returns how many servers renewed.  *lost is
 * set when so many servers answered that the lock is gone (key missing,
 * another token, restarted server) that a quorum can no longer renew.
 */
int
lock_renew(const struct lock *l, struct conn *conns, char (*run_id)[48],
    int64_t deadline, int *lost, char *why, size_t whylen)
{
	struct conn_req r[l->n];
	struct args a[l->n];	/* one a server: the run ids differ */
	int ok = 0, gone = 0;

	for (int i = 0; i < l->n; i++) {
		a[i].argc = a[i].nums = 0;
		arg_eval(&a[i], renew_lua, l, 2, l->meta_key, l->meta_keylen,
		    NULL, 0);
		arg(&a[i], l->token, LOCK_TOKEN_LEN);
		arg_num(&a[i], l->ttl);
		arg_str(&a[i], run_id[i]);
		req_all(&r[i], 1, &a[i]);
	}
	conn_exec_until(conns, r, l->n, deadline, -1, quorum_settled, NULL);
	why[0] = '\0';
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;
		long long code;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements != 2) {
			if (why[0] == '\0')
				snprintf(why, whylen, "%s", p != NULL &&
				    p->type == REDIS_REPLY_ERROR ? p->str :
				    p != NULL ? "unexpected reply" : r[i].err);
			continue;
		}
		code = elem_int(p, 0);
		if (code == 1) {
			ok++;
			snprintf(run_id[i], sizeof(run_id[i]), "%s", elem_str(p, 1));
			continue;
		}
		gone++;
		snprintf(why, whylen, "%s: %s", conns[i].name, code == 0 ?
		    "the lock is gone or held by another token" :
		    "the server restarted");
	}
	conn_req_clear(r, l->n);
	*lost = l->n - gone < l->quorum;
	return ok;
}

/*
 * Run release_lua or extend_lua for token on every server.  Returns how
 * many servers did it; *others counts servers where another token holds
 * the lock.
 */
static int
token_once(struct lock *l, const char *script, const char *token,
    long long arg1, int *others, char *retry)
{
	struct conn_req r[l->n];
	struct args a = { 0 };
	int ok = 0;

	arg_eval(&a, script, l, script == release_lua ? 3 : 2, l->meta_key,
	    l->meta_keylen, l->wake_key, l->wake_keylen);
	arg(&a, token, strlen(token));
	arg_num(&a, arg1);
	req_all(r, l->n, &a);
	for (int i = 0; i < l->n; i++)
		if (!retry[i])
			r[i].argc = 0;
	*others = 0;
	l->err[0] = '\0';
	conn_exec(l->conns, r, l->n, clock_ms() +
	    (l->brief || l->n > 1 ? l->op_timeout : 2000), -1);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		/* A server that failed at once (a connection it had closed)
		 * is worth one more try; one that timed out is not. */
		retry[i] = (char)(retry[i] && p == NULL && !r[i].timed_out);
		if (r[i].argc == 0)
			continue;
		if (p == NULL || p->type != REDIS_REPLY_INTEGER)
			note_err(l, &r[i], i);
		else if (p->integer > 0)
			ok++;
		else if (p->integer == 0)
			(*others)++;
	}
	conn_req_clear(r, l->n);
	return ok;
}

/*
 * token_once() on every server, then once more on the servers that
 * failed at once (a connection they had closed), unless l->brief.
 */
static int
token_op(struct lock *l, const char *script, const char *token,
    long long arg1, int *others)
{
	char retry[l->n];
	int ok, again = 0;

	memset(retry, 1, sizeof(retry));
	ok = token_once(l, script, token, arg1, others, retry);
	if (memchr(retry, 1, sizeof(retry)) != NULL && !l->brief) {
		ok += token_once(l, script, token, arg1, &again, retry);
		*others += again;
	}
	return ok;
}

/*
 * Release token's hold, or with keep_ms > 0 leave it to expire then.
 * Returns the number of servers where the token held the lock; *others
 * counts those where another token holds it.
 */
int
lock_release(struct lock *l, const char *token, int64_t keep_ms, int *others)
{
	return token_op(l, release_lua, token, keep_ms, others);
}

/*
 * Delete the fencing counter on every server; the next grant seeds it
 * from the server clock, above any fence it gave before.  Returns how
 * many servers had one, or -1 if fewer than a quorum answered.
 */
int
lock_forget_fence(struct lock *l)
{
	struct conn_req r[l->n];
	struct args a = { 0 };
	int had = 0, answered = 0;

	arg_str(&a, "DEL");
	arg(&a, l->fence_key, l->fence_keylen);
	req_all(r, l->n, &a);
	l->err[0] = '\0';
	conn_exec(l->conns, r, l->n, clock_ms() + 2000, -1);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_INTEGER) {
			note_err(l, &r[i], i);
			continue;
		}
		answered++;
		had += p->integer > 0;
	}
	conn_req_clear(r, l->n);
	return answered < l->quorum ? -1 : had;
}

/* Reset token's lease to l->ttl; as lock_release(). */
int
lock_extend(struct lock *l, const char *token, int *others)
{
	return token_op(l, extend_lua, token, l->ttl, others);
}

static void
view_meta(struct lock_view *v, const redisReply *h)
{
	for (size_t i = 0; i + 1 < h->elements; i += 2) {
		const char *f = h->element[i]->str, *val = h->element[i + 1]->str;

		if (f == NULL || val == NULL)
			continue;
		v->has_meta = 1;
		if (strcmp(f, "host") == 0)
			snprintf(v->meta.host, sizeof(v->meta.host), "%s", val);
		else if (strcmp(f, "user") == 0)
			snprintf(v->meta.user, sizeof(v->meta.user), "%s", val);
		else if (strcmp(f, "cmd") == 0)
			snprintf(v->meta.cmd, sizeof(v->meta.cmd), "%s", val);
		else if (strcmp(f, "pid") == 0)
			v->meta.pid = strtol(val, NULL, 10);
		else if (strcmp(f, "start") == 0)
			v->meta.start_ms = strtoll(val, NULL, 10);
		else if (strcmp(f, "fence") == 0)
			v->fence = strtoll(val, NULL, 10);
	}
}

/*
 * Fill v[i] with server i's view of the lock; with remove, delete it
 * too, whoever holds it.  Returns how many servers answered.
 */
int
lock_inspect(struct lock *l, struct lock_view *v, int remove)
{
	struct conn_req r[l->n];
	struct args a = { 0 };
	int answered = 0;

	arg_eval(&a, inspect_lua, l, 3, l->meta_key, l->meta_keylen,
	    l->wake_key, l->wake_keylen);
	arg_str(&a, remove ? "1" : "0");
	req_all(r, l->n, &a);
	l->err[0] = '\0';
	conn_exec(l->conns, r, l->n, clock_ms() + 2000, -1);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		memset(&v[i], 0, sizeof(v[i]));
		if (p == NULL || p->type != REDIS_REPLY_ARRAY) {
			note_err(l, &r[i], i);
			continue;
		}
		v[i].answered = 1;
		answered++;
		if (p->elements < 3)
			continue;
		v[i].held = 1;
		snprintf(v[i].token, sizeof(v[i].token), "%s", elem_str(p, 0));
		v[i].pttl = elem_int(p, 1);
		if (p->element[2]->type == REDIS_REPLY_ARRAY)
			view_meta(&v[i], p->element[2]);
	}
	conn_req_clear(r, l->n);
	return answered;
}
