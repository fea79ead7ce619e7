-- Take the lock if it is free, any request: acquire.lua's, and on a
-- quorum, with inherited tokens or with the failover guard.
--
--@keys K fence meta xwait holders waiting
--@reply code value token
--@argv token ttl linger record queue_ms waiter queued guard mark_ms record_ms epoch tokens...
-- ARGV: token, ttl, '1' when the counter must linger after each grant
--   (a quorum: see the top of proto.c) else '0', the record's tail (see
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
-- (mark ms > 0) joins the waiters (KEYS[6]) under the same id, scored
-- by when that lapses (server ms), so that a release wakes it.  Once
-- queued (ARGV[7] == '1') its grant leaves both.  With no inherited
-- token and no guard, the grant is SET NX first.
--@include lib/unmark.lua
local held
local function busy(v)
  v = unmark(v)
  for i = 12, #ARGV do
    if ARGV[i] == v then
      -- The fence in the holder's record (lib/holder_record.lua).
      return {2, (tonumber(string.match(redis.call('GET', KEYS[3]) or '', '^(%d+)')) or 0), v}
    end
  end
  if v == '\0shared' then
    for i = 12, #ARGV do
      if redis.call('ZSCORE', KEYS[5], ARGV[i]) then return {3, 0} end
    end
  end
  local now
  if ARGV[5] ~= '0' or ARGV[9] ~= '0' then
    local t = redis.call('TIME')
    now = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  if ARGV[5] ~= '0' then
    redis.call('ZADD', KEYS[4], now + ARGV[5], ARGV[6])
    redis.call('PEXPIRE', KEYS[4], ARGV[5])
  end
  if ARGV[9] ~= '0' then
    redis.call('ZADD', KEYS[6], now + ARGV[9], ARGV[6])
    redis.call('PEXPIRE', KEYS[6], ARGV[9])
  end
  if held then return {5, held} end
  return {0, redis.call('PTTL', KEYS[1])}
end
if #ARGV < 12 and ARGV[8] == '' then
  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return busy(false)
  end
else
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'table' then v = '\0other' end
  if v then return busy(v) end
--@include lib/failover_guard.lua plen=8 epoch=11 lease=10
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
--@include lib/grant.lua rec=ARGV[4] px=ARGV[10] id=ARGV[6]
if held then return busy(false) end
if ARGV[7] == '1' then
  redis.call('ZREM', KEYS[4], ARGV[6])
  redis.call('ZREM', KEYS[6], ARGV[6])
end
if ARGV[3] == '1' then
  redis.call('PEXPIRE', KEYS[2], '{{PROTO_FENCE_LINGER_MS}}')
end
return f
