-- Take a shared hold (shared locks and semaphores, --limit).
--
--@keys K fence meta holders hmeta xwait wake xwake waiting
--@reply code value token
--@argv token ttl host pid user cmd start limit wake_linger woken mark_ms waiter guard epoch tokens...
-- ARGV: token, ttl, host, pid, user, cmd, start, limit
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
-- A grant that leaves room wakes the next waiter, if one waits; a
-- woken request turned away for a waiting writer hands its wake-up to
-- the writers, and a busy request that will wait notes in hmeta
-- (rwait) that readers wait, so that the next exclusive release gives
-- them a turn
-- (lib/release_body.lua).  A request turned away that will wait joins
-- the waiters (waiting), as acquire.lua's do.
--@include lib/now.lua
--@include lib/holders.lua
--@include lib/wake.lua
--@include lib/unmark.lua
--@include lib/holder_record.lua
--@include lib/hold.lua
--@include lib/failover_guard.lua
--@include lib/fence.lua
local now, t = server_ms()
local function busy(ms, kind)
  if mark_ms ~= '0' then
    redis.call('ZADD', waiting, now + mark_ms, waiter)
    redis.call('PEXPIRE', waiting, mark_ms)
    redis.call('HSET', hmeta, 'rwait', now + mark_ms)
    if redis.call('PTTL', hmeta) < tonumber(mark_ms) then
      redis.call('PEXPIRE', hmeta, mark_ms)
    end
  end
  return {kind or 0, ms}
end
local v = redis.pcall('GET', K)
if type(v) == 'table' then v = '\0other' end
if v and v ~= '\0shared' then
  local u = unmark(v)
  for i = tokens, #ARGV do
    if ARGV[i] == u then
      return {2, holder_fence(redis.call('GET', meta)), u}
    end
  end
  return busy(redis.call('PTTL', K))
end
if v then
  holders_prune(holders, hmeta, now)
  for i = tokens, #ARGV do
    if redis.call('ZSCORE', holders, ARGV[i]) then
      local f = redis.call('HGET', hmeta, ARGV[i] .. ':fence') or '0'
      return {2, tonumber(f), ARGV[i]}
    end
  end
else
  local m = redis.call('GET', meta)
  if m then
    local hold = hold_ms(m, meta, now, waiter)
    if hold > 0 then return busy(hold, 5) end
  end
  redis.call('DEL', holders, hmeta)
end
local turn = tonumber(redis.call('HGET', hmeta, 'turn') or '0') > now
if not turn and wake_writers(xwait, now) then
  if woken == '1' then wake_one(xwake, wake_linger) end
  return busy(-1)
end
local n = redis.call('ZCARD', holders)
local max = tonumber(limit)
if max > 0 and n >= max then
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')
  return busy(math.floor(tonumber(first[2]) - now))
end
local r = failover_guard(K, fence, guard, epoch, ttl)
if r then return r end
local f = fence_next(fence, t)
if mark_ms ~= '0' then redis.call('ZREM', waiting, waiter) end
redis.call('ZADD', holders, now + ttl, token)
local p = token .. ':'
redis.call('HSET', hmeta, p .. 'host', host, p .. 'pid', pid,
  p .. 'user', user, p .. 'cmd', cmd, p .. 'start', start,
  p .. 'fence', string.format('%d', f), p .. 'ttl', ttl)
holders_extend(K, holders, hmeta, now)
if (max == 0 or n + 1 < max) and redis.call('EXISTS', waiting) == 1 then
  wake_one(wake, wake_linger)
end
return {1, f}
