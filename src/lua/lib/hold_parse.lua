-- hold_parse(m, mk, now): what the record key mk, holding m, says while
-- K is free (see lib/hold.lua and "Held back" in src/lua/README), at
-- server ms now.  A lost holder's record (its fence first) or the hold
-- marker (lib/holder_record.lua) gives
--   du, until when a lost holder's --lock-delay holds NAME back (0:
--     none),
--   cl, the waiter id of a --replace claim ('' none),
--   cu, until when the claim stands,
--   cs, the claim's since (server ms of the claimant's first
--     assertion, '' unknown),
--   lost, true for a holder's record, false for the marker.
-- A record keeps the claim in its tenth to twelfth fields, its end in
-- the eleventh (server ms of the last assertion plus PROTO_CLAIM_MS);
-- one without (an older redlock's) stands PROTO_CLAIM_MS past the
-- release or expiry.  A claimant sleeps through a lost holder's delay
-- without asserting: the claim stands at least PROTO_CLAIM_MS past the
-- delay's end.
--@include lib/holder_record.lua
local function hold_parse(m, mk, now)
  local g = holder_fields(m)
  local lost = g[1] ~= ''
  local cs = lost and g[12] or g[6]
  if not lost then
    return tonumber(g[3]) or 0, g[4], tonumber(g[5]) or 0, cs, lost
  end
  local du, cl, cu = 0, g[10], 0
  if (tonumber(g[9]) or 0) > 0 then
    du = now + redis.call('PTTL', mk)
  end
  if cl ~= '' then
    cu = tonumber(g[11]) or math.max(now, du) + {{PROTO_CLAIM_MS}}
    if du > 0 then cu = math.max(cu, du + {{PROTO_CLAIM_MS}}) end
  end
  return du, cl, cu, cs, lost
end
