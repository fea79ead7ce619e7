-- Quorum mode: raise the fencing counter to the fence of this grant
-- (the largest among the granting servers).  Once a majority holds a
-- counter at least this high, every later grant, whose majority shares
-- a server with this one, mints a larger fence.  The holder's record
-- takes the fence too.
--
--@keys fence meta
--@argv fence linger
-- ARGV: fence, its linger.
-- Returns 1.
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
local m = redis.call('GET', KEYS[2])
local e = m and string.find(m, '\0', 1, true)
local ms = redis.call('PTTL', KEYS[2])
if e and ms > 0 then
  redis.call('SET', KEYS[2], ARGV[1] .. string.sub(m, e), 'PX', ms)
end
return 1
