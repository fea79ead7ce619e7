-- sh_release.lua key by key, for a release while a Redis Cluster
-- migrates the slot and the lock's keys are not all on one node
-- (hold.c): each of sh_release_set.lua (the holders' set),
-- sh_release_meta.lua, sh_release_mark.lua (K) and wake_push.lua has
-- one key, so each runs where its key is (following its own ASK).  The
-- set, which says whether the token holds the lock, goes first, and
-- the others only once it said so.  (No grant runs meanwhile: a script
-- on several keys is refused anywhere until the slot has moved.)
--
-- The set: remove holder token, and the holders whose lease ended.
--
--@keys holders
--@argv token
-- ARGV: token.
-- Returns 1 released while others still hold the lock, 3 released and
-- nobody holds it now, -1 when the token holds no lease there.
--@include lib/now.lua
local now = server_ms()
local s = redis.call('ZSCORE', holders, token)
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
if not s or tonumber(s) <= now then return -1 end
-- Counted first: a script in a migrating slot may not touch a key
-- that ceased to exist (the node would redirect it), and the last ZREM
-- would delete the set.
if redis.call('ZCARD', holders) > 1 then
  redis.call('ZREM', holders, token)
  return 1
end
redis.call('DEL', holders)
return 3
