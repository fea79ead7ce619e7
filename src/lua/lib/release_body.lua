-- release_body(k, mk, wake, waiting, hmeta, keep, stop): the rest of a
-- release once lib/token_holds.lua passed (stop: the holder was marked
-- to stop): delete K (k) with its record (mk), and wake one waiter if
-- any waits (waiting; the wake list lingers PROTO_WAKE_LINGER_MS);
-- given keep (--min-hold: ms, always more than 0) leave both to expire
-- that much later instead.  When shared requests were turned away for
-- waiting writers (hmeta's rwait, see sh_acquire.lua), the readers get
-- the next turn: K is left held shared by nobody for
-- PROTO_READERS_TURN_MS, which writers cannot take and readers may,
-- waiting writers or not (hmeta's turn), and every waiter is woken.  A
-- holder that redlock stop marked may carry a --replace claim in its
-- record's tenth field: the record then becomes the hold marker with
-- that claim, which stands until its end (the eleventh field:
-- PROTO_CLAIM_MS after the claimant last asserted it; PROTO_CLAIM_MS
-- from now in a record without one), so that the replacing redlock,
-- woken by lock_notify_stopped(), gets NAME before anyone woken here
-- (no readers' turn then).  Returns the script's reply: 1 released, 2
-- left to expire.
--
-- release_wake(k, wake, waiting, hmeta, claim): its end, once K (k) is
-- deleted and someone waits (waiting exists), for release.lua's usual
-- path too, which deletes K itself: wake one waiter, or every waiter
-- when the readers get the next turn (claim '': no --replace claim
-- stands).  Returns 1 (released).
--@include lib/now.lua
--@include lib/holder_record.lua
local function release_wake(k, wake, waiting, hmeta, claim)
  local now = server_ms()
  local n = 1
  if claim == '' and
      tonumber(redis.call('HGET', hmeta, 'rwait') or '0') > now then
    local turn = '{{PROTO_READERS_TURN_MS}}'
    redis.call('SET', k, '\0shared', 'PX', turn)
    redis.call('HSET', hmeta, 'turn', string.format('%d', now + turn))
    redis.call('PEXPIRE', hmeta, turn)
    n = math.min(redis.call('ZCARD', waiting), 1000)
    redis.call('DEL', wake)
  end
  local ones = {}
  for i = 1, n do ones[i] = '1' end
  if redis.call('RPUSH', wake, unpack(ones)) > n then
    redis.call('LTRIM', wake, 0, n - 1)
  end
  redis.call('PEXPIRE', wake, '{{PROTO_WAKE_LINGER_MS}}')
  return 1
end
local function release_body(k, mk, wake, waiting, hmeta, keep, stop)
  if keep then
    redis.call('PEXPIRE', k, keep)
    redis.call('PEXPIRE', mk, keep)
    return 2
  end
  local claim = ''
  if stop then
    local g = holder_fields(redis.call('GET', mk))
    local ms = server_ms()
    local cu = tonumber(g[11]) or ms + {{PROTO_CLAIM_MS}}
    if g[10] ~= '' and cu > ms then
      claim = g[10]
      redis.call('SET', mk, holder_marker(0, claim, cu, g[12]), 'PX',
        string.format('%d', cu - ms))
    end
  end
  if claim ~= '' then
    redis.call('DEL', k)
  else
    redis.call('DEL', k, mk)
  end
  if redis.call('EXISTS', waiting) == 0 then return 1 end
  return release_wake(k, wake, waiting, hmeta, claim)
end
