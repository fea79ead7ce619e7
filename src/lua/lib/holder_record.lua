-- The holder's record (KEYS meta): one string, the fence, then
-- "\0token\0ttl\0host\0pid\0user\0cmd\0start" as acquire_args() builds
-- it (and, with --lock-delay and --replace, a ninth to twelfth field:
-- see lib/hold_parse.lua).  record(m, v) reads it into HGETALL's shape, or
-- {} when it is not token v's.  Its fence alone, where a script needs
-- it, is (tonumber(string.match(m or '', '^(%d+)')) or 0).
local function record(m, v)
  if not m then return {} end
  local f, pos = {}, 1
  for n = 1, 8 do
    local e = string.find(m, '\0', pos, true) or #m + 1
    f[n] = string.sub(m, pos, e - 1)
    pos = e + 1
  end
  if f[2] ~= v then return {} end
  return {'fence', f[1], 'ttl', f[3], 'host', f[4], 'pid', f[5],
    'user', f[6], 'cmd', f[7], 'start', f[8]}
end
