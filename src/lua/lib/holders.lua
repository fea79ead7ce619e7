-- The shared holders' sorted set (h) and metadata hash (m), at server
-- ms now: holders_forget(m, g) drops holder g's metadata;
-- holders_prune(h, m, now) drops the holders whose lease has ended;
-- holders_extend(k, h, m, now) makes K (k), the set and the hash live
-- exactly as long as the latest lease.
local function holders_forget(m, g)
  redis.call('HDEL', m, g .. ':host', g .. ':pid',
    g .. ':user', g .. ':cmd', g .. ':start', g .. ':fence',
    g .. ':ttl', g .. ':stop')
end
local function holders_prune(h, m, now)
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', h,
      '-inf', now)) do holders_forget(m, g) end
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
end
local function holders_extend(k, h, m, now)
  local last = redis.call('ZRANGE', h, -1, -1, 'WITHSCORES')
  local ms = math.floor(tonumber(last[2]) - now)
  if ms < 1 then ms = 1 end
  redis.call('SET', k, '\0shared', 'PX', ms)
  redis.call('PEXPIRE', h, ms)
  redis.call('PEXPIRE', m, ms)
end
