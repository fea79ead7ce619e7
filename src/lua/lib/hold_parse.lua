-- What the record key mk holds while K is free (see lib/hold.lua and
-- "Held back" in src/lua/README), from its value m, at server ms now.
-- A lost holder's record (its fence first) or the hold marker
-- ("\0hold\0" delay-until "\0" claim "\0" claim-until) gives du, until
-- when a lost holder's --lock-delay holds NAME back (0: none), cl, the
-- waiter id of a --replace claim ('' none), and cu, until when the
-- claim stands; lost tells a holder's record from the marker.
--
-- Parameters: mk (a key, e.g. KEYS[3]).
local g, pos = {}, 1
for i = 1, 10 do
  local e = string.find(m, '\0', pos, true) or #m + 1
  g[i] = string.sub(m, pos, e - 1)
  pos = e + 1
end
local du, cl, cu, lost = 0, '', 0, g[1] ~= ''
if not lost then
  du, cl, cu = tonumber(g[3]) or 0, g[4], tonumber(g[5]) or 0
else
  if (tonumber(g[9]) or 0) > 0 then
    du = now + redis.call('PTTL', {{mk}})
  end
  cl = g[10]
  if cl ~= '' then
    cu = math.max(now, du) + {{PROTO_CLAIM_MS}}
  end
end
