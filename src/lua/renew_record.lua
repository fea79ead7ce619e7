-- Reset the holder's record (meta) to record_ms ms if it is
-- token's: renew.lua's second half, on its own, for a renewal
-- while a Redis Cluster migrates the slot and K and the record are on
-- two nodes (hold.c; K was renewed first).
--
--@keys meta
--@argv token record_ms
-- ARGV: token, the record's ttl.
-- Returns 1, or 0 when the record is not the token's.
--@include lib/holder_record.lua
local m = redis.pcall('GET', meta)
if type(m) ~= 'string' or not holder_owned(m, token) then return 0 end
redis.call('PEXPIRE', meta, record_ms)
return 1
