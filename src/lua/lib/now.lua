-- The server's clock in ms, as `now` (and its TIME reply as `t`).  Every
-- time in the scripts is the server's, so that a holder that died stops
-- counting when its lease ends on the server, whatever the clients'
-- clocks say.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
