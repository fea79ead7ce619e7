-- failover_guard(k, fk, plen, epoch, lease): the failover guard
-- (failover.c says why it is safe) of every acquire script that may
-- grant K (k), with fencing counter fk: plen is '' (no guard: a plain
-- server pays nothing) or the length of the key prefix; epoch is '' or
-- the configuration epoch that Sentinel gave with this master's
-- address (it grows with every promotion).
-- The guard's record is the hash prefix .. "\0failover" (no NAME can
-- make that key: a NAME holds no NUL byte) with fields replid (the
-- replication id of the master that last granted), epoch (the highest
-- epoch seen; a record without one, from an older redlock, counts as
-- 0), ttl (the longest TTL granted, with its --lock-delay), since and
-- until (server ms: when the failover was noticed, and until when
-- grants wait).
--
-- A failover is an epoch above the record's (a record with no epoch or
-- no record at all included: the server was promoted at some time and
-- may lack grants it never received), a record written under another
-- replication id, or no record on a server that Redis says was once a
-- replica (master_replid2).  A server with no record, epoch 0 or none
-- and no past as a replica is new: it is not held back.  After a
-- failover it returns {4, ms held back, ms since}, the script's
-- reply, instead of nil (grant), until every lease granted before it
-- can have ended (lease, the TTL and any --lock-delay, is the longest
-- hold it has seen: a loss that the failover hid from the new master still
-- holds NAME back that long after the lease), and reseeds a fencing
-- counter (fk) from before the failover.  The epoch is compared,
-- never trusted alone: Redis may reset a master's replication ids
-- (when it gets its first replica), a client's epoch may be older than
-- the record's (a lower one changes nothing).
--@include lib/now.lua
local function failover_guard(k, fk, plen, epoch, lease)
  if plen == '' then return nil end
  local info = redis.call('INFO', 'replication')
  local id = string.match(info, 'master_replid:(%x+)') or ''
  local id2 = string.match(info, 'master_replid2:(%x+)') or ''
  local rk = string.sub(k, 1, tonumber(plen)) .. '\0failover'
  local now = server_ms()
  local g = redis.call('HMGET', rk, 'replid', 'ttl', 'since', 'until', 'epoch')
  local ttl = math.max(tonumber(g[2]) or 0, tonumber(lease))
  local e, re = tonumber(epoch), tonumber(g[5]) or 0
  local moved = (e and e > re) or (g[1] and g[1] ~= id) or
    (not g[1] and string.find(id2, '[1-9a-f]'))
  if moved then
    local u = math.max(tonumber(g[4]) or 0, now + ttl)
    g[3], g[4] = now, u
    redis.call('HSET', rk, 'since', string.format('%d', now),
      'until', string.format('%d', u))
  end
  if g[1] ~= id then redis.call('HSET', rk, 'replid', id) end
  if e and (e > re or not g[5]) then
    redis.call('HSET', rk, 'epoch', string.format('%d', e))
  end
  if tonumber(g[4] or 0) > now then
    return {4, g[4] - now, now - g[3]}
  end
  if ttl > (tonumber(g[2]) or 0) then
    redis.call('HSET', rk, 'ttl', lease)
  end
  -- A fencing counter from before the failover is reseeded from the
  -- clock, above every fence the old master gave.
  if g[3] and
    tonumber(redis.call('GET', fk) or '0') < g[3] * 1000 then
    redis.call('DEL', fk)
  end
  return nil
end
