-- The live shared holders (KEYS[1], holders) as inspect.lua shows them
-- (see inspect_key.lua).
--
--@keys holders
--@argv
-- Returns {token, pttl...}.
--@include lib/now.lua
local h = redis.call('ZRANGEBYSCORE', KEYS[1],
  '(' .. string.format('%d', now), '+inf', 'WITHSCORES')
for i = 2, #h, 2 do h[i] = tonumber(h[i]) - now end
return h
