-- Forget holder token's metadata (hmeta): sh_release.lua's
-- step on its own, for a release while a Redis Cluster migrates the
-- slot (see sh_release_set.lua; the set released the token first).
--
--@keys hmeta
--@argv token
-- ARGV: token.
-- Returns 1.
--@include lib/holders.lua
holders_forget(hmeta, token)
return 1
