-- K held shared lives ARGV[2] ms at least (sh_renew_set.lua says when).
--
--@keys K
--@argv token ttl
-- ARGV: token (unused), ttl.
-- Returns 1; else 0 held exclusively by a token, -1 free.
--@include lib/held_shared.lua
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
