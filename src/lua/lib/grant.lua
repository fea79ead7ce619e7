-- The end of a grant, K just taken: the fence from the counter
-- (KEYS[2]), seeded from the server's clock when missing, then the
-- holder's record (KEYS[3]) from the record's tail rec (see
-- lib/holder_record.lua), living px ms (the first renewal extends it).
-- The fence is left in f.  Numbers are formatted as integers ('%d': a
-- fence is below 2^53) and passed on as the strings they came in, since
-- formatting a float costs the server more than a call.  The record is
-- set NX: one already there while K was free is a lost holder's or the
-- hold marker, which may hold this request (of waiter id) back
-- (lib/hold.lua: see "Held back" in src/lua/README); then K is given
-- back and held is set to the ms to wait (the script declares it), else
-- the grant goes on; a --replace granted through its own claim keeps the
-- claim's since as its record's twelfth field, so that an earlier
-- replacement does not ask it to stop (stop.lua).
--
-- Parameters: rec, px, id (expressions).
local f = redis.call('INCR', KEYS[2])
if f == 1 then
  local t = redis.call('TIME')
  f = t[1] * 1000000 + t[2] + 1
  redis.call('SET', KEYS[2], string.format('%d', f), 'PX', '{{PROTO_FENCE_LINGER_MS}}')
end
if not redis.call('SET', KEYS[3], string.format('%d', f) .. {{rec}},
    'NX', 'PX', {{px}}) then
  local m = redis.call('GET', KEYS[3]) or ''
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
--@include lib/hold.lua mk=KEYS[3] id="{{id}}"
  if hold > 0 then
    redis.call('DEL', KEYS[1])
    held = hold
  else
    local r = string.format('%d', f) .. {{rec}}
    if cl ~= '' and cl == {{id}} and cs ~= '' then
      local _, n = string.gsub(r, '%z', '')
      r = r .. string.rep('\0', 11 - n) .. cs
    end
    redis.call('SET', KEYS[3], r, 'PX', {{px}})
  end
end
