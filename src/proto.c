/*
 * proto.c - the lock protocol's vocabulary: key layout, Lua scripts,
 * argument vectors and reply decoding.  Nothing here does I/O.
 *
 * Keys (K = prefix + NAME, byte for byte):
 *   K               the lock.  Held exclusively, its value is the bare
 *                   token, so redis-py, redsync and node-redlock
 *                   interoperate with --prefix ''.  Held shared, it is
 *                   PROTO_MARKER ("\0shared") with PX = the latest
 *                   shared lease's end, so those clients see NAME taken
 *                   and an exclusive request waits
 *   base "\0fence"  the fencing counter; it expires PROTO_FENCE_LINGER_MS
 *                   after it was seeded, or, where a quorum may have
 *                   raised it (bump_lua) and for shared holds, that long
 *                   after each grant (see below)
 *   base "\0holder" the exclusive holder's record (fence and metadata:
 *                   see LUA_RECORD in proto_view.c), a string granted
 *                   with K's first lease; renewals extend it past K's,
 *                   by at most the longer of a TTL and RECORD_SLACK_MS
 *                   (lock.c), and only when K's new lease would come
 *                   near its end (renew.c); with --lock-delay, by
 *                   exactly the delay at every renewal (proto_sched.c)
 *   base "\0wake"   a list that releases push to, waiters BLPOP; it
 *                   lingers PROTO_WAKE_LINGER_MS
 *   base "\0waiting" the waiters between two attempts: a sorted set of
 *                   waiter ids (scores unused) that a busy attempt
 *                   which will wait joins, expiring a while after the
 *                   last one joined (longer than a waiter sleeps); a
 *                   waiter leaves it when granted or giving up.  An
 *                   exclusive release pushes a wake-up only while it
 *                   exists, so an uncontended release touches no list
 *   base "\0holders" shared holders: a sorted set of tokens scored by
 *                   their lease's end in the server's clock (ms), so a
 *                   holder that died stops counting when its lease ends
 *   base "\0hmeta"  shared holders' metadata: a hash of "TOKEN:field"
 *   base "\0xwait"  waiting exclusive requests: a sorted set of waiter
 *                   ids scored by when the entry lapses (server ms);
 *                   while it is not empty no shared request is granted
 *                   (writer preference)
 *   base "\0xwake"  a list that wakes exclusive waiters only
 *   base "\0stop"   tokens an operator asked to stop (redlock stop): a
 *                   set that the stop verb keeps, expiring soon after
 *                   the holders' leases; each holder is also marked
 *                   where its renewal looks: an exclusive holder's K
 *                   becomes token .. "\0stop" (its TTL kept: see
 *                   LUA_UNMARK), a shared holder's hmeta gets TOKEN:stop
 *   base "\0stopped" a list a stopped holder pushes to once released,
 *                   which redlock stop blocks on
 *   base "\0done"   --once-per: the server's ms of NAME's last success,
 *                   written by the release after a successful run and
 *                   living until the end of that period (proto_sched.c)
 * where base puts them in K's Redis Cluster hash slot, for every NAME
 * (see aux_key()), so that every script runs on one node.  An
 * argv string cannot hold a NUL byte, so no NAME can collide with them.
 *
 * How NAME is held back while K is free (--lock-delay, --replace) is
 * told at the top of proto_sched.c.
 *
 * Shared holders and the exclusive holder never coexist: K is either a
 * token or the marker.  Exclusive scripts never read the shared keys on
 * their usual path, so an exclusive lock costs what it did before.
 * Waking: a release pushes one wake-up; a shared grant that leaves
 * room pushes one more, so k admissible waiters wake one after another
 * rather than all at once; a shared request turned away because a
 * writer waits passes the wake-up to the writers' list.
 *
 * What a run costs the server is counted in scripts, in the calls
 * they make and in their arguments: a script's call costs the server
 * about what a small command does, an argument about a third of that,
 * and running a script several times as much (callgrind on
 * redis-server; bench/results.md, G4 and G5).  So the usual exclusive
 * run is two scripts of three calls each (SET NX, INCR of the counter,
 * SET of the record; GET, DEL, EXISTS of the waiters) with five
 * arguments between them, and a renewal is GET and PEXPIRE of K, plus
 * PEXPIRE of the record every few renewals.
 *
 * Fences strictly increase on a server although the counter expires: a
 * missing counter is seeded from the server's clock in microseconds,
 * and every later grant adds one in a script run of its own, which takes
 * longer than a microsecond.  So a fence is never above the server's
 * clock (in µs) at its grant, plus one, and a reseeded counter starts
 * above every fence given before.  The counter may expire while its
 * holder still runs: the next grant, later, reseeds above it all the
 * same.  A quorum's bump can leave a counter ahead of its own server's
 * clock by as much as the servers' clocks differ; such a counter must
 * outlive its last grant by more than that, so a quorum's counters
 * (and shared holds') linger PROTO_FENCE_LINGER_MS after each grant.  (A
 * server clock set back, then a reseed, would break this; so would
 * quorum servers whose clocks differ by more than PROTO_FENCE_LINGER_MS.)
 *
 * Scripts are sent as EVALSHA; a server that does not know one (new,
 * restarted, SCRIPT FLUSH) answers NOSCRIPT and gets the body once.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha1.h"
#include "slot.h"

/* The end of a grant, K just taken: the fence from the counter
 * (KEYS[2]), seeded from the server's clock when missing, then the
 * holder's record (KEYS[3]) from the record's tail rec (see LUA_RECORD),
 * living px ms (the first renewal extends it).  The fence is left in f.
 * Numbers are formatted as integers ('%d': a fence is below 2^53) and
 * passed on as the strings they came in, since formatting a float costs
 * the server more than a call.  The record is set NX: one already there
 * while K was free is a lost holder's or the hold marker, which may
 * hold this request (of waiter id) back (LUA_HOLD: see "Held back"
 * above); then K is given back and held is set to the ms to wait (the
 * script declares it), else the grant goes on. */
#define LUA_GRANT(rec, px, id) \
    "local f = redis.call('INCR', KEYS[2])\n" \
    "if f == 1 then\n" \
    "  local t = redis.call('TIME')\n" \
    "  f = t[1] * 1000000 + t[2] + 1\n" \
    "  redis.call('SET', KEYS[2], string.format('%d', f), 'PX', '" \
    PROTO_STR(PROTO_FENCE_LINGER_MS) "')\n" \
    "end\n" \
    "if not redis.call('SET', KEYS[3], string.format('%d', f) .. " rec ",\n" \
    "    'NX', 'PX', " px ") then\n" \
    "  local m = redis.call('GET', KEYS[3]) or ''\n" \
    "  local t = redis.call('TIME')\n" \
    "  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n" \
    LUA_HOLD("KEYS[3]", id) \
    "  if hold > 0 then\n" \
    "    redis.call('DEL', KEYS[1])\n" \
    "    held = hold\n" \
    "  else\n" \
    "    redis.call('SET', KEYS[3], string.format('%d', f) .. " rec ", 'PX', " \
    px ")\n" \
    "  end\n" \
    "end\n"

/*
 * Take the lock if it is free: the usual request (one server, no
 * inherited token, no failover guard; the others are acquire_any_lua's),
 * which asks the least of the server (bench G4): SET NX first, and few
 * arguments.  KEYS: K, fence, meta, waiting, xwait.  ARGV: token, ttl,
 * the record's tail, and how the request waits: '' it does not, else 'w'
 * ('W' once a busy attempt queued it) and its waiter id.  Returns the
 * fence granted (an integer), {0, pttl} someone else holds it, or {5,
 * ms} NAME is held back (LUA_GRANT).  A busy request that waits joins
 * the waiters (KEYS[4]), so that a release wakes it, and the waiting
 * writers (KEYS[5]), so that shared requests wait behind it, both for
 * PROTO_WAIT_MARK_MS (scored by when that lapses, server ms); a queued
 * request's grant leaves both.
 */
static const char acquire_lua[] =
    "local held\n"
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    LUA_GRANT("ARGV[3]", "ARGV[2]", "string.sub(ARGV[4], 2)")
    "  if not held then\n"
    "    if string.byte(ARGV[4]) == 87 then\n"
    "      local id = string.sub(ARGV[4], 2)\n"
    "      redis.call('ZREM', KEYS[5], id)\n"
    "      redis.call('ZREM', KEYS[4], id)\n"
    "    end\n"
    "    return f\n"
    "  end\n"
    "end\n"
    "if ARGV[4] ~= '' then\n"
    "  local id, t = string.sub(ARGV[4], 2), redis.call('TIME')\n"
    "  local lapse = t[1] * 1000 + math.floor(t[2] / 1000) +\n"
    "    " PROTO_STR(PROTO_WAIT_MARK_MS) "\n"
    "  redis.call('ZADD', KEYS[5], lapse, id)\n"
    "  redis.call('PEXPIRE', KEYS[5], '" PROTO_STR(PROTO_WAIT_MARK_MS) "')\n"
    "  redis.call('ZADD', KEYS[4], lapse, id)\n"
    "  redis.call('PEXPIRE', KEYS[4], '" PROTO_STR(PROTO_WAIT_MARK_MS) "')\n"
    "end\n"
    "if held then return {5, held} end\n"
    "return {0, redis.call('PTTL', KEYS[1])}\n";

/*
 * Take the lock if it is free, any request: acquire_lua's, and on a
 * quorum, with inherited tokens or with the failover guard.  KEYS: K,
 * fence, meta, xwait, holders, waiting.  ARGV: token, ttl, '1' when the
 * counter must linger after each grant (a quorum: see the top) else '0',
 * the record's tail (see
 * LUA_RECORD), queue ms, waiter id, queued, the failover guard (below),
 * mark ms, how long the record lives (the TTL, and --lock-delay's
 * delay), then inherited tokens.  Returns the fence (an integer)
 * granted, {2, fence, token} one of the inherited tokens holds it, {3,
 * 0} one of them holds it shared (an exclusive request would wait for
 * itself), {0, pttl} someone else holds it, {4, ms left, ms since} the
 * failover guard holds grants back, {5, ms} a lost holder's delay or a
 * --replace claim does (LUA_GRANT).  A busy request with queue ms > 0
 * enters the waiting writers (xwait) under its waiter id for that long;
 * a busy request that will wait (mark ms > 0) joins the waiters
 * (KEYS[6]) under the same id, scored by when that lapses (server ms),
 * so that a release wakes it.  Once queued (ARGV[7] == '1') its grant
 * leaves both.
 *
 * With no inherited token and no guard, the grant is SET NX first.
 *
 * The failover guard (SPEC section 9; failover.c says why it is safe).
 * ARGV[8] is '' (no guard: a plain server pays nothing) or the length
 * of the key prefix; the guard's record is the hash prefix .. "\0failover"
 * (no NAME can make that key: a NAME holds no NUL byte) with fields
 * replid (the replication id of the master that last granted), ttl
 * (the longest TTL granted, with its --lock-delay: a loss that the
 * failover hides from the new master still holds NAME back that long
 * after the lease), since and until (server ms: when another
 * replication id was first seen, and until when grants wait).
 */
static const char acquire_any_lua[] =
    LUA_UNMARK
    "local held\n"
    "local function busy(v)\n"
    "  v = unmark(v)\n"
    "  for i = 11, #ARGV do\n"
    "    if ARGV[i] == v then\n"
    "      return {2, " LUA_FENCE_OF("redis.call('GET', KEYS[3])") ", v}\n"
    "    end\n"
    "  end\n"
    "  if v == '\\0shared' then\n"
    "    for i = 11, #ARGV do\n"
    "      if redis.call('ZSCORE', KEYS[5], ARGV[i]) then return {3, 0} end\n"
    "    end\n"
    "  end\n"
    "  local now\n"
    "  if ARGV[5] ~= '0' or ARGV[9] ~= '0' then\n"
    "    local t = redis.call('TIME')\n"
    "    now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "  end\n"
    "  if ARGV[5] ~= '0' then\n"
    "    redis.call('ZADD', KEYS[4], now + ARGV[5], ARGV[6])\n"
    "    redis.call('PEXPIRE', KEYS[4], ARGV[5])\n"
    "  end\n"
    "  if ARGV[9] ~= '0' then\n"
    "    redis.call('ZADD', KEYS[6], now + ARGV[9], ARGV[6])\n"
    "    redis.call('PEXPIRE', KEYS[6], ARGV[9])\n"
    "  end\n"
    "  if held then return {5, held} end\n"
    "  return {0, redis.call('PTTL', KEYS[1])}\n"
    "end\n"
    "if #ARGV < 11 and ARGV[8] == '' then\n"
    "  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "    return busy(false)\n"
    "  end\n"
    "else\n"
    "  local v = redis.pcall('GET', KEYS[1])\n"
    "  if type(v) == 'table' then v = '\\0other' end\n"
    "  if v then return busy(v) end\n"
    LUA_FAILOVER_GUARD("8", "10")
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "end\n"
    LUA_GRANT("ARGV[4]", "ARGV[10]", "ARGV[6]")
    "if held then return busy(false) end\n"
    "if ARGV[7] == '1' then\n"
    "  redis.call('ZREM', KEYS[4], ARGV[6])\n"
    "  redis.call('ZREM', KEYS[6], ARGV[6])\n"
    "end\n"
    "if ARGV[3] == '1' then\n"
    "  redis.call('PEXPIRE', KEYS[2], '" PROTO_STR(PROTO_FENCE_LINGER_MS) "')\n"
    "end\n"
    "return f\n";

/*
 * Reset the lease to ARGV[2] ms if token ARGV[1] holds it (renewal and
 * extend), and with KEYS[2] the record's to ARGV[3] ms (the record
 * outlives K, so that most renewals need not touch it: renew.c; as
 * SCRIPT_RENEW_LEASE they pass K alone).  KEYS: K, meta: keys that exist
 * while the lock is held, so that a renewal runs on the node that has
 * them while a Redis Cluster migrates the slot (a key missing there
 * would answer TRYAGAIN or ASK).  Returns 1, or 2 when an operator asked
 * this holder to stop (redlock stop marked K); else 0 held by another
 * token, -2 held shared, -1 free.
 */
static const char renew_lua[] =
    LUA_TOKEN_HOLDS
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "if KEYS[2] then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end\n"
    "if stop then return 2 end\n"
    "return 1\n";

/*
 * Release if token ARGV[1] holds the lock (LUA_RELEASE, keep ARGV[2]).
 * KEYS: K, meta, wake, waiting, hmeta.  Returns 1 released, 2 left to
 * expire, 0 held by another token, -2 held shared, -1 free.
 */
static const char release_lua[] =
    LUA_TOKEN_HOLDS LUA_RELEASE("ARGV[2]");

/*
 * Quorum mode: raise the fencing counter to the fence of this grant
 * (the largest among the granting servers).  Once a majority holds a
 * counter at least this high, every later grant, whose majority shares
 * a server with this one, mints a larger fence.  The holder's record
 * takes the fence too.  KEYS: fence, meta.  ARGV: fence, its linger.
 * Returns 1.
 */
static const char bump_lua[] =
    "if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then\n"
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "end\n"
    "local m = redis.call('GET', KEYS[2])\n"
    "local e = m and string.find(m, '\\0', 1, true)\n"
    "local ms = redis.call('PTTL', KEYS[2])\n"
    "if e and ms > 0 then\n"
    "  redis.call('SET', KEYS[2], ARGV[1] .. string.sub(m, e), 'PX', ms)\n"
    "end\n"
    "return 1\n";

/*
 * Reset the holder's record (KEYS[1], meta) to ARGV[2] ms if it is
 * token ARGV[1]'s: renew_lua's second half, on its own, for a renewal
 * while a Redis Cluster migrates the slot and K and the record are on
 * two nodes (lock.c; K was renewed first).  Returns 1, or 0 when the
 * record is not the token's.
 */
static const char renew_record_lua[] =
    "local m = redis.pcall('GET', KEYS[1])\n"
    "if type(m) ~= 'string' then return 0 end\n"
    "local e = string.find(m, '\\0', 1, true)\n"
    "if not e or string.sub(m, e + 1, e + #ARGV[1] + 1) ~= ARGV[1] .. '\\0' then\n"
    "  return 0\n"
    "end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "return 1\n";

static const char *const scripts[SCRIPT_COUNT] = {
	acquire_lua, acquire_any_lua, renew_lua, renew_lua, release_lua,
	bump_lua, proto_inspect_lua,
	proto_sh_acquire_lua, proto_sh_renew_lua, proto_sh_release_lua,
	proto_stop_lua, proto_notify_lua, proto_release_done_lua, proto_once_lua,
	renew_record_lua, proto_sh_renew_set_lua, proto_sh_renew_mark_lua,
	proto_sh_renew_meta_lua
};

/* The scripts' SHA-1 names, computed on first use. */
static char shas[SCRIPT_COUNT][41];

/*
 * Build an auxiliary key of K: base + "\0" + suffix, in K's hash slot
 * whatever K is.  base is K itself when K has a hash tag (the suffix
 * does not move its slot); "{K}" when K has no '}' (the tag is exactly
 * K); else, for a K with a '}' but no tag ("deploy}v2"), "{T}K" with T
 * a short tag of K's slot (slot_tag()).  Returns a new buffer, or NULL
 * when out of memory.
 */
static char *
aux_key(const char *k, size_t n, const char *suffix, size_t *len)
{
	size_t sl = strlen(suffix), tl = 0;
	int tagged = slot_has_tag(k, n), wrap = !tagged && !memchr(k, '}', n);
	char tag[4] = "", *b, *p;

	if (!tagged && !wrap)
		tl = slot_tag(slot_of(k, n), tag);
	if ((b = p = malloc(n + sl + tl + 6)) == NULL)
		return NULL;
	if (wrap || tl > 0)
		*p++ = '{';
	memcpy(p, tag, tl);
	p += tl;
	if (tl > 0)
		*p++ = '}';
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

/* An auxiliary key of K named suffix, as aux_key() makes them, for the
 * modules that keep keys of their own beside a lock (record.c). */
char *
proto_aux_key(const char *k, size_t n, const char *suffix, size_t *len)
{
	return aux_key(k, n, suffix, len);
}

/* Fill k with the keys of NAME under prefix.  Returns 0, or -1 when out
 * of memory (free k with proto_keys_free() in either case). */
int
proto_keys(struct keys *k, const char *prefix, const char *name)
{
	size_t pl = strlen(prefix), nl = strlen(name);

	memset(k, 0, sizeof(*k));
	if ((k->key = malloc(pl + nl + 1)) == NULL)
		return -1;
	memcpy(k->key, prefix, pl);
	memcpy(k->key + pl, name, nl + 1);
	k->keylen = pl + nl;
	k->fence = aux_key(k->key, k->keylen, "fence", &k->fencelen);
	k->meta = aux_key(k->key, k->keylen, "holder", &k->metalen);
	k->waiting = aux_key(k->key, k->keylen, "waiting", &k->waitinglen);
	k->wake = aux_key(k->key, k->keylen, "wake", &k->wakelen);
	k->holders = aux_key(k->key, k->keylen, "holders", &k->holderslen);
	k->hmeta = aux_key(k->key, k->keylen, "hmeta", &k->hmetalen);
	k->xwait = aux_key(k->key, k->keylen, "xwait", &k->xwaitlen);
	k->xwake = aux_key(k->key, k->keylen, "xwake", &k->xwakelen);
	k->stop = aux_key(k->key, k->keylen, "stop", &k->stoplen);
	k->stopped = aux_key(k->key, k->keylen, "stopped", &k->stoppedlen);
	k->done = aux_key(k->key, k->keylen, "done", &k->donelen);
	return k->fence && k->meta && k->wake && k->waiting && k->holders &&
	    k->hmeta && k->xwait && k->xwake && k->stop && k->stopped &&
	    k->done ? 0 : -1;
}

void
proto_keys_free(struct keys *k)
{
	char *all[] = { k->key, k->fence, k->meta, k->wake, k->waiting,
	    k->holders,
	    k->hmeta, k->xwait, k->xwake, k->stop, k->stopped, k->done };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
	memset(k, 0, sizeof(*k));
}

void
args_add(struct args *a, const char *s, size_t n)
{
	if (a->argc < ARGS_MAX) {
		a->argv[a->argc] = s;
		a->len[a->argc++] = n;
	}
}

void
args_str(struct args *a, const char *s)
{
	args_add(a, s, strlen(s));
}

void
args_num(struct args *a, long long v)
{
	char *b = a->num[a->nums++ % ARGS_NUMS];

	snprintf(b, sizeof(a->num[0]), "%lld", v);
	args_str(a, b);
}

/* The key that letter c names in args_script(), with its length. */
static const char *
key_by_letter(const struct keys *k, char c, size_t *len)
{
	switch (c) {
	case 'k': *len = k->keylen; return k->key;
	case 'f': *len = k->fencelen; return k->fence;
	case 'm': *len = k->metalen; return k->meta;
	case 'w': *len = k->wakelen; return k->wake;
	case 'a': *len = k->waitinglen; return k->waiting;
	case 'h': *len = k->holderslen; return k->holders;
	case 'H': *len = k->hmetalen; return k->hmeta;
	case 'q': *len = k->xwaitlen; return k->xwait;
	case 'x': *len = k->xwakelen; return k->xwake;
	case 's': *len = k->stoplen; return k->stop;
	case 'o': *len = k->donelen; return k->done;
	default: *len = k->stoppedlen; return k->stopped;
	}
}

/*
 * Start a fresh vector: EVALSHA of script s with the keys of k that it
 * takes, in the order of the script's KEYS comment (the letters below:
 * K, fence, meta, wake, waiting (a), holders, hmeta, xwait (q), xwake,
 * stop, stopped (d), done (o)).  This table is the one place that says
 * which keys a script has.
 */
void
args_script(struct args *a, enum script s, const struct keys *k)
{
	static const char order[SCRIPT_COUNT][10] = {	/* 9 keys at most */
		[SCRIPT_ACQUIRE] = "kfmaq", [SCRIPT_ACQUIRE_ANY] = "kfmqha",
		[SCRIPT_RENEW] = "km", [SCRIPT_RENEW_LEASE] = "k",
		[SCRIPT_RELEASE] = "kmwaH", [SCRIPT_BUMP] = "fm",
		[SCRIPT_INSPECT] = "kmwhHa", [SCRIPT_SH_ACQUIRE] = "kfmhHqwxa",
		[SCRIPT_SH_RENEW] = "khH", [SCRIPT_SH_RELEASE] = "khHwfqx",
		[SCRIPT_STOP] = "khsHm", [SCRIPT_NOTIFY] = "d",
		[SCRIPT_RELEASE_DONE] = "kmwaHo", [SCRIPT_ONCE] = "o",
		[SCRIPT_RENEW_RECORD] = "m", [SCRIPT_SH_RENEW_SET] = "h",
		[SCRIPT_SH_RENEW_MARK] = "k", [SCRIPT_SH_RENEW_META] = "H",
	};

	if (shas[s][0] == '\0')
		sha1_hex(scripts[s], strlen(scripts[s]), shas[s]);
	a->argc = a->nums = 0;
	a->script = (int)s;
	a->tryagain = 0;
	args_str(a, "EVALSHA");
	args_add(a, shas[s], 40);
	args_num(a, (long long)strlen(order[s]));
	for (int i = 0; order[s][i] != '\0'; i++) {
		size_t len;
		const char *key = key_by_letter(k, order[s][i], &len);
		args_add(a, key, len);
	}
}

/* After NOSCRIPT: send the script's body instead of its name. */
void
args_as_eval(struct args *a)
{
	if (a->script < 0 || a->argc < 2)
		return;
	a->argv[0] = "EVAL";
	a->len[0] = 4;
	a->argv[1] = scripts[a->script];
	a->len[1] = strlen(scripts[a->script]);
}

/* Did the server not know the script by its name? */
int
reply_noscript(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* Element i of an array reply as an integer (0 if it is not one); a
 * plain integer reply is its own element 0. */
long long
reply_int(const redisReply *r, size_t i)
{
	if (r == NULL)
		return 0;
	if (r->type == REDIS_REPLY_INTEGER)
		return i == 0 ? r->integer : 0;
	if (r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return 0;
	r = r->element[i];
	return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

/* Element i of an array reply as a string ("" if it is not one). */
const char *
reply_str(const redisReply *r, size_t i)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return "";
	r = r->element[i];
	return r->type == REDIS_REPLY_STRING ? r->str : "";
}
