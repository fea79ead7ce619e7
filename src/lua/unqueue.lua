-- A waiter gives up (lock_unqueue()): it leaves the waiting writers
-- (xwait) and the waiters (waiting), so that nothing of it is left and
-- shared requests need not wait for its entry to lapse; the last
-- waiter out also takes the note that readers wait (rwait in hmeta,
-- sh_acquire.lua), which only a waiter can have left.
--
--@keys xwait waiting hmeta
--@argv id
-- ARGV: the waiter's id.
-- Returns 1.
redis.call('ZREM', xwait, id)
if redis.call('ZREM', waiting, id) == 1 and
    redis.call('EXISTS', waiting) == 0 then
  redis.call('HDEL', hmeta, 'rwait')
end
return 1
