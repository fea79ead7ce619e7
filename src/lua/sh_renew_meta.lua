-- The shared holders' metadata, if any, lives ttl ms at least
-- (sh_renew_set.lua says when).
--
--@keys hmeta
--@argv token ttl
-- ARGV: token, ttl.
-- Returns 2 when an operator asked holder token to stop, else 1.
local ms = redis.call('PTTL', hmeta)
if ms >= 0 and ms < tonumber(ttl) then
  redis.call('PEXPIRE', hmeta, ttl)
end
if redis.call('HGET', hmeta, token .. ':stop') then return 2 end
return 1
