-- Reset shared holder token's lease to ttl ms.
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
--@include lib/holders.lua
local no = held_shared(K)
if no then return no end
local now = server_ms()
local s = redis.call('ZSCORE', holders, token)
if not s or tonumber(s) <= now then return -1 end
redis.call('ZADD', holders, now + ttl, token)
holders_extend(K, holders, hmeta, now)
if redis.call('HGET', hmeta, token .. ':stop') then return 2 end
return 1
