-- fence_next(fk, t): the fence of a grant, kept in the fencing counter
-- fk (living {{PROTO_FENCE_LINGER_MS}} ms): one above the counter, and
-- above the server's clock in microseconds (t, its TIME reply, or nil to
-- read it).  The clock makes fences grow across what the counter
-- forgets: its expiry, a restart without data, and a failover whose new
-- master never received the last grants, which a counter alone would
-- give again; the counter makes them grow where the clock does not (a
-- quorum's bump ahead of it, a clock set back).  acquire.lua has the
-- same inline, on its usual path.
local function fence_next(fk, t)
  t = t or redis.call('TIME')
  local f = t[1] * 1000000 + t[2] + 1
  local c = tonumber(redis.call('GET', fk) or '0')
  if c >= f then f = c + 1 end
  redis.call('SET', fk, string.format('%d', f), 'PX',
    '{{PROTO_FENCE_LINGER_MS}}')
  return f
end
