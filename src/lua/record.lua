-- --record: keep a run or a skip in NAME's record (see record.c for its
-- fields).
--
--@keys record K meta
--@reply skips state host pid user start
--@argv linger name key host outcome time pid user exit_status start duration wait fence
-- ARGV: linger ms, NAME, K, host, outcome, time (ms); a run adds pid,
--   user, exit status, start ms, duration ms, wait ms, fence.
-- A run returns 0.  A skip returns {skips since the last run, state}:
-- state 0 NAME is free now, 2 held by another client, 3 held shared, or
-- 1 followed by the exclusive holder's host, pid, user and start (from
-- its record, never its token).
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
if v == '\0shared' then return {n, 3} end
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
