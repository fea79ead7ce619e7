-- The live shared holders (holders) as inspect.lua shows them
-- (see inspect_key.lua).
--
--@keys holders
--@argv
-- Returns {token, pttl...}.
--@include lib/now.lua
local now = server_ms()
local h = redis.call('ZRANGEBYSCORE', holders,
  '(' .. string.format('%d', now), '+inf', 'WITHSCORES')
for i = 2, #h, 2 do h[i] = tonumber(h[i]) - now end
return h
