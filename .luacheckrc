-- luacheck's settings for the server scripts (src/lua/), which `make
-- lint` checks as the server runs them: assembled by tools/luagen.sh,
-- fragments included.  Redis runs them in Lua 5.1 with its own globals.
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit",
  "struct" }
max_line_length = false
ignore = {
  -- The shared fragments define what their includers may not all use:
  -- lib/hold_parse.lua's claim (cl), read by lib/hold.lua but set before
  -- the branch that may overwrite it, and its since (cs), unused by
  -- inspect.lua; lib/holders.lua's prune(), unused by sh_renew.lua.
  "311/cl", "211/cs", "211/prune",
  -- lib/token_holds.lua's stop, which once_mark.lua and release_key.lua
  -- do not need (a success of a re-entrant run is recorded whether or
  -- not its holder was asked to stop since; a release removes the mark
  -- with K).
  "231/stop",
  -- lib/now.lua, lib/grant.lua and lib/failover_guard.lua each read the
  -- server's clock into their own t and now, in scripts that may have
  -- read it before (a later call sees a later time).
  "411/t", "421/t", "411/now", "421/now",
  -- An empty branch stands for "nothing to do in this case" before an
  -- elseif chain (stop.lua, inspect.lua).
  "542",
}
