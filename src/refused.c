/*
 * refused.c - telling why the lock was not obtained, and the exit
 * status for it (redlock(1), EXIT STATUS): for the run form, acquire and stop.
 */
#include "refused.h"

#include <signal.h>
#include <stdio.h>

#include "exit.h"
#include "failover.h"
#include "inspect.h"
#include "log.h"
#include "sig.h"

/* The first signal waiting in the self-pipe, for the 128+N status. */
static int
pending_signal(void)
{
	int sig;

	while ((sig = sig_next()) >= 0)
		if (sig != SIG_EVENT && sig != SIGCHLD)
			return sig;
	return SIGTERM;
}

/* Held back by the failover guard (failover.c) rather than by a
 * lock-delay or a claim: the words for it in buf, as status would say
 * them; 0 when l reaches no server through Sentinel. */
static int
failover_words(const struct lock *l, const struct lock_outcome *o,
    char *buf, size_t len)
{
	if (!failover_guarded(l))
		return 0;
	snprintf(buf, len, "free, held back after a failover (%lld.%03lld s "
	    "left)", (long long)(o->hold_ms / 1000),
	    (long long)(o->hold_ms % 1000));
	return 1;
}

/* A shared request turned away with no holder's TTL among the answers:
 * is l free, so that what keeps it out is an exclusive request waiting
 * (sh_acquire.lua)?  Asks the servers. */
static int
free_but_writer_waits(const struct lock *l, const struct lock_outcome *o)
{
	struct lock_view v[l->n];
	struct lock_outcome io = { 0 };
	int yes;

	if (!l->policy.shared || o->busy_pttl >= 0 || o->hold_ms > 0)
		return 0;
	yes = inspect_lock(l, v, 0, &io) >= l->quorum &&
	    inspect_agreed(l, v) == NULL;
	inspect_views_free(v, l->n);
	return yes;
}

/* Report a conflict: with -E only under -v, since the caller tests the
 * status it chose. */
void
refused_conflict(const struct config *c, const char *msg)
{
	if (c->conflict_quiet)
		log_info("%s", msg);
	else
		log_error("%s", msg);
}

/*
 * Report why the lock l was not obtained and return the exit status for
 * it; interrupted by a signal, *die_by is that signal (nothing is left
 * in Redis then).  A lock that was free but held back is called what
 * status calls it (a lost holder's lock-delay, a --replace's claim),
 * not held by someone else.
 */
int
refused_report(const struct config *c, const struct lock *l,
    enum lock_result res, const struct lock_outcome *o, int *die_by)
{
	char m[256 + CONFIG_NAME_MAX], why[128];

	switch (res) {
	case LOCK_INTERRUPTED:
		*die_by = pending_signal();
		return EXIT_SIGNAL_BASE + *die_by;
	case LOCK_UNAVAILABLE:
		log_error("%s", o->err[0] ? o->err : "no quorum of servers");
		return EXIT_UNAVAILABLE;
	case LOCK_SELF_SHARED:
		snprintf(m, sizeof(m), "lock '%s' is held shared by an "
		    "enclosing redlock: an exclusive request would wait for "
		    "itself", c->name);
		refused_conflict(c, m);
		return c->conflict_exit;
	case LOCK_BUSY:
		/* Only held back (no holder's TTL among the answers): say
		 * by what. */
		if (o->hold_ms > 0 && o->busy_pttl < 0 &&
		    (inspect_held_back(l, why, sizeof(why)) ||
		    failover_words(l, o, why, sizeof(why))))
			snprintf(m, sizeof(m), c->wait == 0 ? "lock '%s' is %s" :
			    "timed out waiting for lock '%s' (%s)", c->name, why);
		else if (free_but_writer_waits(l, o))
			snprintf(m, sizeof(m), c->wait == 0 ? "lock '%s' is %s" :
			    "timed out waiting for lock '%s' (%s)", c->name,
			    "free, but an exclusive request waits for it, and "
			    "shared ones wait behind it");
		else if (c->wait == 0)
			snprintf(m, sizeof(m), "lock '%s' is held by someone "
			    "else", c->name);
		else
			snprintf(m, sizeof(m), "timed out waiting for lock "
			    "'%s'", c->name);
		refused_conflict(c, m);
		return c->conflict_exit;
	default:
		return EXIT_INTERNAL;
	}
}
