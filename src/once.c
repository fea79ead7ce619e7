/*
 * once.c - --once-per PERIOD (SCHEDULING in redlock-scheduling(7)): at most one successful
 * run of NAME per period of the server's clock.  A run that gets the
 * lock first asks whether NAME's last success falls in the current
 * period (src/lua/once.lua), and if so gives the lock back and skips its
 * command.  The release after a successful run records it
 * (src/lua/release_done.lua) for the period in which the run got the
 * lock, however long the command ran: the client says how long ago it
 * found the period open, on its monotonic clock, and each server takes
 * that from its own clock (src/lua/lib/done_mark.lua).  A re-entrant
 * run, whose lock is its enclosing redlock's to release, records its
 * success without releasing (src/lua/once_mark.lua).  Periods are
 * aligned to the epoch of the server's clock, so every host agrees on
 * them whatever its own clock says.
 *
 * Quorum: the mark is written on every server the release reaches, a
 * majority for a release that counts; any later majority shares a
 * server with it, and one server that says "done this period" is
 * enough to skip.  (Its period is that server's; quorum servers whose
 * clocks differ by a good part of a period disagree near a boundary,
 * which can only skip a run, never allow a second.)
 */
#include "once.h"

#include <stdio.h>

#include "clock.h"
#include "exit.h"
#include "hold.h"
#include "lease.h"
#include "log.h"
#include "print.h"
#include "quorum.h"
#include "scripts.h"

/*
 * Did NAME succeed in the current period on any server?  Returns 1 (with
 * the last success in *when, server ms), 0, or -1 when fewer than a
 * quorum answered (o->err says why).
 */
static int
once_done(const struct lock *l, int64_t period, long long *when,
    struct lock_outcome *o)
{
	struct conn_req r[l->n];
	struct args a;
	int answered = 0, done = 0;

	args_script(&a, SCRIPT_ONCE, &l->k);
	args_put_num(&a, ARG_ONCE_PERIOD, period);
	o->err[0] = '\0';
	lock_round(l, &a, r, clock_ms() + LEASE_VERB_TIMEOUT_MS, o);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = quorum_array(&l->conns[i], &r[i],
		    NREPLY_ONCE, o->err, sizeof(o->err));

		if (p == NULL)
			continue;
		answered++;
		if (reply_int(p, REPLY_ONCE_YES) == 1) {
			done = 1;
			*when = reply_int(p, REPLY_ONCE_LAST);
		}
	}
	conn_req_clear(r, l->n);
	return answered < l->quorum ? -1 : done;
}

/*
 * Right after the lock was taken (grant g; held: by us, not
 * re-entrant): skip the command when NAME already succeeded this
 * period.  Returns the exit status to end with (the conflict status, or
 * 69 when the servers cannot say) after giving the lock back, or -1 to
 * run the command, with *since the clock_ms() at which the period was
 * found open (for the release, or once_mark(), to record a success in).
 */
int
once_skip(const struct config *c, const struct lock *l, const struct grant *g,
    int held, int64_t *since)
{
	struct lock_outcome o = { 0 }, ro = { 0 };
	long long when = 0;
	char t[32], m[160 + CONFIG_NAME_MAX];
	int done = once_done(l, c->once_per, &when, &o), others;

	/* The answer came after the server looked: a success recorded as
	 * this long ago is never in an earlier period than the one found
	 * open. */
	*since = clock_ms();
	if (done == 0)
		return -1;
	if (held)
		lock_release(l, &(struct release){ .token = g->token }, &others,
		    &ro);
	if (done < 0) {
		log_error("%s", o.err[0] ? o.err : "no quorum of servers");
		return EXIT_UNAVAILABLE;
	}
	print_time(when, t, sizeof(t));
	snprintf(m, sizeof(m), "lock '%s': already run successfully in this "
	    "period of --once-per (by the run that got the lock at %s); "
	    "skipping the command", c->name, t);
	log_info("%s", m);
	return c->conflict_exit;
}

/*
 * A re-entrant run (its enclosing redlock holds the lock, g->token)
 * succeeded: record it for the period once_skip() found open at since,
 * as the release of a run of its own would.  Returns how many servers
 * recorded it; fewer than a quorum is said on stderr (the period may
 * stay open).
 */
int
once_mark(const struct config *c, const struct lock *l, const struct grant *g,
    int64_t since)
{
	struct conn_req r[l->n];
	struct lock_outcome o = { 0 };
	struct args a;
	int ok = 0;

	args_script(&a, SCRIPT_ONCE_MARK, &l->k);
	args_put_str(&a, ARG_ONCE_MARK_TOKEN, g->token);
	args_put_num(&a, ARG_ONCE_MARK_PERIOD, c->once_per);
	args_put_num(&a, ARG_ONCE_MARK_AGE, clock_ms() - since);
	lock_round(l, &a, r, clock_ms() + LEASE_VERB_TIMEOUT_MS, &o);
	for (int i = 0; i < l->n; i++)
		ok += r[i].reply != NULL &&
		    r[i].reply->type == REDIS_REPLY_INTEGER &&
		    r[i].reply->integer == TOKEN_DONE;
	conn_req_clear(r, l->n);
	if (ok < l->quorum)
		log_error("could not record the success of lock '%s' for "
		    "--once-per%s%s: this period stays open", c->name,
		    o.err[0] ? ": " : "", o.err);
	return ok;
}
