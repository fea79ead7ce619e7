-- A waiter gives up (lock_unqueue()): it leaves the waiting writers
-- (xwait) and the waiters (waiting), so that nothing of it is left and
-- shared requests need not wait for its entry to lapse; the last
-- waiter out also takes the note that readers wait (rwait in hmeta,
-- sh_acquire.lua), which only a waiter can have left.  A --replace
-- waiter (claim '1') also takes back its claim on NAME, from the
-- holder's record or the hold marker (meta; see "Held back" in
-- src/lua/README), so that nobody is held back by a claimant that gave
-- up; a lost holder's delay in the marker stays.
--
--@keys xwait waiting hmeta meta
--@argv id claim
-- ARGV: the waiter's id, then '1' for a --replace waiter.
-- Returns 1.
--@include lib/now.lua
--@include lib/holder_record.lua
--@include lib/hold_parse.lua
redis.call('ZREM', xwait, id)
if redis.call('ZREM', waiting, id) == 1 and
    redis.call('EXISTS', waiting) == 0 then
  redis.call('HDEL', hmeta, 'rwait')
end
local m = claim == '1' and redis.call('GET', meta)
if not m then return 1 end
local now = server_ms()
local du, cl, _, _, lost = hold_parse(m, meta, now)
if cl ~= id then return 1 end
if lost then
  local f = holder_fields(m)
  f[10], f[11], f[12] = '', '', ''
  redis.call('SET', meta, holder_join(f), 'KEEPTTL')
elseif du > now then
  redis.call('SET', meta, holder_marker(du, '', 0, ''), 'PX',
    string.format('%d', du - now))
else
  redis.call('DEL', meta)
end
return 1
