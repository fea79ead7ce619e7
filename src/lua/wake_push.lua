-- Wake a waiter: push one wake-up to the list KEYS[1] (wake, or
-- xwake), lingering ARGV[1] ms.  A release's last step while a Redis
-- Cluster migrates the slot (see release_key.lua), where whether
-- anyone waits is another key's: it pushes whether or not, which costs
-- a waiter that comes later one early attempt.
--
--@keys wake
--@argv linger
-- ARGV: linger ms.
-- Returns 1.
if redis.call('RPUSH', KEYS[1], '1') > 1 then
  redis.call('LTRIM', KEYS[1], 0, 0)
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
