-- sh_renew.lua key by key, for a renewal while a Redis Cluster
-- migrates the slot and K, the holders' set and their metadata are not
-- all on one node (hold.c): each of sh_renew_set.lua, sh_renew_mark.lua
-- and sh_renew_meta.lua has one key, so each runs where its key is
-- (following its own ASK).  The set, which says whether the token holds
-- the lock, is asked first, and K and the metadata only once it said
-- so.
--
-- The set: reset holder ARGV[1]'s lease to ARGV[2] ms and make the set
-- live as long as its latest lease.
--
--@keys holders
--@argv token ttl
-- ARGV: token, ttl.
-- Returns 1, or -1 when the token holds no lease there.
--@include lib/now.lua
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return -1 end
redis.call('ZADD', KEYS[1], now + ARGV[2], ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local ms = math.floor(tonumber(last[2]) - now)
redis.call('PEXPIRE', KEYS[1], math.max(1, ms))
return 1
