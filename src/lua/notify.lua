-- A stopped holder has released: wake redlock stop.
--
--@keys stopped
--@argv linger
-- ARGV: linger ms.
-- Returns 1.
redis.call('RPUSH', stopped, '1')
redis.call('PEXPIRE', stopped, linger)
return 1
