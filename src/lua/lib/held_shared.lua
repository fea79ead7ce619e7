-- Go on only while KEYS[1] (K) is held shared: return 0 when anything
-- else holds it (an exclusive token, or a key that holds no string),
-- -1 when it is free.  Sets v, K's value.
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' then v = '\0other' end
if v ~= '\0shared' then
  if v then return 0 end
  return -1
end
