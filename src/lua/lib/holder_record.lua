-- The holder's record (the meta key), read and written here only.  One
-- string of NUL-separated fields (doc/DESIGN.md, "The holder record"):
--   1 fence, 2 token, 3 ttl, 4 host, 5 pid, 6 user, 7 cmd, 8 start
--   (acquire_args() builds 2 to 8 and the rest, lib/grant.lua puts the
--   fence in front), 9 --lock-delay ('' none), 10 to 12 a --replace
--   claim: waiter id, end and since (server ms), 13 the record's format
--   version (PROTO_RECORD_VERSION; '' in a record of an older redlock).
-- Fields are only ever added at the end: a reader takes those it knows
-- and keeps the others as they are when it writes the record back.
-- While K is free and NAME is held back the key holds the hold marker
-- instead: '' then 'hold', the delay's end, the claim, the claim's end
-- and its since (holder_marker()), which holder_fields() reads alike.
--
-- holder_fields(m): the fields of m (nil: none), at least 13, a missing
-- one '', with g.n the number m has.
local function holder_fields(m)
  local g, pos = {n = 0}, 1
  m = m or ''
  while pos <= #m + 1 do
    local e = string.find(m, '\0', pos, true) or #m + 1
    g[#g + 1] = string.sub(m, pos, e - 1)
    pos = e + 1
  end
  g.n = #g
  for i = g.n + 1, 13 do g[i] = '' end
  return g
end
-- holder_owned(m, v): is record m token v's?  (The marker is nobody's.)
local function holder_owned(m, v)
  return holder_fields(m)[2] == v and string.byte(m) ~= 0
end
-- holder_fence(m): the fence of record m, a number (0: none).
local function holder_fence(m)
  return tonumber(holder_fields(m)[1]) or 0
end
-- holder_join(g): the record of fields g (from holder_fields()): as
-- many as it had, or up to the last one set since.
local function holder_join(g)
  local n = g.n
  for i = #g, n + 1, -1 do
    if g[i] ~= '' then n = i break end
  end
  return table.concat(g, '\0', 1, n)
end
-- holder_marker(du, cl, cu, cs): the hold marker, from the delay's end
-- du and the claim's end cu (numbers), the claim cl and its since cs.
local function holder_marker(du, cl, cu, cs)
  return '\0hold\0' .. string.format('%d', du) .. '\0' .. cl .. '\0' ..
    string.format('%d', cu) .. '\0' .. cs
end
-- holder_hgetall(m, v): record m in HGETALL's shape, as inspect.lua
-- returns it, or {} when it is not token v's.
local function holder_hgetall(m, v)
  if not m then return {} end
  local f = holder_fields(m)
  if f[2] ~= v then return {} end
  return {'fence', f[1], 'ttl', f[3], 'host', f[4], 'pid', f[5],
    'user', f[6], 'cmd', f[7], 'start', f[8]}
end
