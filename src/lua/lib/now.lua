-- server_ms(): the server's clock in ms, and its TIME reply (whose
-- microseconds seed a fencing counter).  Every time in the scripts is
-- the server's, so that a holder that died stops counting when its
-- lease ends on the server, whatever the clients' clocks say.
local function server_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000), t
end
