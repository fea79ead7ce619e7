-- grant(k, fk, mk, rec, px, id, f, counted): the end of a grant, K (k)
-- just taken: the fence from the counter fk (lib/fence.lua, counted on a
-- quorum; f, when the caller already minted it), then the holder's
-- record (mk) from the record's tail rec
-- (lib/holder_record.lua), living px ms (the first renewal extends it).
-- Returns the fence, and, when NAME is held back, the ms to wait.
-- Numbers are formatted as integers ('%d': a fence is below 2^53) and
-- passed on as the strings they came in, since formatting a float
-- costs the server more than a call.  The record is set NX: one already
-- there while K was free is a lost holder's or the hold marker, which
-- may hold this request (of waiter id) back (lib/hold.lua: see "Held
-- back" in src/lua/README); then K is given back, else the grant goes
-- on; a --replace granted through its own claim keeps the claim's since
-- as its record's twelfth field, so that an earlier replacement does
-- not ask it to stop (stop.lua).
--@include lib/now.lua
--@include lib/hold.lua
--@include lib/fence.lua
local function grant(k, fk, mk, rec, px, id, f, counted)
  f = f or fence_next(fk, nil, counted)
  if not redis.call('SET', mk, string.format('%d', f) .. rec,
      'NX', 'PX', px) then
    local m = redis.call('GET', mk) or ''
    local hold, cl, cs = hold_ms(m, mk, server_ms(), id)
    if hold > 0 then
      redis.call('DEL', k)
      return f, hold
    end
    local r = string.format('%d', f) .. rec
    if cl ~= '' and cl == id and cs ~= '' then
      local g = holder_fields(r)
      g[12] = cs
      r = holder_join(g)
    end
    redis.call('SET', mk, r, 'PX', px)
  end
  return f
end
