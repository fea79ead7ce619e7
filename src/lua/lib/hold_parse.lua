-- What the record key mk holds while K is free (see lib/hold.lua and
-- "Held back" in src/lua/README), from its value m, at server ms now.
-- A lost holder's record (its fence first) or the hold marker
-- ("\0hold\0" delay-until "\0" claim "\0" claim-until "\0" since) gives
-- du, until when a lost holder's --lock-delay holds NAME back (0: none),
-- cl, the waiter id of a --replace claim ('' none), cu, until when the
-- claim stands, and cs, the claim's since (server ms of the claimant's
-- first assertion, '' unknown); lost tells a holder's record from the
-- marker.  A record keeps the claim in its tenth to twelfth fields, its
-- end in the eleventh (server ms of the last assertion plus
-- PROTO_CLAIM_MS); one without (an older redlock's) stands
-- PROTO_CLAIM_MS past the release or expiry.  A claimant sleeps through
-- a lost holder's delay without asserting: the claim stands at least
-- PROTO_CLAIM_MS past the delay's end.
--
-- Parameters: mk (a key, e.g. KEYS[3]).
local g, pos = {}, 1
for i = 1, 12 do
  local e = string.find(m, '\0', pos, true) or #m + 1
  g[i] = string.sub(m, pos, e - 1)
  pos = e + 1
end
local du, cl, cu, lost = 0, '', 0, g[1] ~= ''
local cs = lost and g[12] or g[6]
if not lost then
  du, cl, cu = tonumber(g[3]) or 0, g[4], tonumber(g[5]) or 0
else
  if (tonumber(g[9]) or 0) > 0 then
    du = now + redis.call('PTTL', {{mk}})
  end
  cl = g[10]
  if cl ~= '' then
    cu = tonumber(g[11]) or math.max(now, du) + {{PROTO_CLAIM_MS}}
    if du > 0 then cu = math.max(cu, du + {{PROTO_CLAIM_MS}}) end
  end
end
