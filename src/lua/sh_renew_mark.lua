-- K held shared lives ttl ms at least (sh_renew_set.lua says when).
--
--@keys K
--@argv token ttl
-- ARGV: token (unused), ttl.
-- Returns 1; else 0 held exclusively by a token, -1 free.
--@include lib/held_shared.lua
local no = held_shared(K)
if no then return no end
if redis.call('PTTL', K) < tonumber(ttl) then
  redis.call('PEXPIRE', K, ttl)
end
return 1
