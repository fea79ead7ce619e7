-- Reset shared holder ARGV[1]'s lease to ARGV[2] ms.
--
--@keys K holders hmeta
--@argv token ttl
-- KEYS: K, holders, hmeta (all there while held: see renew.lua).
-- ARGV: token, ttl.
-- Returns 1, or 2 when an operator asked this holder to stop (hmeta's
-- TOKEN:stop); else 0 held exclusively by a token, -1 not held by this
-- token.
--@include lib/held_shared.lua
--@include lib/now.lua
--@include lib/holders.lua h=2 m=3
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not s or tonumber(s) <= now then return -1 end
redis.call('ZADD', KEYS[2], now + ARGV[2], ARGV[1])
extend()
if redis.call('HGET', KEYS[3], ARGV[1] .. ':stop') then return 2 end
return 1
