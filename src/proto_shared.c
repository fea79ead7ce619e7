/*
 * proto_shared.c - the scripts of shared locks, semaphores (--limit)
 * and redlock stop: the keys they use are described at the top of
 * proto.c.  Every time here is the server's (TIME, in milliseconds),
 * so a shared holder that died stops counting when its lease ends on
 * the server, whatever the clients' clocks say.
 */
#include "proto.h"

/* The server's clock in ms, as `now`. */
#define LUA_NOW \
    "local t = redis.call('TIME')\n" \
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

/*
 * Helpers over the holders' sorted set (KEYS[h]) and metadata hash
 * (KEYS[m]): forget(g) drops holder g's metadata; prune() drops the
 * holders whose lease has ended; extend() makes K, the set and the hash
 * live exactly as long as the latest lease.
 */
#define LUA_HOLDERS(h, m) \
    "local function forget(g)\n" \
    "  redis.call('HDEL', KEYS[" m "], g .. ':host', g .. ':pid',\n" \
    "    g .. ':user', g .. ':cmd', g .. ':start', g .. ':fence',\n" \
    "    g .. ':ttl', g .. ':stop')\n" \
    "end\n" \
    "local function prune()\n" \
    "  for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[" h "],\n" \
    "      '-inf', now)) do forget(g) end\n" \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[" h "], '-inf', now)\n" \
    "end\n" \
    "local function extend()\n" \
    "  local last = redis.call('ZRANGE', KEYS[" h "], -1, -1, 'WITHSCORES')\n" \
    "  local ms = math.floor(tonumber(last[2]) - now)\n" \
    "  if ms < 1 then ms = 1 end\n" \
    "  redis.call('SET', KEYS[1], '\\0shared', 'PX', ms)\n" \
    "  redis.call('PEXPIRE', KEYS[" h "], ms)\n" \
    "  redis.call('PEXPIRE', KEYS[" m "], ms)\n" \
    "end\n"

/* push(k): one wake-up on list k (at most one is ever pending), which
 * lingers ARGV[l] ms.  writers(): is an exclusive request waiting in
 * KEYS[q]?  Entries lapse by themselves when their waiter is gone. */
#define LUA_WAKE(l, q) \
    "local function push(k)\n" \
    "  if redis.call('RPUSH', k, '1') > 1 then\n" \
    "    redis.call('LTRIM', k, 0, 0)\n" \
    "  end\n" \
    "  redis.call('PEXPIRE', k, ARGV[" l "])\n" \
    "end\n" \
    "local function writers()\n" \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[" q "], '-inf', now)\n" \
    "  return redis.call('ZCARD', KEYS[" q "]) > 0\n" \
    "end\n"

/*
 * Take a shared hold.  KEYS: K, fence, meta, holders, hmeta, xwait,
 * wake, xwake, waiting.  ARGV: token, ttl, fence linger, host, pid,
 * user, cmd, start, limit (0: none), wake linger, woken ('1': this
 * attempt follows a wake-up), mark ms and waiter id (see acquire_lua),
 * the failover guard's argument (LUA_FAILOVER_GUARD: after a failover
 * it holds shared grants back as it does exclusive ones), then
 * inherited tokens.  Returns {1, fence} granted,
 * {2, fence, token} an inherited token holds it (exclusively or
 * shared), {0, ms} busy: held exclusively (ms: its TTL), a writer waits
 * (-1), or --limit holders hold it (ms: until the first lease ends),
 * {5, ms} a free NAME is held back (LUA_HOLD, proto.c).
 * A grant that leaves room wakes the next waiter; a woken request
 * turned away for a waiting writer hands its wake-up to the writers,
 * and a busy request that will wait notes in hmeta (rwait) that
 * readers wait, so that the next exclusive release gives them a turn
 * (release_lua).
 * A request turned away that will wait joins the waiters (KEYS[9]), as
 * acquire_lua's do.
 */
const char proto_sh_acquire_lua[] =
    LUA_NOW LUA_HOLDERS("4", "5") LUA_WAKE("10", "6") LUA_UNMARK
    "local function busy(ms, kind)\n"
    "  if ARGV[12] ~= '0' then\n"
    "    redis.call('ZADD', KEYS[9], now + ARGV[12], ARGV[13])\n"
    "    redis.call('PEXPIRE', KEYS[9], ARGV[12])\n"
    "    redis.call('HSET', KEYS[5], 'rwait', now + ARGV[12])\n"
    "    if redis.call('PTTL', KEYS[5]) < tonumber(ARGV[12]) then\n"
    "      redis.call('PEXPIRE', KEYS[5], ARGV[12])\n"
    "    end\n"
    "  end\n"
    "  return {kind or 0, ms}\n"
    "end\n"
    "local v = redis.pcall('GET', KEYS[1])\n"
    "if type(v) == 'table' then v = '\\0other' end\n"
    "if v and v ~= '\\0shared' then\n"
    "  local t = unmark(v)\n"
    "  for i = 15, #ARGV do\n"
    "    if ARGV[i] == t then\n"
    "      return {2, " LUA_FENCE_OF("redis.call('GET', KEYS[3])") ", t}\n"
    "    end\n"
    "  end\n"
    "  return busy(redis.call('PTTL', KEYS[1]))\n"
    "end\n"
    "if v then\n"
    "  prune()\n"
    "  for i = 15, #ARGV do\n"
    "    if redis.call('ZSCORE', KEYS[4], ARGV[i]) then\n"
    "      local f = redis.call('HGET', KEYS[5], ARGV[i] .. ':fence') or '0'\n"
    "      return {2, tonumber(f), ARGV[i]}\n"
    "    end\n"
    "  end\n"
    "else\n"
    "  local m = redis.call('GET', KEYS[3])\n"
    "  if m then\n"
    LUA_HOLD("KEYS[3]", "ARGV[13]")
    "    if hold > 0 then return busy(hold, 5) end\n"
    "  end\n"
    "  redis.call('DEL', KEYS[4], KEYS[5])\n"
    "end\n"
    "local turn = tonumber(redis.call('HGET', KEYS[5], 'turn') or '0') > now\n"
    "if not turn and writers() then\n"
    "  if ARGV[11] == '1' then push(KEYS[8]) end\n"
    "  return busy(-1)\n"
    "end\n"
    "local n = redis.call('ZCARD', KEYS[4])\n"
    "local limit = tonumber(ARGV[9])\n"
    "if limit > 0 and n >= limit then\n"
    "  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')\n"
    "  return busy(math.floor(tonumber(first[2]) - now))\n"
    "end\n"
    LUA_FAILOVER_GUARD("14", "2")
    "local f = redis.call('INCR', KEYS[2])\n"
    "if f == 1 then\n"
    "  f = t[1] * 1000000 + t[2] + 1\n"
    "  redis.call('SET', KEYS[2], string.format('%d', f))\n"
    "end\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[3])\n"
    "if ARGV[12] ~= '0' then redis.call('ZREM', KEYS[9], ARGV[13]) end\n"
    "redis.call('ZADD', KEYS[4], now + ARGV[2], ARGV[1])\n"
    "local p = ARGV[1] .. ':'\n"
    "redis.call('HSET', KEYS[5], p .. 'host', ARGV[4], p .. 'pid', ARGV[5],\n"
    "  p .. 'user', ARGV[6], p .. 'cmd', ARGV[7], p .. 'start', ARGV[8],\n"
    "  p .. 'fence', string.format('%d', f), p .. 'ttl', ARGV[2])\n"
    "extend()\n"
    "if limit == 0 or n + 1 < limit then push(KEYS[7]) end\n"
    "return {1, f}\n";

/*
 * Reset shared holder ARGV[1]'s lease to ARGV[2] ms.  KEYS: K, holders,
 * hmeta (all there while held: see renew_lua).  Returns 1, or 2 when an
 * operator asked this holder to stop (hmeta's TOKEN:stop); else 0 held
 * exclusively by a token, -1 not held by this token.
 */
const char proto_sh_renew_lua[] =
    "local v = redis.pcall('GET', KEYS[1])\n"
    "if type(v) == 'table' then v = '\\0other' end\n"
    "if v ~= '\\0shared' then\n"
    "  if v then return 0 end\n"
    "  return -1\n"
    "end\n"
    LUA_NOW LUA_HOLDERS("2", "3")
    "local s = redis.call('ZSCORE', KEYS[2], ARGV[1])\n"
    "if not s or tonumber(s) <= now then return -1 end\n"
    "redis.call('ZADD', KEYS[2], now + ARGV[2], ARGV[1])\n"
    "extend()\n"
    "if redis.call('HGET', KEYS[3], ARGV[1] .. ':stop') then return 2 end\n"
    "return 1\n";

/*
 * proto_sh_renew_lua key by key, for a renewal while a Redis Cluster
 * migrates the slot and K, the holders' set and their metadata are not
 * all on one node (lock.c): each script has one key, so each runs where
 * its key is (following its own ASK).  The set, which says whether the
 * token holds the lock, is asked first, and K and the metadata only
 * once it said so.
 *
 * The set (KEYS[1], holders): reset holder ARGV[1]'s lease to ARGV[2]
 * ms and make the set live as long as its latest lease.  Returns 1, or
 * -1 when the token holds no lease there.
 */
const char proto_sh_renew_set_lua[] =
    LUA_NOW
    "local s = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
    "if not s or tonumber(s) <= now then return -1 end\n"
    "redis.call('ZADD', KEYS[1], now + ARGV[2], ARGV[1])\n"
    "local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
    "local ms = math.floor(tonumber(last[2]) - now)\n"
    "redis.call('PEXPIRE', KEYS[1], math.max(1, ms))\n"
    "return 1\n";

/* K (KEYS[1]) held shared lives ARGV[2] ms at least (ARGV[1], the
 * token, is unused).  Returns 1; else 0 held exclusively by a token,
 * -1 free. */
const char proto_sh_renew_mark_lua[] =
    "local v = redis.pcall('GET', KEYS[1])\n"
    "if type(v) == 'table' then v = '\\0other' end\n"
    "if v ~= '\\0shared' then\n"
    "  if v then return 0 end\n"
    "  return -1\n"
    "end\n"
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return 1\n";

/* The metadata (KEYS[1], hmeta), if any, lives ARGV[2] ms at least.
 * Returns 2 when an operator asked holder ARGV[1] to stop, else 1. */
const char proto_sh_renew_meta_lua[] =
    "local ms = redis.call('PTTL', KEYS[1])\n"
    "if ms >= 0 and ms < tonumber(ARGV[2]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "if redis.call('HGET', KEYS[1], ARGV[1] .. ':stop') then return 2 end\n"
    "return 1\n";

/*
 * Release shared holder ARGV[1]; with ARGV[2] > 0 (--min-hold) leave its
 * lease to end that much later instead.  KEYS: K, holders, hmeta, wake,
 * fence, xwait, xwake.  ARGV: token, keep ms, fence linger, wake
 * linger.  The last holder out deletes K.  Wakes one waiter: a writer
 * when writers wait and the lock is now free, else (no writer) anyone,
 * since a place was freed.  Returns 1 released, 2 left to expire, 0
 * held by others, -1 free.
 */
const char proto_sh_release_lua[] =
    "local v = redis.pcall('GET', KEYS[1])\n"
    "if type(v) == 'table' then v = '\\0other' end\n"
    "if v ~= '\\0shared' then\n"
    "  if v then return 0 end\n"
    "  return -1\n"
    "end\n"
    LUA_NOW LUA_HOLDERS("2", "3") LUA_WAKE("4", "6")
    "local s = redis.call('ZSCORE', KEYS[2], ARGV[1])\n"
    "if not s or tonumber(s) <= now then\n"
    "  prune()\n"
    "  if redis.call('ZCARD', KEYS[2]) > 0 then return 0 end\n"
    "  return -1\n"
    "end\n"
    "if tonumber(ARGV[2]) > 0 then\n"
    "  redis.call('ZADD', KEYS[2], now + ARGV[2], ARGV[1])\n"
    "  extend()\n"
    "  return 2\n"
    "end\n"
    "redis.call('ZREM', KEYS[2], ARGV[1])\n"
    "forget(ARGV[1])\n"
    "prune()\n"
    "redis.call('PEXPIRE', KEYS[5], ARGV[3])\n"
    "local n = redis.call('ZCARD', KEYS[2])\n"
    "if n == 0 then\n"
    "  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])\n"
    "else\n"
    "  extend()\n"
    "end\n"
    "if writers() then\n"
    "  if n == 0 then push(KEYS[7]) end\n"
    "else\n"
    "  push(KEYS[4])\n"
    "end\n"
    "return 1\n";

/*
 * redlock stop.  KEYS: K, holders, stop, hmeta, meta.  ARGV: record
 * ('1': ask the current holders to stop, adding their tokens to the
 * stop set and marking each holder where its renewal looks: an
 * exclusive holder's K, a shared holder's hmeta TOKEN:stop),
 * margin ms.  Only redlock holders are asked: an exclusive value
 * without redlock's record beside it (meta: fence, then the token) is
 * another client's (redis-py, ...), left exactly as it is, and counted
 * in `left` until it goes, as is a key that holds no string.  Then drops
 * from the set the tokens that no longer hold the lock and keeps the set
 * until margin ms after K's expiry.  Returns {asked, left, pttl,
 * foreign}: holders asked now, holders still holding (of the set, and a
 * foreign one), K's TTL (-2: free), 1 when a foreign value holds K.
 * With ARGV[3], a waiter id, and ARGV[4], ms (--replace), and NAME held,
 * the waiter's claim on NAME goes to the holder's record, or to the
 * hold marker, and stands until ARGV[4] ms after K's lease (see "Held
 * back" in proto.c).
 */
const char proto_stop_lua[] =
    LUA_NOW LUA_UNMARK
    "local v, marked, foreign = false, false, 0\n"
    "local ty = redis.call('TYPE', KEYS[1])['ok']\n"
    "if ty == 'string' then\n"
    "  v, marked = unmark(redis.call('GET', KEYS[1]))\n"
    "  if v ~= '\\0shared' then\n"
    "    local m = redis.call('GET', KEYS[5]) or ''\n"
    "    local e = string.find(m, '\\0', 1, true)\n"
    "    if not e or string.sub(m, e + 1, e + #v + 1) ~= v .. '\\0' then\n"
    "      foreign = 1\n"
    "    end\n"
    "  end\n"
    "elseif ty ~= 'none' then\n"
    "  v, foreign = '\\0other', 1\n"
    "end\n"
    "local asked = 0\n"
    "if ARGV[1] == '1' and foreign == 1 then\n"
    "elseif ARGV[1] == '1' and v and v ~= '\\0shared' then\n"
    "  redis.call('SADD', KEYS[3], v)\n"
    "  if not marked then\n"
    "    redis.call('SETRANGE', KEYS[1], #v, " LUA_STOP_MARK ")\n"
    "  end\n"
    "  asked = 1\n"
    "elseif ARGV[1] == '1' and v then\n"
    "  for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2],\n"
    "      '(' .. string.format('%d', now), '+inf')) do\n"
    "    redis.call('SADD', KEYS[3], g)\n"
    "    redis.call('HSET', KEYS[4], g .. ':stop', '1')\n"
    "    asked = asked + 1\n"
    "  end\n"
    "end\n"
    "for _, g in ipairs(redis.call('SMEMBERS', KEYS[3])) do\n"
    "  local holds = g == v\n"
    "  if not holds and v == '\\0shared' then\n"
    "    local s = redis.call('ZSCORE', KEYS[2], g)\n"
    "    holds = s and tonumber(s) > now\n"
    "  end\n"
    "  if not holds then redis.call('SREM', KEYS[3], g) end\n"
    "end\n"
    "local left = redis.call('SCARD', KEYS[3])\n"
    "local pttl = -2\n"
    "if v then pttl = redis.call('PTTL', KEYS[1]) end\n"
    "if left > 0 then\n"
    "  local ms = tonumber(ARGV[2])\n"
    "  if pttl > 0 then ms = ms + pttl end\n"
    "  redis.call('PEXPIRE', KEYS[3], ms)\n"
    "end\n"
    /* --replace: the claim (see "Held back" in proto.c). */
    "if ARGV[3] and v then\n"
    "  local m = redis.call('GET', KEYS[5])\n"
    "  local kp = math.max(redis.call('PTTL', KEYS[1]), 0)\n"
    "  if m and string.byte(m) ~= 0 then\n"
    "    local g, pos = {}, 1\n"
    "    for i = 1, 10 do\n"
    "      local e = string.find(m, '\\0', pos, true) or #m + 1\n"
    "      g[i] = string.sub(m, pos, e - 1)\n"
    "      pos = e + 1\n"
    "    end\n"
    "    if g[10] ~= ARGV[3] then\n"
    "      redis.call('SET', KEYS[5], table.concat(g, '\\0', 1, 9) .. '\\0' ..\n"
    "        ARGV[3], 'KEEPTTL')\n"
    "    end\n"
    "    if (tonumber(g[9]) or 0) == 0 and\n"
    "        redis.call('PTTL', KEYS[5]) < kp + ARGV[4] then\n"
    "      redis.call('PEXPIRE', KEYS[5], kp + ARGV[4])\n"
    "    end\n"
    "  else\n"
    "    local du = m and tonumber(string.match(m, '^%zhold%z(%d+)')) or 0\n"
    "    local cu = now + kp + ARGV[4]\n"
    "    redis.call('SET', KEYS[5], '\\0hold\\0' .. string.format('%d', du) ..\n"
    "      '\\0' .. ARGV[3] .. '\\0' .. string.format('%d', cu), 'PX',\n"
    "      string.format('%d', math.max(du, cu) - now))\n"
    "  end\n"
    "end\n"
    "return {asked, left + foreign, pttl, foreign}\n";

/* A stopped holder has released: wake redlock stop.  KEYS: stopped.
 * ARGV: linger ms.  Returns 1. */
const char proto_notify_lua[] =
    "redis.call('RPUSH', KEYS[1], '1')\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
    "return 1\n";
