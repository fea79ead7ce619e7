-- The start of every script that acts for token ARGV[1]: go on only if
-- it holds K (stop set when redlock stop marked it with '\0stop'), else
-- return 0 (another token), -2 (held shared) or -1 (free).
local v, stop = redis.pcall('GET', KEYS[1]), false
if type(v) == 'table' then v = '\0other' end
if v ~= ARGV[1] then
  if v == '\0shared' then return -2 end
  if not v then return -1 end
  if v ~= ARGV[1] .. '\0stop' then return 0 end
  stop = true
end
