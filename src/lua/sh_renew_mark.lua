-- K held shared lives ARGV[2] ms at least (sh_renew_set.lua says when).
--
--@keys K
--@argv token ttl
-- ARGV: token (unused), ttl.
-- Returns 1; else 0 held exclusively by a token, -1 free.
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' then v = '\0other' end
if v ~= '\0shared' then
  if v then return 0 end
  return -1
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
