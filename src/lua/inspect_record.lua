-- The exclusive holder's record (KEYS[1], meta) as inspect.lua shows
-- it, for token ARGV[1] (see inspect_key.lua).
--
--@keys meta
--@argv token
-- ARGV: token.
-- Returns {field, value...}, or {} when the record is not the token's.
--@include lib/holder_record.lua
return record(redis.call('GET', KEYS[1]), ARGV[1])
