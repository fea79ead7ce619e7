-- Forget holder ARGV[1]'s metadata (KEYS[1], hmeta): sh_release.lua's
-- step on its own, for a release while a Redis Cluster migrates the
-- slot (see sh_release_set.lua; the set released the token first).
--
--@keys hmeta
--@argv token
-- ARGV: token.
-- Returns 1.
local g = ARGV[1]
redis.call('HDEL', KEYS[1], g .. ':host', g .. ':pid', g .. ':user',
  g .. ':cmd', g .. ':start', g .. ':fence', g .. ':ttl', g .. ':stop')
return 1
