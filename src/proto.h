/* proto.h - what redlock says to a server: keys, scripts, arguments,
 * and how replies are read.  No I/O here. */
#ifndef REDLOCK_PROTO_H
#define REDLOCK_PROTO_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* A lock's keys on the server: see the layout at the top of proto.c. */
struct keys {
	char *key, *fence, *meta, *wake, *waiting;
	size_t keylen, fencelen, metalen, wakelen, waitinglen;
	/* Shared holders, waiting writers, stop requests. */
	char *holders, *hmeta, *xwait, *xwake, *stop, *stopped;
	size_t holderslen, hmetalen, xwaitlen, xwakelen, stoplen, stoppedlen;
	/* --once-per: when NAME last succeeded. */
	char *done;
	size_t donelen;
};

enum script {
	SCRIPT_ACQUIRE, SCRIPT_ACQUIRE_ANY, SCRIPT_RENEW, SCRIPT_RENEW_LEASE,
	SCRIPT_RELEASE, SCRIPT_BUMP,
	SCRIPT_INSPECT, SCRIPT_SH_ACQUIRE, SCRIPT_SH_RENEW, SCRIPT_SH_RELEASE,
	SCRIPT_STOP, SCRIPT_NOTIFY, SCRIPT_RELEASE_DONE, SCRIPT_ONCE,
	/* A renewal key by key while a Redis Cluster migrates the slot
	 * (hold.c): the exclusive holder's record, the shared holders'
	 * set, K held shared, their metadata. */
	SCRIPT_RENEW_RECORD, SCRIPT_SH_RENEW_SET, SCRIPT_SH_RENEW_MARK,
	SCRIPT_SH_RENEW_META,
	SCRIPT_COUNT
};

/* What K holds while shared holders hold the lock (proto.c): a NUL
 * byte first, so that no token given in argv can equal it. */
#define PROTO_MARKER "\0shared"
#define PROTO_MARKER_LEN 7

/* Lua: the fence in a holder's record m (proto.c), 0 if none. */
#define LUA_FENCE_OF(m) "(tonumber(string.match(" m " or '', '^(%d+)')) or 0)"

/* Lua: the mark that redlock stop appends to an exclusive holder's
 * token in K (no token given in argv can hold its NUL byte).  unmark(v)
 * is K's value v without it, and whether it had it. */
#define LUA_STOP_MARK "'\\0stop'"
/*
 * The failover guard (SPEC section 9; failover.c says why it is safe),
 * a fragment of every acquire script that may grant: ARGV[plen] is ''
 * (no guard: a plain server pays nothing) or the length of the key
 * prefix; the guard's record is the prefix .. "\0failover".  After a
 * failover the script returns {4, ms held back, ms since} instead of
 * granting, until every lease granted before it can have ended
 * (ARGV[lease], the TTL and any --lock-delay, is the longest hold it has
 * seen: a loss that the failover hid from the new master still holds
 * NAME back that long after the lease), and reseeds a fencing counter
 * (KEYS[2]) from before the failover.
 */
#define LUA_FAILOVER_GUARD(plen, lease) \
    "  if ARGV[" plen "] ~= '' then\n" \
    "    local info = redis.call('INFO', 'replication')\n" \
    "    local id = string.match(info, 'master_replid:(%x+)') or ''\n" \
    "    local id2 = string.match(info, 'master_replid2:(%x+)') or ''\n" \
    "    local rk = string.sub(KEYS[1], 1, tonumber(ARGV[" plen "])) .. '\\0failover'\n" \
    "    local t = redis.call('TIME')\n" \
    "    local now = t[1] * 1000 + math.floor(t[2] / 1000)\n" \
    "    local g = redis.call('HMGET', rk, 'replid', 'ttl', 'since', 'until')\n" \
    "    local ttl = math.max(tonumber(g[2]) or 0, tonumber(ARGV[" lease "]))\n" \
    "    if g[1] ~= id then\n" \
    /* A record from another master: a failover.  No record on a server \
     * that was once a replica: one whose first grant was lost.  No \
     * record, never a replica: a new server, not held back. */ \
    "      local hold = ttl\n" \
    "      if not g[1] and not string.find(id2, '[1-9a-f]') then hold = -1 end\n" \
    "      if hold >= 0 then\n" \
    "        g[3], g[4] = now, now + hold\n" \
    "        redis.call('HSET', rk, 'since', string.format('%d', now),\n" \
    "          'until', string.format('%d', now + hold))\n" \
    "      end\n" \
    "      redis.call('HSET', rk, 'replid', id)\n" \
    "    end\n" \
    "    if tonumber(g[4] or 0) > now then\n" \
    "      return {4, g[4] - now, now - g[3]}\n" \
    "    end\n" \
    "    if ttl > (tonumber(g[2]) or 0) then\n" \
    "      redis.call('HSET', rk, 'ttl', ARGV[" lease "])\n" \
    "    end\n" \
    /* A fencing counter from before the failover is reseeded from the \
     * clock, above every fence the old master gave. */ \
    "    if g[3] and\n" \
    "      tonumber(redis.call('GET', KEYS[2]) or '0') < g[3] * 1000 then\n" \
    "      redis.call('DEL', KEYS[2])\n" \
    "    end\n" \
    "  end\n" \
    ""

#define LUA_UNMARK \
    "local function unmark(v)\n" \
    "  if v and string.sub(v, -5) == " LUA_STOP_MARK " then\n" \
    "    return string.sub(v, 1, -6), true\n" \
    "  end\n" \
    "  return v, false\n" \
    "end\n"

/* How long a fencing counter outlives its seeding (or, on a quorum, the
 * last grant of its name): long enough that quorum servers' clocks agree
 * better than that, short enough that a name used once leaves nothing
 * behind a minute later, with ten seconds to spare for a server's lazy
 * expiry. */
#define PROTO_FENCE_LINGER_MS 50000

/* How long a wake list outlives its last push: a waiter that was
 * between two attempts still finds the push when it blocks again. */
#define PROTO_WAKE_LINGER_MS 10000

/* How long a waiter's place in the writers' queue, and its mark that a
 * release should wake it, last without a new attempt: well above the
 * longest sleep between two attempts (wait.c's poll interval plus
 * jitter and a round trip). */
#define PROTO_WAIT_MARK_MS 2000

/* How long readers have the lock to themselves after an exclusive
 * release while writers wait too (phase-fair: otherwise two writers
 * taking turns would keep every shared request out).  A reader woken by
 * the release needs a round trip; one in its pause between attempts
 * wakes within wait.c's poll interval and jitter (300 ms). */
#define PROTO_READERS_TURN_MS 500

/* How long a --replace claim stands without being asserted again: the
 * replacing redlock asserts it every round of its wait (at most
 * WAIT_POLL_MS and a jitter apart, or right after a hold it slept
 * through), so this is a few rounds, and a replacer that died holds
 * the others back no longer than this. */
#define PROTO_CLAIM_MS 2000

/* A number macro as a string literal, for a script's text. */
#define PROTO_STR(x) PROTO_STR_(x)
#define PROTO_STR_(x) #x

/*
 * Lua: what the record key mk holds while K is free (see "Held back"
 * in proto.c), from its value m, at server ms now.  A lost holder's
 * record (its fence first) or the hold marker ("\0hold\0" delay-until
 * "\0" claim "\0" claim-until) gives du, until when a lost holder's
 * --lock-delay holds NAME back (0: none), cl, the waiter id of a
 * --replace claim ('' none), and cu, until when the claim stands; lost
 * tells a holder's record from the marker.
 */
#define LUA_HOLD_PARSE(mk) \
    "local g, pos = {}, 1\n" \
    "for i = 1, 10 do\n" \
    "  local e = string.find(m, '\\0', pos, true) or #m + 1\n" \
    "  g[i] = string.sub(m, pos, e - 1)\n" \
    "  pos = e + 1\n" \
    "end\n" \
    "local du, cl, cu, lost = 0, '', 0, g[1] ~= ''\n" \
    "if not lost then\n" \
    "  du, cl, cu = tonumber(g[3]) or 0, g[4], tonumber(g[5]) or 0\n" \
    "else\n" \
    "  if (tonumber(g[9]) or 0) > 0 then\n" \
    "    du = now + redis.call('PTTL', " mk ")\n" \
    "  end\n" \
    "  cl = g[10]\n" \
    "  if cl ~= '' then\n" \
    "    cu = math.max(now, du) + " PROTO_STR(PROTO_CLAIM_MS) "\n" \
    "  end\n" \
    "end\n"

/*
 * Lua: LUA_HOLD_PARSE, then hold: how many ms a request of waiter id
 * must still wait (<= 0: none).  A lost holder's record that holds
 * anyone back becomes the hold marker, so that its delay keeps its end
 * and a claim can be kept standing past it.
 */
#define LUA_HOLD(mk, id) \
    LUA_HOLD_PARSE(mk) \
    "local hold = du - now\n" \
    "if cl ~= '' and cl ~= " id " and cu - now > hold then\n" \
    "  hold = cu - now\n" \
    "end\n" \
    "if hold > 0 and lost then\n" \
    "  redis.call('SET', " mk ", '\\0hold\\0' .. string.format('%d', du)\n" \
    "    .. '\\0' .. cl .. '\\0' .. string.format('%d', cu), 'PX',\n" \
    "    string.format('%d', math.max(du, cu) - now))\n" \
    "end\n"

/* The start of every script that acts for token ARGV[1]: go on only if
 * it holds K (stop set when redlock stop marked it), else return 0
 * (another token), -2 (held shared) or -1 (free). */
#define LUA_TOKEN_HOLDS \
    "local v, stop = redis.pcall('GET', KEYS[1]), false\n" \
    "if type(v) == 'table' then v = '\\0other' end\n" \
    "if v ~= ARGV[1] then\n" \
    "  if v == '\\0shared' then return -2 end\n" \
    "  if not v then return -1 end\n" \
    "  if v ~= ARGV[1] .. " LUA_STOP_MARK " then return 0 end\n" \
    "  stop = true\n" \
    "end\n"

/*
 * The rest of a release once LUA_TOKEN_HOLDS passed: delete K with its
 * record, and wake one waiter if any waits (KEYS[4]; the wake list
 * lingers PROTO_WAKE_LINGER_MS); given keep (--min-hold: ms, always
 * more than 0) leave both to expire that much later instead.  When
 * shared requests were turned away for waiting writers (hmeta's rwait,
 * see proto_sh_acquire_lua), the readers get the next turn: K is left
 * held shared by nobody for PROTO_READERS_TURN_MS, which writers cannot
 * take and readers may, waiting writers or not (hmeta's turn), and
 * every waiter is woken.  A holder that redlock stop marked may carry a
 * --replace claim in its record's tenth field: the record then becomes
 * the hold marker with that claim, which stands PROTO_CLAIM_MS, so that
 * the replacing redlock, woken by lock_notify_stopped(), gets NAME
 * before anyone woken here (no readers' turn then).  KEYS: K, meta,
 * wake, waiting, hmeta.  Returns 1 released, 2 left to expire.
 */
#define LUA_RELEASE(keep) \
    "if " keep " then\n" \
    "  redis.call('PEXPIRE', KEYS[1], " keep ")\n" \
    "  redis.call('PEXPIRE', KEYS[2], " keep ")\n" \
    "  return 2\n" \
    "end\n" \
    "local claim = ''\n" \
    "if stop then\n" \
    "  local m, pos = redis.call('GET', KEYS[2]) or '', 1\n" \
    "  for i = 1, 9 do\n" \
    "    pos = (string.find(m, '\\0', pos, true) or #m + 1) + 1\n" \
    "  end\n" \
    "  claim = string.sub(m, pos)\n" \
    "end\n" \
    "if claim ~= '' then\n" \
    "  local t = redis.call('TIME')\n" \
    "  local cu = t[1] * 1000 + math.floor(t[2] / 1000) + " \
    PROTO_STR(PROTO_CLAIM_MS) "\n" \
    "  redis.call('SET', KEYS[2], '\\0hold\\0' .. '0' .. '\\0' .. claim ..\n" \
    "    '\\0' .. string.format('%d', cu), 'PX', '" \
    PROTO_STR(PROTO_CLAIM_MS) "')\n" \
    "  redis.call('DEL', KEYS[1])\n" \
    "else\n" \
    "  redis.call('DEL', KEYS[1], KEYS[2])\n" \
    "end\n" \
    "if redis.call('EXISTS', KEYS[4]) == 0 then return 1 end\n" \
    "local t = redis.call('TIME')\n" \
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n" \
    "local n = 1\n" \
    "if claim == '' and\n" \
    "    tonumber(redis.call('HGET', KEYS[5], 'rwait') or '0') > now then\n" \
    "  local turn = '" PROTO_STR(PROTO_READERS_TURN_MS) "'\n" \
    "  redis.call('SET', KEYS[1], '\\0shared', 'PX', turn)\n" \
    "  redis.call('HSET', KEYS[5], 'turn', string.format('%d', now + turn))\n" \
    "  redis.call('PEXPIRE', KEYS[5], turn)\n" \
    "  n = math.min(redis.call('ZCARD', KEYS[4]), 1000)\n" \
    "  redis.call('DEL', KEYS[3])\n" \
    "end\n" \
    "local ones = {}\n" \
    "for i = 1, n do ones[i] = '1' end\n" \
    "if redis.call('RPUSH', KEYS[3], unpack(ones)) > n then\n" \
    "  redis.call('LTRIM', KEYS[3], 0, n - 1)\n" \
    "end\n" \
    "redis.call('PEXPIRE', KEYS[3], '" PROTO_STR(PROTO_WAKE_LINGER_MS) "')\n" \
    "return 1\n"

/* The bodies of the shared-lock and stop scripts (proto_shared.c), of
 * --once-per's (proto_sched.c) and the operators' view (proto_view.c). */
extern const char proto_sh_acquire_lua[], proto_sh_renew_lua[],
    proto_sh_release_lua[], proto_stop_lua[], proto_notify_lua[],
    proto_release_done_lua[], proto_once_lua[], proto_inspect_lua[],
    proto_sh_renew_set_lua[], proto_sh_renew_mark_lua[],
    proto_sh_renew_meta_lua[];

/* The longest vector: a script call with its keys, the holder's
 * metadata and the inherited tokens (REDLOCK_HELD) that fit. */
#define ARGS_MAX 64

/* The most numbers one vector holds (the shared acquire has ten). */
#define ARGS_NUMS 16

/* An argument vector: strings with lengths, built up one at a time.
 * Numbers are formatted into the vector's own buffers. */
struct args {
	int argc;
	const char *argv[ARGS_MAX];
	size_t len[ARGS_MAX];
	char num[ARGS_NUMS][24];
	int nums;
	int script;		/* the script run by argv, or -1 */
	int tryagain;		/* a Redis Cluster's TRYAGAIN is the
				 * caller's, not retried (cluster.c) */
};

int proto_keys(struct keys *k, const char *prefix, const char *name);
void proto_keys_free(struct keys *k);
char *proto_aux_key(const char *k, size_t n, const char *suffix, size_t *len);
void args_add(struct args *a, const char *s, size_t n);
void args_str(struct args *a, const char *s);
void args_num(struct args *a, long long v);
void args_script(struct args *a, enum script s, const struct keys *k);
void args_as_eval(struct args *a);
int reply_noscript(const redisReply *r);
long long reply_int(const redisReply *r, size_t i);
const char *reply_str(const redisReply *r, size_t i);

#endif
