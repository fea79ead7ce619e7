-- Release shared holder token; with keep_ms > 0 (--min-hold) leave
-- its lease to end that much later instead.  The last holder out
-- deletes K.  Wakes one waiter: a writer when writers wait and the lock
-- is now free, else (no writer) anyone, since a place was freed, but
-- only while someone waits (waiting), as release.lua.
--
--@keys K holders hmeta wake fence xwait xwake waiting
--@argv token keep_ms fence_linger wake_linger
-- ARGV: token, keep ms, fence linger, wake linger.
-- Returns 1 released, 2 left to expire, 0 held by others, -1 free.
--@include lib/held_shared.lua
--@include lib/now.lua
--@include lib/holders.lua
--@include lib/wake.lua
local no = held_shared(K)
if no then return no end
local now = server_ms()
local s = redis.call('ZSCORE', holders, token)
if not s or tonumber(s) <= now then
  holders_prune(holders, hmeta, now)
  if redis.call('ZCARD', holders) > 0 then return 0 end
  return -1
end
if tonumber(keep_ms) > 0 then
  redis.call('ZADD', holders, now + keep_ms, token)
  holders_extend(K, holders, hmeta, now)
  return 2
end
redis.call('ZREM', holders, token)
holders_forget(hmeta, token)
holders_prune(holders, hmeta, now)
redis.call('PEXPIRE', fence, fence_linger)
local n = redis.call('ZCARD', holders)
if n == 0 then
  redis.call('DEL', K, holders, hmeta)
else
  holders_extend(K, holders, hmeta, now)
end
if wake_writers(xwait, now) then
  if n == 0 then wake_one(xwake, wake_linger) end
elseif redis.call('EXISTS', waiting) == 1 then
  wake_one(wake, wake_linger)
end
return 1
