-- held_shared(k): nil while K (k) is held shared, else what the script
-- returns: 0 when anything else holds it (an exclusive token, or a key
-- that holds no string), -1 when it is free.
local function held_shared(k)
  local v = redis.pcall('GET', k)
  if type(v) == 'table' then v = '\0other' end
  if v == '\0shared' then return nil end
  if v then return 0 end
  return -1
end
