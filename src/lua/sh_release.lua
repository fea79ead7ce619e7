-- Release shared holder ARGV[1]; with ARGV[2] > 0 (--min-hold) leave
-- its lease to end that much later instead.  The last holder out
-- deletes K.  Wakes one waiter: a writer when writers wait and the lock
-- is now free, else (no writer) anyone, since a place was freed.
--
--@keys K holders hmeta wake fence xwait xwake
--@argv token keep_ms fence_linger wake_linger
-- ARGV: token, keep ms, fence linger, wake linger.
-- Returns 1 released, 2 left to expire, 0 held by others, -1 free.
--@include lib/held_shared.lua
--@include lib/now.lua
--@include lib/holders.lua h=2 m=3
--@include lib/wake.lua l=4 q=6
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not s or tonumber(s) <= now then
  prune()
  if redis.call('ZCARD', KEYS[2]) > 0 then return 0 end
  return -1
end
if tonumber(ARGV[2]) > 0 then
  redis.call('ZADD', KEYS[2], now + ARGV[2], ARGV[1])
  extend()
  return 2
end
redis.call('ZREM', KEYS[2], ARGV[1])
forget(ARGV[1])
prune()
redis.call('PEXPIRE', KEYS[5], ARGV[3])
local n = redis.call('ZCARD', KEYS[2])
if n == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
else
  extend()
end
if writers() then
  if n == 0 then push(KEYS[7]) end
else
  push(KEYS[4])
end
return 1
