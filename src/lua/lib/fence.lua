-- fence_next(fk, t, counted): the fence of a grant, kept in the fencing
-- counter fk.  On one server (counted false): one above the counter,
-- and above the server's clock in microseconds (t, its TIME reply, or
-- nil to read it), kept living {{PROTO_FENCE_LINGER_MS}} ms.  The clock
-- makes fences grow across what the counter forgets: its expiry, a
-- restart without data, and a failover whose new master never received
-- the last grants, which a counter alone would give again; the counter
-- makes them grow where the clock does not (a clock set back).  On a
-- quorum (counted true) the counter alone, seeded from the clock when
-- missing: a majority's counters agree after the first grant's bump,
-- so that later grants need none, and a server that forgets is one of
-- several (see the top of src/proto.c).  acquire.lua has the one-server
-- case inline, on its usual path.
local function fence_next(fk, t, counted)
  local c = tonumber(redis.call('GET', fk) or '0')
  local f = c + 1
  if not counted or c == 0 then
    t = t or redis.call('TIME')
    f = math.max(f, t[1] * 1000000 + t[2] + 1)
  end
  redis.call('SET', fk, string.format('%d', f), 'PX',
    '{{PROTO_FENCE_LINGER_MS}}')
  return f
end
