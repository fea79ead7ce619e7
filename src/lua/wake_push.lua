-- Wake a waiter: push one wake-up to the list wake (the wake list, or
-- xwake), lingering linger ms.  A release's last step while a Redis
-- Cluster migrates the slot (see release_key.lua), where whether
-- anyone waits is another key's: it pushes whether or not, which costs
-- a waiter that comes later one early attempt.
--
--@keys wake
--@argv linger
-- ARGV: linger ms.
-- Returns 1.
--@include lib/wake.lua
wake_one(wake, linger)
return 1
