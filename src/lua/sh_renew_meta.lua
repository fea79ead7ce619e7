-- The shared holders' metadata, if any, lives ARGV[2] ms at least
-- (sh_renew_set.lua says when).
--
--@keys hmeta
--@argv token ttl
-- ARGV: token, ttl.
-- Returns 2 when an operator asked holder ARGV[1] to stop, else 1.
local ms = redis.call('PTTL', KEYS[1])
if ms >= 0 and ms < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if redis.call('HGET', KEYS[1], ARGV[1] .. ':stop') then return 2 end
return 1
