-- A stopped holder has released: wake redlock stop.
--
--@keys stopped
--@argv linger
-- ARGV: linger ms.
-- Returns 1.
redis.call('RPUSH', KEYS[1], '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
