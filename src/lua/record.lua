-- --record: keep a run or a skip in NAME's record (see record.c for its
-- fields).
--
--@keys record K meta holders hmeta
--@reply skips state host pid user start count
--@argv linger name key host outcome time pid user exit_status start duration wait fence
-- ARGV: linger ms, NAME, K, host, outcome, time (ms); a run adds pid,
--   user, exit status, start ms, duration ms, wait ms, fence.
-- A run returns 0.  A skip returns {skips since the last run, state}:
-- state 0 NAME is free now, 2 held by another client, or 1 followed by
-- the exclusive holder's host, pid, user and start (from its record,
-- never its token), or 3 held shared followed by the same of the
-- earliest live shared holder and how many hold it.
local r = KEYS[1]
redis.call('HSET', r, 'name', ARGV[2], 'key', ARGV[3],
  'updated_ms', ARGV[6])
redis.call('HINCRBY', r, 'runs_' .. ARGV[5], 1)
if #ARGV > 6 then
  redis.call('HSET', r, 'host', ARGV[4], 'outcome', ARGV[5],
    'end_ms', ARGV[6], 'pid', ARGV[7], 'user', ARGV[8],
    'exit_status', ARGV[9], 'start_ms', ARGV[10],
    'duration_ms', ARGV[11], 'wait_ms', ARGV[12], 'fence', ARGV[13],
    'skips', '0')
  if ARGV[5] == 'ok' then
    redis.call('HSET', r, 'success_ms', ARGV[6], 'success_host', ARGV[4])
  end
  redis.call('PEXPIRE', r, ARGV[1])
  return 0
end
local n = redis.call('HINCRBY', r, 'skips', 1)
redis.call('HSET', r, 'skip_ms', ARGV[6], 'skip_host', ARGV[4])
redis.call('PEXPIRE', r, ARGV[1])
if redis.call('TYPE', KEYS[2])['ok'] ~= 'string' then return {n, 0} end
local v = redis.call('GET', KEYS[2])
if v == '\0shared' then
  --@include lib/now.lua
  local first, count, start = nil, 0, nil
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], now, '+inf')) do
    local s = tonumber(redis.call('HGET', KEYS[5], g .. ':start') or '')
    count = count + 1
    if s and (not start or s < start) then first, start = g, s end
  end
  if not first then return {n, 3} end
  local f = redis.call('HMGET', KEYS[5], first .. ':host',
    first .. ':pid', first .. ':user')
  return {n, 3, f[1], f[2], f[3], string.format('%d', start), count}
end
if string.sub(v, -5) == '\0stop' then v = string.sub(v, 1, -6) end
local m = redis.call('GET', KEYS[3])
if not m then return {n, 2} end
local f, pos = {}, 1
for i = 1, 8 do
  local e = string.find(m, '\0', pos, true) or #m + 1
  f[i] = string.sub(m, pos, e - 1)
  pos = e + 1
end
if f[2] ~= v then return {n, 2} end
return {n, 1, f[4], f[5], f[6], f[8]}
