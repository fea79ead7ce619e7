-- token_holds(k, token): the start of every script that acts for a
-- token: nil when it holds K (k), and then whether redlock stop marked
-- it with '\0stop' (lib/unmark.lua); else what the script returns: 0
-- (another token), -2 (held shared) or -1 (free).
local function token_holds(k, token)
  local v = redis.pcall('GET', k)
  if type(v) == 'table' then v = '\0other' end
  if v == token then return nil, false end
  if v == '\0shared' then return -2 end
  if not v then return -1 end
  if v ~= token .. '\0stop' then return 0 end
  return nil, true
end
