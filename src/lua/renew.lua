-- Reset the lease to ARGV[2] ms if token ARGV[1] holds it (renewal and
-- extend), and with KEYS[2] the record's to ARGV[3] ms (the record
-- outlives K, so that most renewals need not touch it: renew.c; as
-- SCRIPT_RENEW_LEASE they pass K alone).
--
--@keys K meta
--@argv token ttl record_ms
--@variant lease K
-- KEYS: K, meta: keys that exist while the lock is held, so that a
--   renewal runs on the node that has them while a Redis Cluster
--   migrates the slot (a key missing there would answer TRYAGAIN or
--   ASK).
-- ARGV: token, ttl, the record's ttl.
-- Returns 1, or 2 when an operator asked this holder to stop (redlock
-- stop marked K); else 0 held by another token, -2 held shared, -1
-- free.
--@include lib/token_holds.lua
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[2] then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
if stop then return 2 end
return 1
