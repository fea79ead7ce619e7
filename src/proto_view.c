/*
 * proto_view.c - the script of what an operator sees of a lock, whoever
 * holds it (status, list, break).  Nothing here does I/O; the keys are
 * described at the top of proto.c.
 */
#include "proto.h"

/*
 * The holder's record (KEYS meta): one string, the fence, then
 * "\0token\0ttl\0host\0pid\0user\0cmd\0start" as acquire_args() builds
 * it.  LUA_RECORD's record(m, v) reads it into HGETALL's shape, or {}
 * when it is not token v's; LUA_FENCE_OF(m) is its fence (0 if none).
 */
#define LUA_RECORD \
    "local function record(m, v)\n" \
    "  if not m then return {} end\n" \
    "  local f, pos = {}, 1\n" \
    "  for n = 1, 8 do\n" \
    "    local e = string.find(m, '\\0', pos, true) or #m + 1\n" \
    "    f[n] = string.sub(m, pos, e - 1)\n" \
    "    pos = e + 1\n" \
    "  end\n" \
    "  if f[2] ~= v then return {} end\n" \
    "  return {'fence', f[1], 'ttl', f[3], 'host', f[4], 'pid', f[5],\n" \
    "    'user', f[6], 'cmd', f[7], 'start', f[8]}\n" \
    "end\n"

/*
 * Read (ARGV[1] == '1': and remove) the lock whoever holds it.  KEYS: K,
 * meta, wake, holders, hmeta, waiting.  Returns {} when there is no
 * lock; held exclusively {token, pttl, {record field, value...}} (with
 * stop, token when redlock stop marked it); held shared
 * {marker, pttl, {}, {token, pttl...}, {hmeta field, value...}} with
 * the live holders only.  What scheduling adds (SPEC section 15) comes
 * as more field, value pairs of the third element: waiters and standbys
 * (the live waiters, and those of them whose id starts with 's', a
 * --respawn's); for a free lock, in a reply of that one element, also
 * delay (ms left of a lost holder's --lock-delay) with now (the
 * server's ms), and claim (ms left of a --replace claim).  Removing a
 * free lock removes what holds it back.
 */
const char proto_inspect_lua[] =
    LUA_RECORD LUA_UNMARK
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local w, sb, sched = 0, 0, {}\n"
    "for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6],\n"
    "    '(' .. string.format('%d', now), '+inf')) do\n"
    "  w = w + 1\n"
    "  if string.byte(id) == 115 then sb = sb + 1 end\n"
    "end\n"
    "if w > 0 then\n"
    "  sched = {'waiters', string.format('%d', w), 'standbys',\n"
    "    string.format('%d', sb)}\n"
    "end\n"
    "local ty = redis.call('TYPE', KEYS[1])['ok']\n"
    "if ty == 'none' then\n"
    "  local m = redis.call('GET', KEYS[2])\n"
    "  if m then\n"
    LUA_HOLD_PARSE("KEYS[2]")
    "    if du > now then\n"
    "      for _, x in ipairs({'delay', du - now, 'now', now}) do\n"
    "        if type(x) == 'number' then x = string.format('%d', x) end\n"
    "        table.insert(sched, x)\n"
    "      end\n"
    "    end\n"
    "    if cl ~= '' and cu > now then\n"
    "      table.insert(sched, 'claim')\n"
    "      table.insert(sched, string.format('%d', cu - now))\n"
    "    end\n"
    "    if ARGV[1] == '1' and math.max(du, cu) > now then\n"
    "      redis.call('DEL', KEYS[2])\n"
    "    end\n"
    "  end\n"
    "  if #sched > 0 then return {sched} end\n"
    "  return {}\n"
    "end\n"
    "local v, stop, r\n"
    "if ty ~= 'string' then\n"
    "  r = {ty, redis.call('PTTL', KEYS[1]), {}, 'type'}\n"
    "else\n"
    "  v, stop = unmark(redis.call('GET', KEYS[1]))\n"
    "end\n"
    "if r then\n"
    "elseif v == '\\0shared' then\n"
    "  local h = redis.call('ZRANGEBYSCORE', KEYS[4],\n"
    "    '(' .. string.format('%d', now), '+inf', 'WITHSCORES')\n"
    "  for i = 2, #h, 2 do h[i] = tonumber(h[i]) - now end\n"
    "  r = {v, redis.call('PTTL', KEYS[1]), {}, h,\n"
    "    redis.call('HGETALL', KEYS[5])}\n"
    "else\n"
    "  r = {v, redis.call('PTTL', KEYS[1]),\n"
    "    record(redis.call('GET', KEYS[2]), v)}\n"
    "  if stop then table.insert(r[3], 'stop'); table.insert(r[3], v) end\n"
    "end\n"
    "for _, x in ipairs(sched) do table.insert(r[3], x) end\n"
    "if ARGV[1] == '1' then\n"
    "  redis.call('DEL', KEYS[1], KEYS[2], KEYS[4], KEYS[5])\n"
    "  redis.call('RPUSH', KEYS[3], '1')\n"
    "  redis.call('LTRIM', KEYS[3], 0, 0)\n"
    "  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
    "end\n"
    "return r\n";
