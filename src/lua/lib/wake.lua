-- wake_one(k, linger): one wake-up on list k (at most one is ever
-- pending), which lingers linger ms.  wake_writers(q, now): is an
-- exclusive request waiting in the waiting writers q?  Entries lapse by
-- themselves when their waiter is gone.
local function wake_one(k, linger)
  if redis.call('RPUSH', k, '1') > 1 then
    redis.call('LTRIM', k, 0, 0)
  end
  redis.call('PEXPIRE', k, linger)
end
local function wake_writers(q, now)
  redis.call('ZREMRANGEBYSCORE', q, '-inf', now)
  return redis.call('ZCARD', q) > 0
end
