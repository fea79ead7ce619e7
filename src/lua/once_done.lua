-- --once-per: record NAME's success (done) for the period in
-- which its run got the lock, as release_done.lua does
-- (lib/done_mark.lua); its step on its own, for a release while a
-- Redis Cluster migrates the slot (see release_key.lua; K was released
-- first).
--
--@keys done
--@argv period age
-- ARGV: period ms, age (ms since the run found its period open, on the
--   client's monotonic clock).
-- Returns 1.
--@include lib/now.lua
--@include lib/done_mark.lua
done_mark(done, period, age, server_ms())
return 1
