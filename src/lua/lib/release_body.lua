-- The rest of a release once lib/token_holds.lua passed: delete K with
-- its record, and wake one waiter if any waits (KEYS[4]; the wake list
-- lingers PROTO_WAKE_LINGER_MS); given keep (--min-hold: ms, always
-- more than 0) leave both to expire that much later instead.  When
-- shared requests were turned away for waiting writers (hmeta's rwait,
-- see sh_acquire.lua), the readers get the next turn: K is left held
-- shared by nobody for PROTO_READERS_TURN_MS, which writers cannot take
-- and readers may, waiting writers or not (hmeta's turn), and every
-- waiter is woken.  A holder that redlock stop marked may carry a
-- --replace claim in its record's tenth field: the record then becomes
-- the hold marker with that claim, which stands until its end (the
-- eleventh field: PROTO_CLAIM_MS after the claimant last asserted it;
-- PROTO_CLAIM_MS from now in a record without one), so that
-- the replacing redlock, woken by lock_notify_stopped(), gets NAME
-- before anyone woken here (no readers' turn then).  KEYS: K, meta,
-- wake, waiting, hmeta.  Returns 1 released, 2 left to expire.
--
-- Parameters: keep (an expression).
if {{keep}} then
  redis.call('PEXPIRE', KEYS[1], {{keep}})
  redis.call('PEXPIRE', KEYS[2], {{keep}})
  return 2
end
local claim = ''
if stop then
  local m, g, pos = redis.call('GET', KEYS[2]) or '', {}, 1
  for i = 1, 12 do
    local e = string.find(m, '\0', pos, true) or #m + 1
    g[i] = string.sub(m, pos, e - 1)
    pos = e + 1
  end
  local t = redis.call('TIME')
  local ms = t[1] * 1000 + math.floor(t[2] / 1000)
  local cu = tonumber(g[11]) or ms + {{PROTO_CLAIM_MS}}
  if g[10] ~= '' and cu > ms then
    claim = g[10]
    redis.call('SET', KEYS[2], '\0hold\0' .. '0' .. '\0' .. claim ..
      '\0' .. string.format('%d', cu) .. '\0' .. g[12], 'PX',
      string.format('%d', cu - ms))
  end
end
if claim ~= '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('DEL', KEYS[1], KEYS[2])
end
if redis.call('EXISTS', KEYS[4]) == 0 then return 1 end
--@include lib/now.lua
local n = 1
if claim == '' and
    tonumber(redis.call('HGET', KEYS[5], 'rwait') or '0') > now then
  local turn = '{{PROTO_READERS_TURN_MS}}'
  redis.call('SET', KEYS[1], '\0shared', 'PX', turn)
  redis.call('HSET', KEYS[5], 'turn', string.format('%d', now + turn))
  redis.call('PEXPIRE', KEYS[5], turn)
  n = math.min(redis.call('ZCARD', KEYS[4]), 1000)
  redis.call('DEL', KEYS[3])
end
local ones = {}
for i = 1, n do ones[i] = '1' end
if redis.call('RPUSH', KEYS[3], unpack(ones)) > n then
  redis.call('LTRIM', KEYS[3], 0, n - 1)
end
redis.call('PEXPIRE', KEYS[3], '{{PROTO_WAKE_LINGER_MS}}')
return 1
