-- release_body(k, mk, wk, wq, hm, keep, stop): the rest of a
-- release once lib/token_holds.lua passed (stop: the holder was marked
-- to stop): delete K (k) with its record (mk), and wake one waiter if
-- any waits (the waiters wq; the wake list wk lingers
-- PROTO_WAKE_LINGER_MS);
-- given keep (--min-hold: ms, always more than 0) leave both to expire
-- that much later instead.  When shared requests were turned away for
-- waiting writers (the shared holders' hash hm: its rwait, see
-- sh_acquire.lua), the readers get the next turn: K is left held shared
-- by nobody for PROTO_READERS_TURN_MS, which writers cannot take and
-- readers may, waiting writers or not (hm's turn), and every waiter is
-- woken.  A
-- holder that redlock stop marked may carry a --replace claim in its
-- record's tenth field: the record then becomes the hold marker with
-- that claim, which stands until its end (the eleventh field:
-- PROTO_CLAIM_MS after the claimant last asserted it; PROTO_CLAIM_MS
-- from now in a record without one), so that the replacing redlock,
-- woken by lock_notify_stopped(), gets NAME before anyone woken here
-- (no readers' turn then).  Returns the script's reply: 1 released, 2
-- left to expire.
--
-- release_wake(k, wk, wq, hm, claim): its end, once K (k) is deleted
-- and someone waits (wq exists), for release.lua's usual
-- path too, which deletes K itself: wake one waiter, or every waiter
-- when the readers get the next turn (claim '': no --replace claim
-- stands).  Returns 1 (released).
--@include lib/now.lua
--@include lib/holder_record.lua
local function release_wake(k, wk, wq, hm, claim)
  local now = server_ms()
  local n = 1
  if claim == '' and
      tonumber(redis.call('HGET', hm, 'rwait') or '0') > now then
    local turn = '{{PROTO_READERS_TURN_MS}}'
    redis.call('SET', k, '\0shared', 'PX', turn)
    redis.call('HSET', hm, 'turn', string.format('%d', now + turn))
    redis.call('PEXPIRE', hm, turn)
    n = math.min(redis.call('ZCARD', wq), 1000)
    redis.call('DEL', wk)
  end
  local ones = {}
  for i = 1, n do ones[i] = '1' end
  if redis.call('RPUSH', wk, unpack(ones)) > n then
    redis.call('LTRIM', wk, 0, n - 1)
  end
  redis.call('PEXPIRE', wk, '{{PROTO_WAKE_LINGER_MS}}')
  return 1
end
local function release_body(k, mk, wk, wq, hm, keep, stop)
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
  if redis.call('EXISTS', wq) == 0 then return 1 end
  return release_wake(k, wk, wq, hm, claim)
end
