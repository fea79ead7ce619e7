-- Take the lock if it is free, any request: acquire.lua's, and on a
-- quorum, with inherited tokens or with the failover guard.
--
--@keys K fence meta xwait holders waiting
--@reply code value token
--@argv token ttl linger record queue_ms waiter queued guard mark_ms record_ms epoch tokens...
-- ARGV: token, ttl, '1' on a quorum, whose fence is its counter's and
--   lingers after each grant (lib/fence.lua; the top of proto.c) else
--   '0', the record's tail (see
--   lib/holder_record.lua), queue ms, waiter id, queued, the failover
--   guard (lib/failover_guard.lua), mark ms, how long the record lives
--   (the TTL, and --lock-delay's delay), the Sentinel epoch of the
--   guard ('' without), then inherited tokens.
-- Returns the fence (an integer) granted, {2, fence, token} one of the
-- inherited tokens holds it, {3, 0} one of them holds it shared (an
-- exclusive request would wait for itself), {0, pttl} someone else
-- holds it, {4, ms left, ms since} the failover guard holds grants
-- back, {5, ms} a lost holder's delay or a --replace claim does
-- (lib/grant.lua).
--
-- A busy request with queue ms > 0 enters the waiting writers (xwait)
-- under its waiter id for that long; a busy request that will wait
-- (mark ms > 0) joins the waiters (waiting) under the same id, scored
-- by when that lapses (server ms), so that a release wakes it.  Once
-- queued (queued == '1') its grant leaves both.  With no inherited
-- token and no guard, the grant is SET NX first.
--@include lib/unmark.lua
--@include lib/now.lua
--@include lib/holder_record.lua
--@include lib/failover_guard.lua
--@include lib/grant.lua
local held
local function busy(v)
  v = unmark(v)
  for i = tokens, #ARGV do
    if ARGV[i] == v then
      return {2, holder_fence(redis.call('GET', meta)), v}
    end
  end
  if v == '\0shared' then
    for i = tokens, #ARGV do
      if redis.call('ZSCORE', holders, ARGV[i]) then return {3, 0} end
    end
  end
  local now
  if queue_ms ~= '0' or mark_ms ~= '0' then now = server_ms() end
  if queue_ms ~= '0' then
    redis.call('ZADD', xwait, now + queue_ms, waiter)
    redis.call('PEXPIRE', xwait, queue_ms)
  end
  if mark_ms ~= '0' then
    redis.call('ZADD', waiting, now + mark_ms, waiter)
    redis.call('PEXPIRE', waiting, mark_ms)
  end
  if held then return {5, held} end
  return {0, redis.call('PTTL', K)}
end
local inherits = #ARGV >= tokens
if not inherits and guard == '' then
  if not redis.call('SET', K, token, 'NX', 'PX', ttl) then
    return busy(false)
  end
else
  local v = redis.pcall('GET', K)
  if type(v) == 'table' then v = '\0other' end
  if v then return busy(v) end
  local r = failover_guard(K, fence, guard, epoch, record_ms)
  if r then return r end
  redis.call('SET', K, token, 'PX', ttl)
end
local f
f, held = grant(K, fence, meta, record, record_ms, waiter, nil,
  linger == '1')
if held then return busy(false) end
if queued == '1' then
  redis.call('ZREM', xwait, waiter)
  redis.call('ZREM', waiting, waiter)
end
return f
