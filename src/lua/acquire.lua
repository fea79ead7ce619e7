-- Take the lock if it is free: the usual request (one server, no
-- inherited token, no failover guard; the others are acquire_any.lua's),
-- which asks the least of the server (bench G4 and S): SET NX first,
-- few arguments, and no function on the usual paths (a grant, a queued
-- grant, a busy attempt), so that the server makes the functions the
-- rare paths call (a closure each) only when one of those runs.
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
local granted, held
if redis.call('SET', K, token, 'NX', 'PX', ttl) then
  -- The fence, as lib/fence.lua's fence_next() mints it, inline.
  local clock = redis.call('TIME')
  granted = clock[1] * 1000000 + clock[2] + 1
  local last = tonumber(redis.call('GET', fence) or '0')
  if last >= granted then granted = last + 1 end
  redis.call('SET', fence, string.format('%d', granted), 'PX',
    '{{PROTO_FENCE_LINGER_MS}}')
  -- The usual grant, inline: the record key free (nothing holds NAME
  -- back).  Anything else goes on to grant(), whose functions (and
  -- theirs) the server makes only on this rare path.
  if not redis.call('SET', meta, string.format('%d', granted) .. record,
      'NX', 'PX', ttl) then
    --@include lib/grant.lua
    granted, held = grant(K, fence, meta, record, ttl, string.sub(wait, 2),
      granted)
  end
  if not held then
    -- A queued request (87: 'W') leaves the waiters it joined.
    if string.byte(wait) == 87 then
      local id = string.sub(wait, 2)
      redis.call('ZREM', xwait, id)
      redis.call('ZREM', waiting, id)
    end
    return granted
  end
end
-- Busy or held back: a request that waits joins the waiters until
-- PROTO_WAIT_MARK_MS from now, by the server's clock (lib/now.lua's
-- server_ms(), inline: a busy attempt makes no closure either).
if wait ~= '' then
  local t = redis.call('TIME')
  local id = string.sub(wait, 2)
  local lapse = t[1] * 1000 + math.floor(t[2] / 1000) +
    {{PROTO_WAIT_MARK_MS}}
  redis.call('ZADD', xwait, lapse, id)
  redis.call('PEXPIRE', xwait, '{{PROTO_WAIT_MARK_MS}}')
  redis.call('ZADD', waiting, lapse, id)
  redis.call('PEXPIRE', waiting, '{{PROTO_WAIT_MARK_MS}}')
end
if held then return {5, held} end
return {0, redis.call('PTTL', K)}
