-- Take the lock if it is free: the usual request (one server, no
-- inherited token, no failover guard; the others are acquire_any.lua's),
-- which asks the least of the server (bench G4): SET NX first, and few
-- arguments.
--
--@keys K fence meta waiting xwait
--@reply code value
--@argv token ttl record wait
-- ARGV: token, ttl, the record's tail, and how the request waits: '' it
--   does not, else 'w' ('W' once a busy attempt queued it) and its
--   waiter id.
-- Returns the fence granted (an integer), {0, pttl} someone else holds
-- it, or {5, ms} NAME is held back (lib/grant.lua).
--
-- A busy request that waits joins the waiters (KEYS[4]), so that a
-- release wakes it, and the waiting writers (KEYS[5]), so that shared
-- requests wait behind it, both for PROTO_WAIT_MARK_MS (scored by when
-- that lapses, server ms); a queued request's grant leaves both.
local held
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
--@include lib/grant.lua rec=ARGV[3] px=ARGV[2] id="string.sub(ARGV[4], 2)"
  if not held then
    -- 87: 'W'
    if string.byte(ARGV[4]) == 87 then
      local id = string.sub(ARGV[4], 2)
      redis.call('ZREM', KEYS[5], id)
      redis.call('ZREM', KEYS[4], id)
    end
    return f
  end
end
if ARGV[4] ~= '' then
  local id, t = string.sub(ARGV[4], 2), redis.call('TIME')
  local lapse = t[1] * 1000 + math.floor(t[2] / 1000) +
    {{PROTO_WAIT_MARK_MS}}
  redis.call('ZADD', KEYS[5], lapse, id)
  redis.call('PEXPIRE', KEYS[5], '{{PROTO_WAIT_MARK_MS}}')
  redis.call('ZADD', KEYS[4], lapse, id)
  redis.call('PEXPIRE', KEYS[4], '{{PROTO_WAIT_MARK_MS}}')
end
if held then return {5, held} end
return {0, redis.call('PTTL', KEYS[1])}
