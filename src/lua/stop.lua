-- redlock stop.  Only redlock holders are asked: an exclusive value
-- without redlock's record beside it (meta: fence, then the token) is
-- another client's (redis-py, ...), left exactly as it is, and counted
-- in `left` until it goes, as is a key that holds no string.  Then
-- drops from the set the tokens that no longer hold the lock and keeps
-- the set until margin ms after K's expiry.
--
--@keys K holders stop hmeta meta
--@reply asked left pttl foreign since later
--@argv record margin_ms waiter claim_ms since_ms
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
-- With waiter, a waiter id, and claim_ms (--replace), and NAME
-- held, or free but held back by a claim, the waiter's claim on NAME
-- goes to the holder's record, or to the hold marker, and stands until
-- claim_ms from now (see "Held back" in src/lua/README).  A claim of
-- another waiter is taken over only when it lapsed or is older (its
-- since is smaller, or equal and its id smaller): the later replacement
-- wins.
--@include lib/now.lua
--@include lib/unmark.lua
--@include lib/holder_record.lua
local now = server_ms()
local v, marked, foreign = false, false, 0
local ty = redis.call('TYPE', K)['ok']
if ty == 'string' then
  v, marked = unmark(redis.call('GET', K))
  if v ~= '\0shared' and
      not holder_owned(redis.call('GET', meta) or '', v) then
    foreign = 1
  end
elseif ty ~= 'none' then
  v, foreign = '\0other', 1
end
-- --replace: the standing claim (see "Held back" in src/lua/README).
local replace = waiter ~= nil
local m, mf, rec, since, later = false, holder_fields(nil), false, 0, 0
if replace then
  since = tonumber(since_ms) or 0
  if since <= 0 then since = now end
  m = redis.call('GET', meta)
  if m then
    mf = holder_fields(m)
    rec = string.byte(m) ~= 0
    local cl, cs = mf[4], tonumber(mf[6])
    if rec then cl, cs = mf[10], tonumber(mf[12]) end
    local cu = tonumber(rec and mf[11] or mf[5]) or 0
    if cl ~= waiter and cs and (cs > since or cs == since and
        cl > waiter) and (cl == '' and rec or cu > now) then
      later = 1
    end
  end
end
local asked = 0
if record ~= '1' or foreign == 1 or later == 1 then
  -- Nobody to ask.
elseif v and v ~= '\0shared' then
  redis.call('SADD', stop, v)
  if not marked then
    redis.call('SETRANGE', K, #v, '\0stop')
  end
  asked = 1
elseif v then
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', holders,
      '(' .. string.format('%d', now), '+inf')) do
    redis.call('SADD', stop, g)
    redis.call('HSET', hmeta, g .. ':stop', '1')
    asked = asked + 1
  end
end
for _, g in ipairs(redis.call('SMEMBERS', stop)) do
  local holds = g == v
  if not holds and v == '\0shared' then
    local s = redis.call('ZSCORE', holders, g)
    holds = s and tonumber(s) > now
  end
  if not holds then redis.call('SREM', stop, g) end
end
local left = redis.call('SCARD', stop)
local pttl = -2
if v then pttl = redis.call('PTTL', K) end
if left > 0 then
  local ms = tonumber(margin_ms)
  if pttl > 0 then ms = ms + pttl end
  redis.call('PEXPIRE', stop, ms)
end
-- --replace: the claim, until claim_ms from now, and past a lost
-- holder's delay (its claimant sleeps through it without asserting).
local cl = rec and mf[10] or mf[4]
if replace and later == 0 and (v or m and cl ~= '') then
  local cu = now + claim_ms
  if v and rec then
    mf[10], mf[11], mf[12] = waiter, string.format('%d', cu),
      string.format('%d', since)
    redis.call('SET', meta, holder_join(mf), 'KEEPTTL')
    if (tonumber(mf[9]) or 0) == 0 and
        redis.call('PTTL', meta) < tonumber(claim_ms) then
      redis.call('PEXPIRE', meta, claim_ms)
    end
  else
    local du = tonumber(mf[3]) or 0
    if rec then
      du = 0
      if (tonumber(mf[9]) or 0) > 0 then
        du = now + redis.call('PTTL', meta)
      end
    end
    if du > 0 then cu = math.max(cu, du + claim_ms) end
    redis.call('SET', meta, holder_marker(du, waiter, cu, since), 'PX',
      string.format('%d', math.max(du, cu) - now))
  end
end
return {asked, left + foreign, pttl, foreign, since, later}
