-- --record: keep a run or a skip in NAME's record (see record.c for its
-- fields).
--
--@keys record K meta holders hmeta
--@caller-keys
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
--@include lib/holder_record.lua
local now = server_ms()
local o, ms = outcome, string.format('%d', now)
local runs = tonumber(redis.call('HGET', record, 'runs_' .. o) or '') or 0
local f = {'name', name, 'key', key, 'updated_ms', ms,
  'runs_' .. o, string.format('%d', runs + 1)}
local function add(...)
  for _, v in ipairs({...}) do f[#f + 1] = v end
end
local function write()
  redis.call('PEXPIRE', record, linger)
  redis.call('HSET', record, unpack(f))
  redis.call('PEXPIRE', record, linger)
end
-- A run's arguments go on from pid; a skip's end with outcome.
local run = pid ~= nil
if run then
  local d, start = tonumber(duration), '0'
  if d >= 0 then start = string.format('%d', now - d) else d = 0 end
  add('host', host, 'outcome', o, 'end_ms', ms, 'pid', pid,
    'user', user, 'exit_status', exit_status, 'start_ms', start,
    'duration_ms', string.format('%d', d), 'wait_ms', wait,
    'fence', fence, 'skips', '0')
  if o == 'ok' then add('success_ms', ms, 'success_host', host) end
  write()
  return 0
end
local n = (tonumber(redis.call('HGET', record, 'skips') or '') or 0) + 1
add('skips', string.format('%d', n), 'skip_ms', ms, 'skip_host', host)
-- Who holds NAME, as the reply's tail.
local function holder()
  if redis.call('TYPE', K)['ok'] ~= 'string' then return {0} end
  local v = redis.call('GET', K)
  if v == '\0shared' then
    local first, count, start = nil, 0, nil
    for _, g in ipairs(redis.call('ZRANGEBYSCORE', holders, now, '+inf')) do
      local s = tonumber(redis.call('HGET', hmeta, g .. ':start') or '')
      count = count + 1
      if s and (not start or s < start) then first, start = g, s end
    end
    if not first then return {3} end
    return {3, redis.call('HGET', hmeta, first .. ':host'),
      redis.call('HGET', hmeta, first .. ':pid'),
      redis.call('HGET', hmeta, first .. ':user'),
      string.format('%d', start), count}
  end
  if string.sub(v, -5) == '\0stop' then v = string.sub(v, 1, -6) end
  local m = redis.call('GET', meta)
  if not m then return {2} end
  local h = holder_fields(m)
  if h[2] ~= v then return {2} end
  return {1, h[4], h[5], h[6], h[8]}
end
local h = holder()
write()
return {n, unpack(h)}
