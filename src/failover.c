/*
 * failover.c - the failover guard (HIGH AVAILABILITY in redlock-protocol(7)), client side: asking
 * for it, and waiting while a server holds grants back.  The server
 * side is a block of the acquire script in proto.c.
 *
 * Replication is asynchronous: a replica promoted by Sentinel may lack
 * a lock its old master granted, and would grant it again while the
 * first holder's command still runs.  So on a Sentinel URL every grant
 * also keeps a record, per key prefix, of the Sentinel configuration
 * epoch of the master that granted, its replication id and the longest
 * TTL granted; a master whose epoch (as the sentinel that named its
 * address gives it: sentinel.c, passed by route.c to the script's epoch
 * argument) is above the recorded one, or whose replication id is not
 * the recorded one, has taken over since the last grant it knows of,
 * and grants nothing under the prefix until one recorded TTL (at least)
 * after it first noticed.
 *
 * Why no two holders overlap.  Let H hold a lock granted by master M,
 * with TTL t, renewed last by a request sent at r (H's clock), and let
 * replica R take over.  H's command is dead by r + t minus drift and a
 * safety margin (lease.c), whatever happens.
 *  1. R notices: Sentinel raises the master's configuration epoch with
 *     every promotion (and keeps it on disk) before it names R, and
 *     redlock asks the epoch after the address (sentinel.c), so never
 *     an older one than went with R's address; R's record, if any, came from M by
 *     replication and holds M's epoch, lower.  With no record at all,
 *     any epoch above 0 counts: R was promoted at some time, and may
 *     have lost M's grants whole (a replica whose first sync never
 *     finished holds nothing of M's).  A record from a redlock that
 *     kept no epoch counts as epoch 0.  The replication id is a second
 *     signal, for a promotion the sentinels did not make or epochs that
 *     start again (new sentinels): Redis gives a promoted replica a new
 *     id, while the record names M's; a server with no record that
 *     Redis says was once a replica (master_replid2 set) counts too.
 *     The id alone is not enough: Redis starts a master's replication
 *     history afresh when it gets its first replica (new id,
 *     master_replid2 zeros), so a promoted replica that never synced,
 *     once the old master rejoins as its replica, looks new by it.
 *     Only a server with no record, epoch 0 and no past as a replica,
 *     a new one or one restarted without persistence before any
 *     failover, is not held back (redlock-protocol(7), FAILURE MODEL).
 *  2. R notices after r: H renews on M; R becomes master only after M
 *     stopped answering the sentinels, and its first acquire script as
 *     master runs after that.  (A partition that leaves M serving H is
 *     excluded by min-replicas-to-write on M with min-replicas-max-lag
 *     below down-after-milliseconds: M refuses renewals before R can be
 *     promoted.)
 *  3. R grants nothing until notice + T, T the larger of the longest
 *     TTL its record holds and the TTL asked for, so T >= t whenever M's
 *     record of t had reached R, or the waiter asks with H's TTL.  Then
 *     notice + T > r + t: H's command is gone first.  The hold is timed
 *     by R's clock (TIME), the lease by H's; the drift allowance covers
 *     their rates, as in Redlock.
 * A renewal of H that reaches R finds its key (H goes on; nobody else
 * can take it) or not (H stops at once, earlier than in 3).
 *
 * Cost: on Sentinel URLs only, INFO replication, TIME and HMGET in each
 * acquire attempt (bench/results.md), and the epoch comes with the
 * address the sentinels are asked for anyway; nothing on plain URLs,
 * nothing in renewals.
 */
#include "failover.h"

#include <string.h>

#include "log.h"
#include "scripts.h"

/*
 * How long a waiter on a Sentinel URL keeps trying while no master can
 * be reached, beyond the usual few attempts: time for the sentinels to
 * see the master down (down-after-milliseconds, 30 s by default), elect
 * a leader and promote a replica.  A waiter then rides out a failover
 * instead of giving up with 69 in the middle of it.
 */
#define FAILOVER_PATIENCE_MS 60000

/* Does l reach any server through Sentinel (and so need the guard)? */
int
failover_guarded(const struct lock *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->conns[i].url->kind == URL_SENTINEL)
			return 1;
	return 0;
}

/*
 * The guard's arguments of acquire_any.lua and sh_acquire.lua, at ARGV
 * positions pos and epos: the length of the key prefix when any of l's
 * servers is reached through Sentinel, else "" (no guard); and the
 * Sentinel epoch of each server's master, which route.c puts in for
 * each Sentinel connection as it sends ("" on the others).
 */
void
failover_arg(struct args *a, int pos, int epos, const struct lock *l)
{
	args_put_str(a, epos, "");
	if (failover_guarded(l)) {
		args_put_num(a, pos, (long long)(l->k.keylen - l->namelen));
		a->epoch_at = a->base + epos;
	} else {
		args_put_str(a, pos, "");
	}
}

/* The extra time a waiter gives unreachable servers (wait.c): see
 * FAILOVER_PATIENCE_MS; 0 without Sentinel. */
int64_t
failover_patience(const struct lock *l)
{
	return failover_guarded(l) ? FAILOVER_PATIENCE_MS : 0;
}

/*
 * Is p server c's "held back" answer ({3, ms left, ms since})?  Then
 * o->hold_ms becomes the shortest hold among the servers, -v says why,
 * and 1 is returned.
 */
int
failover_held_back(const struct conn *c, const redisReply *p,
    struct lock_outcome *o)
{
	long long left, since;

	if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements != 3 ||
	    reply_int(p, 0) != ACQUIRE_FAILOVER_HELD)
		return 0;
	left = reply_int(p, 1);
	since = reply_int(p, 2);
	if (left < 1)
		left = 1;
	if (o->hold_ms <= 0 || left < o->hold_ms)
		o->hold_ms = left;
	log_info("%s failed over %lld.%lld s ago: no grants for %lld.%lld s",
	    c->name, since / 1000, since % 1000 / 100, left / 1000,
	    left % 1000 / 100);
	return 1;
}
