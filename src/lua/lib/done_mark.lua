-- done_mark(done, period, age, now): --once-per, record a success in
-- the done key for the period in which its run got the lock, not the
-- one it ends in: the run got it age ms ago on this server's clock (the
-- client measures age on its monotonic clock, from the moment the
-- period was found open: now, the server's ms, minus age is that moment
-- on this server), so the mark holds that time and lives until the end
-- of that period, period ms long and aligned to the epoch.  A run that
-- outlived its period marks nothing: that period is over, and the one
-- it ends in belongs to the run that gets the lock in it.
local function done_mark(done, period, age, now)
  local p, got = tonumber(period), now - tonumber(age)
  local left = p - got % p - (now - got)
  if left > 0 then
    redis.call('SET', done, string.format('%d', got), 'PX',
      string.format('%d', left))
  end
end
