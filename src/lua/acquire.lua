-- Take the lock if it is free: the usual request (one server, no
-- inherited token, no failover guard; the others are acquire_any.lua's),
-- which asks the least of the server (bench G4 and S): SET NX first,
-- few arguments, and the usual grant before the functions the other
-- paths call, which the server would otherwise make (a closure each) at
-- every call.
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
-- A busy request that waits joins the waiters (waiting), so that a
-- release wakes it, and the waiting writers (xwait), so that shared
-- requests wait behind it, both for PROTO_WAIT_MARK_MS (scored by when
-- that lapses, server ms); a queued request's grant leaves both.
local granted
if redis.call('SET', K, token, 'NX', 'PX', ttl) then
  -- The fence, as lib/fence.lua's fence_next() mints it, inline.
  local t = redis.call('TIME')
  granted = t[1] * 1000000 + t[2] + 1
  local c = tonumber(redis.call('GET', fence) or '0')
  if c >= granted then granted = c + 1 end
  redis.call('SET', fence, string.format('%d', granted), 'PX',
    '{{PROTO_FENCE_LINGER_MS}}')
  -- The usual grant, inline: the record key free (nothing holds NAME
  -- back), and the request was not queued (87: 'W').  Everything else
  -- goes on below, to grant().
  if string.byte(wait) ~= 87 and redis.call('SET', meta,
      string.format('%d', granted) .. record, 'NX', 'PX', ttl) then
    return granted
  end
end
--@include lib/grant.lua
local held
if granted then
  local f
  f, held = grant(K, fence, meta, record, ttl, string.sub(wait, 2),
    granted)
  if not held then
    if string.byte(wait) == 87 then
      local id = string.sub(wait, 2)
      redis.call('ZREM', xwait, id)
      redis.call('ZREM', waiting, id)
    end
    return f
  end
end
if wait ~= '' then
  local id, lapse = string.sub(wait, 2), server_ms() + {{PROTO_WAIT_MARK_MS}}
  redis.call('ZADD', xwait, lapse, id)
  redis.call('PEXPIRE', xwait, '{{PROTO_WAIT_MARK_MS}}')
  redis.call('ZADD', waiting, lapse, id)
  redis.call('PEXPIRE', waiting, '{{PROTO_WAIT_MARK_MS}}')
end
if held then return {5, held} end
return {0, redis.call('PTTL', K)}
