-- token_holds(k, t): the start of every script that acts for a token
-- (t): nil when it holds K (k), and then whether redlock stop marked
-- it with '\0stop' (lib/unmark.lua); else what the script returns: 0
-- (another token), -2 (held shared) or -1 (free); or the GET's error
-- reply when it failed otherwise than on a key of another type (an ACL
-- without GET), rather than an answer the script could not know.
local function token_holds(k, t)
  local got = redis.pcall('GET', k)
  if type(got) == 'table' then
    if not string.find(got.err, 'WRONGTYPE', 1, true) then
      return redis.error_reply(got.err)
    end
    got = '\0other'
  end
  if got == t then return nil, false end
  if got == '\0shared' then return -2 end
  if not got then return -1 end
  if got ~= t .. '\0stop' then return 0 end
  return nil, true
end
