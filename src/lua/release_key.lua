-- release.lua key by key, for a release while a Redis Cluster migrates
-- the slot and the lock's keys are not all on one node (hold.c): each
-- of release_key.lua (K), release_record.lua (the holder's record),
-- wake_push.lua and once_done.lua has one key, so each runs where its
-- key is (following its own ASK).  K, which says whether the token
-- holds the lock, goes first, and the others only once it said so.
-- (No grant runs meanwhile: a script on several keys is refused
-- anywhere until the slot has moved.)
--
-- K: delete it if token holds it (marked to stop or not).
--
--@keys K
--@argv token
-- ARGV: token.
-- Returns 1 released, 0 held by another token, -2 held shared, -1
-- free.
--@include lib/token_holds.lua
local no = token_holds(K, token)
if no then return no end
redis.call('DEL', K)
return 1
