-- A fair queue (--fair): the waiters of NAME in the order in which they
-- began to wait, on the server's clock.  src/fair.c says how a waiter
-- uses it.
--
--@keys K holders queue lease qmeta
--@caller-keys
--@reply go pos arrival
--@argv op member arrival lease_ms limit meta wake_ms tokens...
-- KEYS: K, the shared holders, the queue (a sorted set of members
--   scored by arrival: the server's clock in microseconds, ties by
--   member), the leases (the same members scored by when each lapses,
--   server ms) and the waiters' metadata (a hash: member -> host \0
--   pid \0 user \0 since, server ms).  A member is 'x' (exclusive) or
--   's' (shared) and the waiter's id; its wake list is the queue's key
--   .. '\0' .. member.
-- ARGV: op, member, arrival ('' or the arrival the member's servers
--   agreed on), lease ms, limit (--limit N, 0: none), meta (host \0 pid
--   \0 user), wake ms (how long a wake list lingers), then inherited
--   tokens (REDLOCK_HELD).
-- op 'w' (wait): prune lapsed members, enter the queue (or renew the
--   lease), and return {go, pos, arrival}: go 1 when the member may
--   take NAME (the head, or a shared member with no exclusive one and
--   fewer than the free places ahead of it; or an inherited token holds NAME:
--   pos 0 then), pos its place from 1.
-- op 'l' (leave): leave the queue (granted, or given up); returns 1.
-- op 'v' (view): prune, then {count, now, member, arrival, meta, ...}
--   for the first FAIR_VIEW_MAX members.
--
-- Whenever members leave, those that may now go and could not before
-- get a wake-up on their own list, so that the queue moves on at once.
-- Every key lives as long as the longest lease: when the queue is
-- empty, nothing is left.
--@include lib/now.lua
--@include lib/unmark.lua
local q, ls, mt = queue, lease, qmeta
local me, lim = member, tonumber(limit) or 0
local now, t = server_ms()
-- How many members may go at once: with --limit, as many as there are
-- free places (the holders whose lease has not ended take the others),
-- so that a later member never takes the place the head is about to
-- take; at most 100.  This script changes no holder: counted once.
local room = 100
if lim > 0 then
  room = math.min(lim - redis.call('ZCOUNT', holders, '(' .. now, '+inf'),
    100)
end
-- The members that may go: the head if exclusive, else the shared ones
-- before the first exclusive one, as many as room (the head always).
local function front()
  local cap = room
  if cap < 1 then cap = 1 end
  local r, go = redis.call('ZRANGE', q, 0, cap - 1), {}
  for i = 1, #r do
    if string.byte(r[i]) == 120 then
      if i == 1 then go[r[i]] = true end
      break
    end
    go[r[i]] = true
  end
  return go
end
local function wake(before)
  for m in pairs(front()) do
    if not before[m] and m ~= me then
      local k = q .. '\0' .. m
      if redis.call('RPUSH', k, '1') > 1 then
        redis.call('LTRIM', k, 0, 0)
      end
      redis.call('PEXPIRE', k, wake_ms)
    end
  end
end
local function drop(gone)
  redis.call('ZREM', q, unpack(gone))
  redis.call('ZREM', ls, unpack(gone))
  redis.call('HDEL', mt, unpack(gone))
  for i = 1, #gone do redis.call('DEL', q .. '\0' .. gone[i]) end
end
local before = front()
local gone = redis.call('ZRANGEBYSCORE', ls, '-inf', now, 'LIMIT', 0, 1000)
if #gone > 0 then drop(gone) end
if op == 'l' then
  drop({me})
  wake(before)
  return 1
end
if op == 'v' then
  if #gone > 0 then wake(before) end
  local r = {redis.call('ZCARD', q), now}
  local ms = redis.call('ZRANGE', q, 0, 99, 'WITHSCORES')
  for i = 1, #ms, 2 do
    r[#r + 1] = ms[i]
    r[#r + 1] = ms[i + 1]
    r[#r + 1] = redis.call('HGET', mt, ms[i]) or ''
  end
  return r
end
if #ARGV >= tokens then
  local v = redis.pcall('GET', K)
  if type(v) ~= 'string' then v = nil end
  v = unmark(v)
  for i = tokens, #ARGV do
    if v == ARGV[i] or (v == '\0shared' and
        redis.call('ZSCORE', holders, ARGV[i])) then
      return {1, 0, '0'}
    end
  end
end
if arrival == '' or not redis.call('ZSCORE', q, me) then
  redis.call('ZADD', q, 'NX', string.format('%d', t[1] * 1000000 + t[2]),
    me)
else
  redis.call('ZADD', q, 'XX', arrival, me)
end
redis.call('ZADD', ls, now + lease_ms, me)
redis.call('HSETNX', mt, me, meta .. '\0' .. string.format('%d', now))
for _, k in ipairs({q, ls, mt}) do redis.call('PEXPIRE', k, lease_ms) end
if #gone > 0 then wake(before) end
local rank = redis.call('ZRANK', q, me)
local go = 0
if rank == 0 then
  go = 1
elseif string.byte(me) ~= 120 and rank < room then
  go = 1
  for _, m in ipairs(redis.call('ZRANGE', q, 0, rank - 1)) do
    if string.byte(m) == 120 then
      go = 0
      break
    end
  end
end
return {go, rank + 1, redis.call('ZSCORE', q, me)}
