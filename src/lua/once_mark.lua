-- --once-per in a re-entrant run: record its success as release_done.lua
-- does, while the enclosing redlock's token still holds K; the lock
-- stays the enclosing run's to release.
--
--@keys K done
--@argv token period age
-- ARGV: token (the enclosing run's), period ms, age (as
--   release_done.lua's).
-- Returns 1 recorded (or its period already over), else as
--   lib/token_holds.lua: 0 held by another token, -2 held shared, -1
--   free.
--@include lib/token_holds.lua
--@include lib/now.lua
--@include lib/done_mark.lua
local no = token_holds(K, token)
if no then return no end
done_mark(done, period, age, server_ms())
return 1
