-- Release if token holds the lock (lib/release_body.lua, keep
-- keep_ms).
--
--@keys K meta wake waiting hmeta
--@argv token keep_ms
-- ARGV: token, then keep ms (--min-hold) only when the lock is kept.
-- Returns 1 released, 2 left to expire, 0 held by another token, -2
-- held shared, -1 free.
--@include lib/token_holds.lua
--@include lib/release_body.lua
local no, stop = token_holds(K, token)
if no then return no end
return release_body(K, meta, wake, waiting, hmeta, keep_ms, stop)
