-- inspect.lua key by key, for status, list and break while a Redis
-- Cluster migrates the slot and the lock's keys are not all on one
-- node (inspect.c): each of inspect_key.lua (K), inspect_record.lua and
-- inspect_holders.lua has one key, so each runs where its key is
-- (following its own ASK).  What they read together is not one
-- instant's, as inspect.lua's is, but no grant or release of another
-- kind changes the lock meanwhile: a script on several keys is refused
-- anywhere until the slot has moved.
--
-- K: what holds it.
--
--@keys K
--@argv
--@reply token pttl stop
-- Returns {} when there is no lock; {token, pttl, stop} held (stop:
-- '1' when redlock stop marked it, else '0'; the token is the marker
-- when held shared); a key of another type {type, pttl, 'type'}.
--@include lib/unmark.lua
local ty = redis.call('TYPE', K)['ok']
if ty == 'none' then return {} end
if ty ~= 'string' then
  return {ty, redis.call('PTTL', K), 'type'}
end
local v, stop = unmark(redis.call('GET', K))
return {v, redis.call('PTTL', K), stop and '1' or '0'}
