-- --once-per: release.lua, after a successful run, which it records:
-- the server's clock in ms goes to KEYS[6] (done), which lives until
-- the end of the current period, ARGV[2] ms long and aligned to the
-- epoch (once.lua reads it).
--
--@keys K meta wake waiting hmeta done
--@argv token period keep_ms
-- ARGV: token, period, then keep ms as release.lua's ARGV[2].
-- Returns as release.lua.
--@include lib/token_holds.lua
--@include lib/now.lua
redis.call('SET', KEYS[6], string.format('%d', now), 'PX',
  string.format('%d', ARGV[2] - now % ARGV[2]))
--@include lib/release_body.lua keep=ARGV[3]
