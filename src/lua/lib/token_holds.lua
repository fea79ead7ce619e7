-- token_holds(k, t): the start of every script that acts for a token
-- (t): nil when it holds K (k), and then whether redlock stop marked
-- it with '\0stop' (lib/unmark.lua); else what the script returns: 0
-- (another token), -2 (held shared) or -1 (free).
local function token_holds(k, t)
  local got = redis.pcall('GET', k)
  if type(got) == 'table' then got = '\0other' end
  if got == t then return nil, false end
  if got == '\0shared' then return -2 end
  if not got then return -1 end
  if got ~= t .. '\0stop' then return 0 end
  return nil, true
end
