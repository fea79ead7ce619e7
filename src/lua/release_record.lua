-- The holder's record (KEYS[1], meta): delete it if it is token
-- ARGV[1]'s.  release.lua's second step on its own, for a release
-- while a Redis Cluster migrates the slot (see release_key.lua; K was
-- released first).
--
--@keys meta
--@argv token
-- ARGV: token.
-- Returns 1, or 0 when the record is not the token's.
local m = redis.pcall('GET', KEYS[1])
if type(m) ~= 'string' then return 0 end
local e = string.find(m, '\0', 1, true)
if not e or string.sub(m, e + 1, e + #ARGV[1] + 1) ~= ARGV[1] .. '\0' then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
