-- The holder's record (meta): delete it if it is token's.  release.lua's second step on its own, for a release
-- while a Redis Cluster migrates the slot (see release_key.lua; K was
-- released first).
--
--@keys meta
--@argv token
-- ARGV: token.
-- Returns 1, or 0 when the record is not the token's.
--@include lib/holder_record.lua
local m = redis.pcall('GET', meta)
if type(m) ~= 'string' or not holder_owned(m, token) then return 0 end
redis.call('DEL', meta)
return 1
