-- Release if token holds the lock (lib/release_body.lua, keep
-- keep_ms).
--
--@keys K meta wake waiting hmeta
--@argv token keep_ms
-- ARGV: token, then keep ms (--min-hold) only when the lock is kept.
-- Returns 1 released, 2 left to expire, 0 held by another token, -2
-- held shared, -1 free.
local v = redis.pcall('GET', K)
-- The usual release, inline: token holds K, unmarked, and no --min-hold
-- keeps it; K and the record go, and one waiter is woken if any
-- waits.  The functions below, which the server would otherwise make
-- (a closure each) at every call, are needed only on the rarer paths.
if v == token and not keep_ms then
  redis.call('DEL', K, meta)
  if redis.call('EXISTS', waiting) == 0 then return 1 end
  -- Someone waits and no shared request was turned away for a writer
  -- (hmeta has no rwait): one wake-up, as lib/wake.lua's wake_one()
  -- pushes it, inline.
  if not redis.call('HGET', hmeta, 'rwait') then
    if redis.call('RPUSH', wake, '1') > 1 then
      redis.call('LTRIM', wake, 0, 0)
    end
    redis.call('PEXPIRE', wake, '{{PROTO_WAKE_LINGER_MS}}')
    return 1
  end
end
--@include lib/token_holds.lua
--@include lib/release_body.lua
if v == token and not keep_ms then
  return release_wake(K, wake, waiting, hmeta, '')
end
local no, stop = token_holds(K, token)
if no then return no end
return release_body(K, meta, wake, waiting, hmeta, keep_ms, stop)
