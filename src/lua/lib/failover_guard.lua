-- The failover guard (SPEC section 9; failover.c says why it is safe),
-- a fragment of every acquire script that may grant: ARGV[plen] is ''
-- (no guard: a plain server pays nothing) or the length of the key
-- prefix; the guard's record is the hash prefix .. "\0failover" (no
-- NAME can make that key: a NAME holds no NUL byte) with fields replid
-- (the replication id of the master that last granted), ttl (the
-- longest TTL granted, with its --lock-delay), since and until (server
-- ms: when another replication id was first seen, and until when
-- grants wait).  After a failover the script returns {4, ms held back,
-- ms since} instead of granting, until every lease granted before it
-- can have ended (ARGV[lease], the TTL and any --lock-delay, is the
-- longest hold it has seen: a loss that the failover hid from the new
-- master still holds NAME back that long after the lease), and reseeds
-- a fencing counter (KEYS[2]) from before the failover.
--
-- Parameters: plen, lease (ARGV indexes).
  if ARGV[{{plen}}] ~= '' then
    local info = redis.call('INFO', 'replication')
    local id = string.match(info, 'master_replid:(%x+)') or ''
    local id2 = string.match(info, 'master_replid2:(%x+)') or ''
    local rk = string.sub(KEYS[1], 1, tonumber(ARGV[{{plen}}])) .. '\0failover'
    local t = redis.call('TIME')
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    local g = redis.call('HMGET', rk, 'replid', 'ttl', 'since', 'until')
    local ttl = math.max(tonumber(g[2]) or 0, tonumber(ARGV[{{lease}}]))
    if g[1] ~= id then
      -- A record from another master: a failover.  No record on a
      -- server that was once a replica: one whose first grant was lost.
      -- No record, never a replica: a new server, not held back.
      local hold = ttl
      if not g[1] and not string.find(id2, '[1-9a-f]') then hold = -1 end
      if hold >= 0 then
        g[3], g[4] = now, now + hold
        redis.call('HSET', rk, 'since', string.format('%d', now),
          'until', string.format('%d', now + hold))
      end
      redis.call('HSET', rk, 'replid', id)
    end
    if tonumber(g[4] or 0) > now then
      return {4, g[4] - now, now - g[3]}
    end
    if ttl > (tonumber(g[2]) or 0) then
      redis.call('HSET', rk, 'ttl', ARGV[{{lease}}])
    end
    -- A fencing counter from before the failover is reseeded from the
    -- clock, above every fence the old master gave.
    if g[3] and
      tonumber(redis.call('GET', KEYS[2]) or '0') < g[3] * 1000 then
      redis.call('DEL', KEYS[2])
    end
  end
