-- lib/hold_parse.lua, then hold: how many ms a request of waiter id
-- must still wait (<= 0: none).  A lost holder's record that holds
-- anyone back becomes the hold marker, so that its delay keeps its end
-- and a claim can be kept standing past it.
--
-- Parameters: mk (the record's key), id (the waiter id, an expression).
--@include lib/hold_parse.lua mk="{{mk}}"
local hold = du - now
if cl ~= '' and cl ~= {{id}} and cu - now > hold then
  hold = cu - now
end
if hold > 0 and lost then
  redis.call('SET', {{mk}}, '\0hold\0' .. string.format('%d', du)
    .. '\0' .. cl .. '\0' .. string.format('%d', cu) .. '\0' .. cs, 'PX',
    string.format('%d', math.max(du, cu) - now))
end
