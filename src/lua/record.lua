-- --record: keep a run or a skip in NAME's record (see record.c for its
-- fields).
--
--@keys record K meta holders hmeta
--@reply skips state host pid user start count
--@argv linger name key host outcome pid user exit_status duration wait fence
-- ARGV: linger ms, NAME, K, host, outcome; a run adds pid, user, exit
--   status, duration ms (-1: the command did not run), wait ms, fence.
-- Every time the record keeps is the server's (lib/now.lua), so that
-- hosts whose clocks differ agree: a run ends now and started its
-- duration (the host's monotonic span) before.  Everything is read
-- before anything is written, and the writes are one PEXPIRE (also
-- before, so that a user denied it writes nothing), one HSET and the
-- PEXPIRE that makes a new record expire: an error leaves no
-- half-written record.
-- A run returns 0.  A skip returns {skips since the last run, state}:
-- state 0 NAME is free now, 2 held by another client, or 1 followed by
-- the exclusive holder's host, pid, user and start (from its record,
-- never its token), or 3 held shared followed by the same of the
-- earliest live shared holder and how many hold it.
--@include lib/now.lua
local r, o, ms = KEYS[1], ARGV[5], string.format('%d', now)
local runs = tonumber(redis.call('HGET', r, 'runs_' .. o) or '') or 0
local f = {'name', ARGV[2], 'key', ARGV[3], 'updated_ms', ms,
  'runs_' .. o, string.format('%d', runs + 1)}
local function add(...)
  for _, v in ipairs({...}) do f[#f + 1] = v end
end
local function write()
  redis.call('PEXPIRE', r, ARGV[1])
  redis.call('HSET', r, unpack(f))
  redis.call('PEXPIRE', r, ARGV[1])
end
if #ARGV > 5 then
  local d, start = tonumber(ARGV[9]), '0'
  if d >= 0 then start = string.format('%d', now - d) else d = 0 end
  add('host', ARGV[4], 'outcome', o, 'end_ms', ms, 'pid', ARGV[6],
    'user', ARGV[7], 'exit_status', ARGV[8], 'start_ms', start,
    'duration_ms', string.format('%d', d), 'wait_ms', ARGV[10],
    'fence', ARGV[11], 'skips', '0')
  if o == 'ok' then add('success_ms', ms, 'success_host', ARGV[4]) end
  write()
  return 0
end
local n = (tonumber(redis.call('HGET', r, 'skips') or '') or 0) + 1
add('skips', string.format('%d', n), 'skip_ms', ms, 'skip_host', ARGV[4])
-- Who holds NAME, as the reply's tail.
local function holder()
  if redis.call('TYPE', KEYS[2])['ok'] ~= 'string' then return {0} end
  local v = redis.call('GET', KEYS[2])
  if v == '\0shared' then
    local first, count, start = nil, 0, nil
    for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], now, '+inf')) do
      local s = tonumber(redis.call('HGET', KEYS[5], g .. ':start') or '')
      count = count + 1
      if s and (not start or s < start) then first, start = g, s end
    end
    if not first then return {3} end
    return {3, redis.call('HGET', KEYS[5], first .. ':host'),
      redis.call('HGET', KEYS[5], first .. ':pid'),
      redis.call('HGET', KEYS[5], first .. ':user'),
      string.format('%d', start), count}
  end
  if string.sub(v, -5) == '\0stop' then v = string.sub(v, 1, -6) end
  local m = redis.call('GET', KEYS[3])
  if not m then return {2} end
  local h, pos = {}, 1
  for i = 1, 8 do
    local e = string.find(m, '\0', pos, true) or #m + 1
    h[i] = string.sub(m, pos, e - 1)
    pos = e + 1
  end
  if h[2] ~= v then return {2} end
  return {1, h[4], h[5], h[6], h[8]}
end
local h = holder()
write()
return {n, unpack(h)}
