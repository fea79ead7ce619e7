-- Reset the lease to ttl ms if token holds it (renewal and
-- extend), and with meta the record's to record_ms ms (the record
-- outlives K, so that most renewals need not touch it: renew.c; as
-- SCRIPT_RENEW_LEASE, its --@variant lease, they pass K alone).
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
local v = redis.pcall('GET', K)
-- The usual renewal, inline (src/lua/README): token holds K, unmarked.
if v == token then
  redis.call('PEXPIRE', K, ttl)
  if meta then redis.call('PEXPIRE', meta, record_ms) end
  return 1
end
--@include lib/token_holds.lua
local no = token_holds(K, token)
if no then return no end
-- Marked to stop (redlock stop): renewed all the same, and told.
redis.call('PEXPIRE', K, ttl)
if meta then redis.call('PEXPIRE', meta, record_ms) end
return 2
