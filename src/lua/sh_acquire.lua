-- Take a shared hold (shared locks and semaphores, --limit).
--
--@keys K fence meta holders hmeta xwait wake xwake waiting
--@reply code value token
--@argv token ttl fence_linger host pid user cmd start limit wake_linger woken mark_ms waiter guard epoch tokens...
-- ARGV: token, ttl, fence linger, host, pid, user, cmd, start, limit
--   (0: none), wake linger, woken ('1': this attempt follows a wake-up),
--   mark ms and waiter id (see acquire.lua), the failover guard's
--   argument and its Sentinel epoch (lib/failover_guard.lua: after a
--   failover it holds shared grants back as it does exclusive ones),
--   then inherited tokens.
-- Returns {1, fence} granted, {2, fence, token} an inherited token
-- holds it (exclusively or shared), {0, ms} busy: held exclusively (ms:
-- its TTL), a writer waits (-1), or --limit holders hold it (ms: until
-- the first lease ends), {5, ms} a free NAME is held back
-- (lib/hold.lua).
--
-- A grant that leaves room wakes the next waiter; a woken request
-- turned away for a waiting writer hands its wake-up to the writers,
-- and a busy request that will wait notes in hmeta (rwait) that readers
-- wait, so that the next exclusive release gives them a turn
-- (lib/release_body.lua).  A request turned away that will wait joins
-- the waiters (KEYS[9]), as acquire.lua's do.
--@include lib/now.lua
--@include lib/holders.lua h=4 m=5
--@include lib/wake.lua l=10 q=6
--@include lib/unmark.lua
local function busy(ms, kind)
  if ARGV[12] ~= '0' then
    redis.call('ZADD', KEYS[9], now + ARGV[12], ARGV[13])
    redis.call('PEXPIRE', KEYS[9], ARGV[12])
    redis.call('HSET', KEYS[5], 'rwait', now + ARGV[12])
    if redis.call('PTTL', KEYS[5]) < tonumber(ARGV[12]) then
      redis.call('PEXPIRE', KEYS[5], ARGV[12])
    end
  end
  return {kind or 0, ms}
end
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' then v = '\0other' end
if v and v ~= '\0shared' then
  local t = unmark(v)
  for i = 16, #ARGV do
    if ARGV[i] == t then
      -- The fence in the holder's record (lib/holder_record.lua).
      return {2, (tonumber(string.match(redis.call('GET', KEYS[3]) or '', '^(%d+)')) or 0), t}
    end
  end
  return busy(redis.call('PTTL', KEYS[1]))
end
if v then
  prune()
  for i = 16, #ARGV do
    if redis.call('ZSCORE', KEYS[4], ARGV[i]) then
      local f = redis.call('HGET', KEYS[5], ARGV[i] .. ':fence') or '0'
      return {2, tonumber(f), ARGV[i]}
    end
  end
else
  local m = redis.call('GET', KEYS[3])
  if m then
--@include lib/hold.lua mk=KEYS[3] id=ARGV[13]
    if hold > 0 then return busy(hold, 5) end
  end
  redis.call('DEL', KEYS[4], KEYS[5])
end
local turn = tonumber(redis.call('HGET', KEYS[5], 'turn') or '0') > now
if not turn and writers() then
  if ARGV[11] == '1' then push(KEYS[8]) end
  return busy(-1)
end
local n = redis.call('ZCARD', KEYS[4])
local limit = tonumber(ARGV[9])
if limit > 0 and n >= limit then
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return busy(math.floor(tonumber(first[2]) - now))
end
--@include lib/failover_guard.lua plen=14 epoch=15 lease=2
local f = redis.call('INCR', KEYS[2])
if f == 1 then
  f = t[1] * 1000000 + t[2] + 1
  redis.call('SET', KEYS[2], string.format('%d', f))
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if ARGV[12] ~= '0' then redis.call('ZREM', KEYS[9], ARGV[13]) end
redis.call('ZADD', KEYS[4], now + ARGV[2], ARGV[1])
local p = ARGV[1] .. ':'
redis.call('HSET', KEYS[5], p .. 'host', ARGV[4], p .. 'pid', ARGV[5],
  p .. 'user', ARGV[6], p .. 'cmd', ARGV[7], p .. 'start', ARGV[8],
  p .. 'fence', string.format('%d', f), p .. 'ttl', ARGV[2])
extend()
if limit == 0 or n + 1 < limit then push(KEYS[7]) end
return {1, f}
