-- luacheck's settings for the server scripts (src/lua/).  `make lint`
-- checks them twice (tools/lint.sh): as the server runs them, assembled
-- by tools/luagen.sh with their fragments; and each file alone
-- (tools/luagen.sh check), where a script's KEYS and ARGV names, the
-- functions of the fragments it includes and the {{PROTO_...}} numbers
-- are given as read-only globals, and a fragment's own functions may go
-- unused (its includers call them).  Redis runs the scripts in Lua 5.1
-- with its own globals.
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit",
  "struct" }
max_line_length = false
ignore = {
  -- An empty branch stands for "nothing to do in this case" before an
  -- elseif chain (stop.lua, inspect.lua).
  "542",
}
