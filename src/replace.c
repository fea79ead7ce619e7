/*
 * replace.c - --replace (SCHEDULING in redlock-scheduling(7)): a waiter that asks the
 * holders of NAME to stop, as redlock stop does (stop.c), and claims
 * NAME so that it gets it before any other waiter once they have let
 * go.  wait.c calls replace_claim() after every busy attempt of a wait
 * that claims (struct lock_waiter: claim, and the claim's state), which
 * asks whoever holds NAME then and asserts the claim again; the servers
 * keep the claim in the holder's record (proto.c, "Held back"), where
 * it outlives the holder's release or expiry, until PROTO_CLAIM_MS
 * after its last assertion.  A
 * holder that redlock cannot ask (redis-py, ...) is waited for as any
 * waiter would, the claim still standing.
 *
 * Nothing here grants anything: the command starts only once the lock
 * is ours, that is once the old holder released it (after its whole
 * process tree was gone) or its lease ran out (its guard had killed the
 * tree by then).
 *
 * Two replacements: the later one wins.  A claim carries its since, the
 * server's ms at its first assertion, and another claim is taken over
 * only when it lapsed or is older; a --replace that finds a later one's
 * claim, or the holder that got NAME through it, asks nobody to stop and
 * waits from then on as any waiter would (stop.lua).
 *
 * Quorum: the claim is asserted on every server; another waiter needs a
 * majority of grants, and every majority has a server where the claim
 * of a round that reached a majority stands.  Its since is the smallest
 * that the servers of the first round that answered gave.
 */
#include "replace.h"

#include <stdio.h>

#include "clock.h"
#include "hold.h"
#include "log.h"
#include "quorum.h"
#include "scripts.h"

/* The stop request outlives the leases of the holders asked by this
 * much (as redlock stop's: they see it at a renewal before then). */
#define REPLACE_STOP_MARGIN_MS 5000

/* How long one round may wait for the servers: short, it is between
 * two attempts of a waiter. */
#define REPLACE_ROUND_MS 1000

/* Ask the holders of NAME to stop and claim it for w's id (set by the
 * busy attempt before); the claim's state is w's (its since, what -v
 * said, and whether it still claims).  Best effort: a round that fails
 * is made again after the next attempt. */
void
replace_claim(const struct lock *l, struct lock_waiter *w)
{
	struct conn_req r[l->n];
	struct args a;
	long long asked = 0, since = 0;
	int foreign = 0, later = 0;

	args_script(&a, SCRIPT_STOP, &l->k);
	args_put_str(&a, ARG_STOP_RECORD, "1");
	args_put_num(&a, ARG_STOP_MARGIN_MS, REPLACE_STOP_MARGIN_MS);
	args_put(&a, ARG_STOP_WAITER, w->id, LOCK_TOKEN_LEN);
	args_put_num(&a, ARG_STOP_CLAIM_MS, PROTO_CLAIM_MS);
	args_put_num(&a, ARG_STOP_SINCE_MS, w->claim_since);
	lock_round(l, &a, r, clock_ms() + REPLACE_ROUND_MS, NULL);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY ||
		    p->elements != NREPLY_STOP)
			continue;
		if (reply_int(p, REPLY_STOP_ASKED) > asked)
			asked = reply_int(p, REPLY_STOP_ASKED);
		foreign |= reply_int(p, REPLY_STOP_FOREIGN) != 0;
		later |= reply_int(p, REPLY_STOP_LATER) != 0;
		if (reply_int(p, REPLY_STOP_SINCE) > 0 && (since == 0 ||
		    reply_int(p, REPLY_STOP_SINCE) < since))
			since = reply_int(p, REPLY_STOP_SINCE);
	}
	conn_req_clear(r, l->n);
	if (w->claim_since == 0)
		w->claim_since = since;
	if (later) {
		log_info("--replace: a later --replace claimed lock '%s': "
		    "waiting for it as any waiter", l->name);
		w->claim = 0;
		return;
	}
	/* Said once: the request and the claim are made every round. */
	if (asked > 0 && !(w->claim_told & 1))
		log_info("--replace: asked %lld holder%s of lock '%s' to stop",
		    asked, asked == 1 ? "" : "s", l->name);
	else if (foreign && !(w->claim_told & 2))
		log_info("--replace: lock '%s' is held by another client, which "
		    "cannot be asked to stop: waiting for its release", l->name);
	w->claim_told |= (asked > 0) | foreign << 1;
}
