-- --once-per: release.lua, after a successful run, which it records
-- in done for the period in which the run got the lock
-- (lib/done_mark.lua; once.lua reads it).
--
--@keys K meta wake waiting hmeta done
--@argv token period age keep_ms
-- ARGV: token, period ms, age (ms since the run found its period open,
--   on the client's monotonic clock), then keep ms as release.lua's
--   keep_ms.
-- Returns as release.lua.
--@include lib/token_holds.lua
--@include lib/now.lua
--@include lib/done_mark.lua
--@include lib/release_body.lua
local no, stop = token_holds(K, token)
if no then return no end
done_mark(done, period, age, server_ms())
return release_body(K, meta, wake, waiting, hmeta, keep_ms, stop)
