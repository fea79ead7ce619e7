-- Helpers over the shared holders' sorted set (KEYS[h]) and metadata
-- hash (KEYS[m]), given `now` (lib/now.lua): forget(g) drops holder g's
-- metadata; prune() drops the holders whose lease has ended; extend()
-- makes K, the set and the hash live exactly as long as the latest
-- lease.
--
-- Parameters: h, m (KEYS indexes).
local function forget(g)
  redis.call('HDEL', KEYS[{{m}}], g .. ':host', g .. ':pid',
    g .. ':user', g .. ':cmd', g .. ':start', g .. ':fence',
    g .. ':ttl', g .. ':stop')
end
local function prune()
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[{{h}}],
      '-inf', now)) do forget(g) end
  redis.call('ZREMRANGEBYSCORE', KEYS[{{h}}], '-inf', now)
end
local function extend()
  local last = redis.call('ZRANGE', KEYS[{{h}}], -1, -1, 'WITHSCORES')
  local ms = math.floor(tonumber(last[2]) - now)
  if ms < 1 then ms = 1 end
  redis.call('SET', KEYS[1], '\0shared', 'PX', ms)
  redis.call('PEXPIRE', KEYS[{{h}}], ms)
  redis.call('PEXPIRE', KEYS[{{m}}], ms)
end
