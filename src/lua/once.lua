-- --once-per: did NAME succeed in the current period of period ms
-- (aligned to the epoch in the server's clock)?
--
--@keys done
--@reply yes last now
--@argv period
-- ARGV: period ms.
-- Returns {1 yes or 0 no, the last success (server ms, 0 none), now}.
--@include lib/now.lua
local d = tonumber(redis.call('GET', done) or '')
local now = server_ms()
local p = tonumber(period)
if d and math.floor(d / p) == math.floor(now / p) then
  return {1, d, now}
end
return {0, d or 0, now}
