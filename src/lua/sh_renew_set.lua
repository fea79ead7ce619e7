-- sh_renew.lua key by key, for a renewal while a Redis Cluster
-- migrates the slot and K, the holders' set and their metadata are not
-- all on one node (hold.c): each of sh_renew_set.lua, sh_renew_mark.lua
-- and sh_renew_meta.lua has one key, so each runs where its key is
-- (following its own ASK).  The set, which says whether the token holds
-- the lock, is asked first, and K and the metadata only once it said
-- so.
--
-- The set: reset holder token's lease to ttl ms and make the set
-- live as long as its latest lease.
--
--@keys holders
--@argv token ttl
-- ARGV: token, ttl.
-- Returns 1, or -1 when the token holds no lease there.
--@include lib/now.lua
local now = server_ms()
local s = redis.call('ZSCORE', holders, token)
if not s or tonumber(s) <= now then return -1 end
redis.call('ZADD', holders, now + ttl, token)
local last = redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')
local ms = math.floor(tonumber(last[2]) - now)
redis.call('PEXPIRE', holders, math.max(1, ms))
return 1
