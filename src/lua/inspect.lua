-- What an operator sees of a lock, whoever holds it (status, list,
-- break): read it (remove == '1': and remove it).
--
--@keys K meta wake holders hmeta waiting
--@reply token pttl fields holders hmeta
--@argv remove wake_linger
-- ARGV: remove ('1' or '0'), wake linger ms.
-- Returns {} when there is no lock; held exclusively {token, pttl,
-- {record field, value...}} (with stop, token when redlock stop marked
-- it); held shared {marker, pttl, {}, {token, pttl...}, {hmeta field,
-- value...}} with the live holders only; a key of another type {type,
-- pttl, {}, 'type'}.  What scheduling adds (SCHEDULING in redlock-scheduling(7)) comes as
-- more field, value pairs of the third element: waiters and standbys
-- (the live waiters, and those of them whose id starts with 's', a
-- --respawn's; not those whose id has a 'q' second, which are in the
-- --fair queue and counted there: status.c); for a free lock, in a
-- reply of that one element, also delay (ms left of a lost holder's
-- --lock-delay) with now (the server's ms), and claim (ms left of a
-- --replace claim).  Removing a free lock removes what holds it back,
-- and wakes a waiter if one waits.
--@include lib/holder_record.lua
--@include lib/hold_parse.lua
--@include lib/unmark.lua
--@include lib/now.lua
--@include lib/wake.lua
local now = server_ms()
local w, sb, sched = 0, 0, {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', waiting,
    '(' .. string.format('%d', now), '+inf')) do
  -- 115: 's', 113: 'q'
  if string.byte(id, 2) ~= 113 then
    w = w + 1
    if string.byte(id) == 115 then sb = sb + 1 end
  end
end
if w > 0 then
  sched = {'waiters', string.format('%d', w), 'standbys',
    string.format('%d', sb)}
end
local ty = redis.call('TYPE', K)['ok']
if ty == 'none' then
  local m = redis.call('GET', meta)
  if m then
    local du, cl, cu = hold_parse(m, meta, now)
    if du > now then
      for _, x in ipairs({'delay', du - now, 'now', now}) do
        if type(x) == 'number' then x = string.format('%d', x) end
        table.insert(sched, x)
      end
    end
    if cl ~= '' and cu > now then
      table.insert(sched, 'claim')
      table.insert(sched, string.format('%d', cu - now))
    end
    if remove == '1' and math.max(du, cu) > now then
      redis.call('DEL', meta)
      if w > 0 then wake_one(wake, wake_linger) end
    end
  end
  if #sched > 0 then return {sched} end
  return {}
end
local v, stop, r
if ty ~= 'string' then
  r = {ty, redis.call('PTTL', K), {}, 'type'}
else
  v, stop = unmark(redis.call('GET', K))
end
if r then
  -- A key of another type: r is the reply.
elseif v == '\0shared' then
  local h = redis.call('ZRANGEBYSCORE', holders,
    '(' .. string.format('%d', now), '+inf', 'WITHSCORES')
  for i = 2, #h, 2 do h[i] = tonumber(h[i]) - now end
  r = {v, redis.call('PTTL', K), {}, h,
    redis.call('HGETALL', hmeta)}
else
  r = {v, redis.call('PTTL', K),
    holder_hgetall(redis.call('GET', meta), v)}
  if stop then table.insert(r[3], 'stop'); table.insert(r[3], v) end
end
for _, x in ipairs(sched) do table.insert(r[3], x) end
if remove == '1' then
  redis.call('DEL', K, meta, holders, hmeta)
  wake_one(wake, wake_linger)
end
return r
