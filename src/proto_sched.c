/*
 * proto_sched.c - what the servers keep for the scheduling options
 * (SPEC section 15), and the scripts of --once-per.  Nothing here does
 * I/O; the keys are described at the top of proto.c.
 *
 * Held back (--lock-delay, --replace).  What already outlives a lock is
 * its holder's record, so that is where NAME is held back while K is
 * free; every grant sets the record NX (LUA_GRANT, proto.c), so a
 * request whose K was free but whose record key is taken looks at it
 * (LUA_HOLD) and costs nothing more when there is none:
 *   - a holder with --lock-delay D records D as its record's ninth field
 *     and keeps the record exactly D longer than K (its grant and every
 *     renewal set both): when K expires without a release, the record
 *     left behind holds NAME back for D more, on the server's clock.  A
 *     release deletes the record with K: no delay.
 *   - a --replace asks the holders to stop (proto_stop_lua) and puts its
 *     waiter id in the holder's record as a tenth field, the claim, or,
 *     when no redlock record is there (another client, shared holders),
 *     in the hold marker; the stopped holder's release turns its record
 *     into the marker (LUA_RELEASE), so the claim outlives K whether K
 *     is released or expires, and holds back every request but the
 *     claimant's for PROTO_CLAIM_MS after the claimant last asserted it.
 *   - the hold marker, "\0hold\0" delay-until "\0" claim "\0"
 *     claim-until (server ms), replaces a lost holder's record at the
 *     first request that finds it holding anyone back, so that the
 *     delay keeps its end and the claim can outlast it.
 * Foreign clients (redis-py, ...) do not read it: they are not held back.
 */
#include "proto.h"

/*
 * --once-per: release_lua, after a successful run, which it records: the
 * server's clock in ms goes to KEYS[6] (done), which lives until the
 * end of the current period, ARGV[2] ms long and aligned to the epoch
 * (proto_once_lua reads it).  KEYS: K, meta, wake, waiting, hmeta,
 * done.  ARGV: token, period, keep (as release_lua's ARGV[2]).  Returns as
 * release_lua.
 */
const char proto_release_done_lua[] =
    LUA_TOKEN_HOLDS
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "redis.call('SET', KEYS[6], string.format('%d', now), 'PX',\n"
    "  string.format('%d', ARGV[2] - now % ARGV[2]))\n"
    LUA_RELEASE("ARGV[3]");

/*
 * --once-per: did NAME succeed in the current period of ARGV[1] ms
 * (aligned to the epoch in the server's clock)?  KEYS: done.  Returns
 * {1 yes or 0 no, the last success (server ms, 0 none), now}.
 */
const char proto_once_lua[] =
    "local d = tonumber(redis.call('GET', KEYS[1]) or '')\n"
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local p = tonumber(ARGV[1])\n"
    "if d and math.floor(d / p) == math.floor(now / p) then\n"
    "  return {1, d, now}\n"
    "end\n"
    "return {0, d or 0, now}\n";
