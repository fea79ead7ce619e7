-- Reset the holder's record (KEYS[1], meta) to ARGV[2] ms if it is
-- token ARGV[1]'s: renew.lua's second half, on its own, for a renewal
-- while a Redis Cluster migrates the slot and K and the record are on
-- two nodes (hold.c; K was renewed first).
--
--@keys meta
--@argv token record_ms
-- ARGV: token, the record's ttl.
-- Returns 1, or 0 when the record is not the token's.
local m = redis.pcall('GET', KEYS[1])
if type(m) ~= 'string' then return 0 end
local e = string.find(m, '\0', 1, true)
if not e or string.sub(m, e + 1, e + #ARGV[1] + 1) ~= ARGV[1] .. '\0' then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
