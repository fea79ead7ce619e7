-- redlock stop.  Only redlock holders are asked: an exclusive value
-- without redlock's record beside it (meta: fence, then the token) is
-- another client's (redis-py, ...), left exactly as it is, and counted
-- in `left` until it goes, as is a key that holds no string.  Then
-- drops from the set the tokens that no longer hold the lock and keeps
-- the set until margin ms after K's expiry.
--
--@keys K holders stop hmeta meta
--@reply asked left pttl foreign since later
--@argv record margin_ms waiter claim_ms since
-- ARGV: record ('1': ask the current holders to stop, adding their
--   tokens to the stop set and marking each holder where its renewal
--   looks: an exclusive holder's K gets '\0stop' (lib/unmark.lua), a
--   shared holder's hmeta TOKEN:stop), margin ms; with --replace also a
--   waiter id, ms, and the claim's since (server ms of the claimant's
--   first assertion; '0' at the first).
-- Returns {asked, left, pttl, foreign, since, later}: holders asked
-- now, holders still holding (of the set, and a foreign one), K's TTL
-- (-2: free), 1 when a foreign value holds K; with --replace the
-- claim's since (now at the first assertion) and 1 when a later
-- replacement stands in the way: its claim, or the holder it got NAME
-- as (then nobody was asked and nothing claimed).
--
-- With ARGV[3], a waiter id, and ARGV[4], ms (--replace), and NAME
-- held, or free but held back by a claim, the waiter's claim on NAME
-- goes to the holder's record, or to the hold marker, and stands until
-- ARGV[4] ms from now (see "Held back" in src/lua/README).  A claim of
-- another waiter is taken over only when it lapsed or is older (its
-- since is smaller, or equal and its id smaller): the later replacement
-- wins.
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
-- --replace: the standing claim (see "Held back" in src/lua/README).
local m, mf, rec, since, later = false, {}, false, 0, 0
if ARGV[3] then
  since = tonumber(ARGV[5]) or 0
  if since <= 0 then since = now end
  m = redis.call('GET', KEYS[5])
  if m then
    local pos = 1
    for i = 1, 12 do
      local e = string.find(m, '\0', pos, true) or #m + 1
      mf[i] = string.sub(m, pos, e - 1)
      pos = e + 1
    end
    rec = string.byte(m) ~= 0
    local cl, cs = mf[4], tonumber(mf[6])
    if rec then cl, cs = mf[10], tonumber(mf[12]) end
    local cu = tonumber(rec and mf[11] or mf[5]) or 0
    if cl ~= ARGV[3] and cs and (cs > since or cs == since and
        cl > ARGV[3]) and (cl == '' and rec or cu > now) then
      later = 1
    end
  end
end
local asked = 0
if ARGV[1] ~= '1' or foreign == 1 or later == 1 then
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
-- --replace: the claim, until ARGV[4] ms from now, and past a lost
-- holder's delay (its claimant sleeps through it without asserting).
local cl = rec and mf[10] or mf[4]
if ARGV[3] and later == 0 and (v or m and cl ~= '') then
  local cu = now + ARGV[4]
  if v and rec then
    redis.call('SET', KEYS[5], table.concat(mf, '\0', 1, 9) .. '\0' ..
      ARGV[3] .. '\0' .. string.format('%d', cu) .. '\0' ..
      string.format('%d', since), 'KEEPTTL')
    if (tonumber(mf[9]) or 0) == 0 and
        redis.call('PTTL', KEYS[5]) < tonumber(ARGV[4]) then
      redis.call('PEXPIRE', KEYS[5], ARGV[4])
    end
  else
    local du = tonumber(mf[3]) or 0
    if rec then
      du = 0
      if (tonumber(mf[9]) or 0) > 0 then
        du = now + redis.call('PTTL', KEYS[5])
      end
    end
    if du > 0 then cu = math.max(cu, du + ARGV[4]) end
    redis.call('SET', KEYS[5], '\0hold\0' .. string.format('%d', du) ..
      '\0' .. ARGV[3] .. '\0' .. string.format('%d', cu) .. '\0' ..
      string.format('%d', since), 'PX',
      string.format('%d', math.max(du, cu) - now))
  end
end
return {asked, left + foreign, pttl, foreign, since, later}
