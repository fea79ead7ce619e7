-- hold_ms(m, mk, now, id): how many ms a request of waiter id must
-- still wait (<= 0: none) for the record key mk holding m (see
-- lib/hold_parse.lua), and the standing claim and its since.  A lost
-- holder's record that holds anyone back becomes the hold marker, so
-- that its delay keeps its end and a claim can be kept standing past
-- it.
--@include lib/hold_parse.lua
local function hold_ms(m, mk, now, id)
  local du, cl, cu, cs, lost = hold_parse(m, mk, now)
  local hold = du - now
  if cl ~= '' and cl ~= id and cu - now > hold then
    hold = cu - now
  end
  if hold > 0 and lost then
    redis.call('SET', mk, holder_marker(du, cl, cu, cs), 'PX',
      string.format('%d', math.max(du, cu) - now))
  end
  return hold, cl, cs
end
