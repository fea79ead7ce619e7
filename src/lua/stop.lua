-- redlock stop.  Only redlock holders are asked: an exclusive value
-- without redlock's record beside it (meta: fence, then the token) is
-- another client's (redis-py, ...), left exactly as it is, and counted
-- in `left` until it goes, as is a key that holds no string.  Then
-- drops from the set the tokens that no longer hold the lock and keeps
-- the set until margin ms after K's expiry.
--
--@keys K holders stop hmeta meta
--@reply asked left pttl foreign
--@argv record margin_ms waiter claim_ms
-- ARGV: record ('1': ask the current holders to stop, adding their
--   tokens to the stop set and marking each holder where its renewal
--   looks: an exclusive holder's K gets '\0stop' (lib/unmark.lua), a
--   shared holder's hmeta TOKEN:stop), margin ms; with --replace also a
--   waiter id and ms.
-- Returns {asked, left, pttl, foreign}: holders asked now, holders
-- still holding (of the set, and a foreign one), K's TTL (-2: free), 1
-- when a foreign value holds K.
--
-- With ARGV[3], a waiter id, and ARGV[4], ms (--replace), and NAME
-- held, the waiter's claim on NAME goes to the holder's record, or to
-- the hold marker, and stands until ARGV[4] ms after K's lease (see
-- "Held back" in src/lua/README).
--@include lib/now.lua
--@include lib/unmark.lua
local v, marked, foreign = false, false, 0
local ty = redis.call('TYPE', KEYS[1])['ok']
if ty == 'string' then
  v, marked = unmark(redis.call('GET', KEYS[1]))
  if v ~= '\0shared' then
    local m = redis.call('GET', KEYS[5]) or ''
    local e = string.find(m, '\0', 1, true)
    if not e or string.sub(m, e + 1, e + #v + 1) ~= v .. '\0' then
      foreign = 1
    end
  end
elseif ty ~= 'none' then
  v, foreign = '\0other', 1
end
local asked = 0
if ARGV[1] == '1' and foreign == 1 then
elseif ARGV[1] == '1' and v and v ~= '\0shared' then
  redis.call('SADD', KEYS[3], v)
  if not marked then
    redis.call('SETRANGE', KEYS[1], #v, '\0stop')
  end
  asked = 1
elseif ARGV[1] == '1' and v then
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2],
      '(' .. string.format('%d', now), '+inf')) do
    redis.call('SADD', KEYS[3], g)
    redis.call('HSET', KEYS[4], g .. ':stop', '1')
    asked = asked + 1
  end
end
for _, g in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local holds = g == v
  if not holds and v == '\0shared' then
    local s = redis.call('ZSCORE', KEYS[2], g)
    holds = s and tonumber(s) > now
  end
  if not holds then redis.call('SREM', KEYS[3], g) end
end
local left = redis.call('SCARD', KEYS[3])
local pttl = -2
if v then pttl = redis.call('PTTL', KEYS[1]) end
if left > 0 then
  local ms = tonumber(ARGV[2])
  if pttl > 0 then ms = ms + pttl end
  redis.call('PEXPIRE', KEYS[3], ms)
end
-- --replace: the claim (see "Held back" in src/lua/README).
if ARGV[3] and v then
  local m = redis.call('GET', KEYS[5])
  local kp = math.max(redis.call('PTTL', KEYS[1]), 0)
  if m and string.byte(m) ~= 0 then
    local g, pos = {}, 1
    for i = 1, 10 do
      local e = string.find(m, '\0', pos, true) or #m + 1
      g[i] = string.sub(m, pos, e - 1)
      pos = e + 1
    end
    if g[10] ~= ARGV[3] then
      redis.call('SET', KEYS[5], table.concat(g, '\0', 1, 9) .. '\0' ..
        ARGV[3], 'KEEPTTL')
    end
    if (tonumber(g[9]) or 0) == 0 and
        redis.call('PTTL', KEYS[5]) < kp + ARGV[4] then
      redis.call('PEXPIRE', KEYS[5], kp + ARGV[4])
    end
  else
    local du = m and tonumber(string.match(m, '^%zhold%z(%d+)')) or 0
    local cu = now + kp + ARGV[4]
    redis.call('SET', KEYS[5], '\0hold\0' .. string.format('%d', du) ..
      '\0' .. ARGV[3] .. '\0' .. string.format('%d', cu), 'PX',
      string.format('%d', math.max(du, cu) - now))
  end
end
return {asked, left + foreign, pttl, foreign}
