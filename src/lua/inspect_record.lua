-- The exclusive holder's record (meta) as inspect.lua shows it,
-- for token (see inspect_key.lua).
--
--@keys meta
--@argv token
-- ARGV: token.
-- Returns {field, value...}, or {} when the record is not the token's.
--@include lib/holder_record.lua
return holder_hgetall(redis.call('GET', meta), token)
