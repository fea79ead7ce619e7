-- K held shared, after the last shared holder left (see
-- sh_release_set.lua, whose 3 said so): free it.  sh_release.lua's
-- step on its own, for a release while a Redis Cluster migrates the
-- slot.
--
--@keys K
--@argv
-- Returns 1, or 0 when K is not held shared.
local v = redis.pcall('GET', K)
if v ~= '\0shared' then return 0 end
redis.call('DEL', K)
return 1
