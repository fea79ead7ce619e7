-- Quorum mode: raise the fencing counter to the fence of this grant
-- (the largest among the granting servers).  Once a majority holds a
-- counter at least this high, every later grant, whose majority shares
-- a server with this one, mints a larger fence.  The holder's record
-- takes the fence too.
--
--@keys fence meta
--@argv fence_value linger
-- ARGV: fence, its linger.
-- Returns 1.
--@include lib/holder_record.lua
if tonumber(redis.call('GET', fence) or '0') < tonumber(fence_value) then
  redis.call('SET', fence, fence_value, 'PX', linger)
end
local g = holder_fields(redis.call('GET', meta))
local ms = redis.call('PTTL', meta)
if g.n > 1 and ms > 0 then
  g[1] = fence_value
  redis.call('SET', meta, holder_join(g), 'PX', ms)
end
return 1
