-- push(k): one wake-up on list k (at most one is ever pending), which
-- lingers ARGV[l] ms.  writers(): is an exclusive request waiting in
-- KEYS[q]?  Entries lapse by themselves when their waiter is gone.
--
-- Parameters: l (an ARGV index), q (a KEYS index).
local function push(k)
  if redis.call('RPUSH', k, '1') > 1 then
    redis.call('LTRIM', k, 0, 0)
  end
  redis.call('PEXPIRE', k, ARGV[{{l}}])
end
local function writers()
  redis.call('ZREMRANGEBYSCORE', KEYS[{{q}}], '-inf', now)
  return redis.call('ZCARD', KEYS[{{q}}]) > 0
end
