-- --once-per: record NAME's success in the period of length ARGV[1]
-- (ms) that is the server's now (KEYS[1], done), as release_done.lua
-- does; its step on its own, for a release while a Redis Cluster
-- migrates the slot (see release_key.lua; K was released first).
--
--@keys done
--@argv period
-- ARGV: period ms.
-- Returns 1.
--@include lib/now.lua
redis.call('SET', KEYS[1], string.format('%d', now), 'PX',
  string.format('%d', ARGV[1] - now % ARGV[1]))
return 1
