/*
 * lease.c - how long a grant is ours, and when to act before it ends.
 *
 * All values are milliseconds of clock_ms().  A lease granted or renewed
 * by a request sent at `sent` is ours until lease_end(): the server
 * cannot expire the key sooner, even if its clock runs a little fast.
 */
#include "lease.h"

#include "clock.h"

/* The clock drift allowance of the Redlock algorithm: 1 % of the TTL
 * plus 2 ms for the granularity of the clocks. */
int64_t
lease_drift(int64_t ttl)
{
	return ttl / 100 + 2;
}

/* Until when a grant or renewal sent at `sent` surely holds. */
int64_t
lease_end(int64_t sent, int64_t ttl)
{
	return sent + ttl - lease_drift(ttl);
}

/* How often a holder renews: three tries fit in one TTL. */
int64_t
lease_renew_every(int64_t ttl)
{
	return ttl / 3;
}

/* Time kept between SIGKILL and the lease's end, for the kernel to
 * take the processes down: 2 % of the TTL plus 5 ms. */
int64_t
lease_safety(int64_t ttl)
{
	return ttl / 50 + 5;
}

/* The grace between SIGTERM and SIGKILL: the user's (>= 0), else a
 * tenth of the TTL, at most 10 s. */
int64_t
lease_kill_after(int64_t ttl, int64_t kill_after)
{
	int64_t ka = ttl / 10;

	if (kill_after >= 0)
		return kill_after;
	return ka > 10000 ? 10000 : ka;
}

/* How much grace fits: a renewal missed at ttl/3 must still leave time
 * to stop the command before the lease can end. */
int64_t
lease_kill_room(int64_t ttl)
{
	return ttl - lease_renew_every(ttl) - lease_drift(ttl) -
	    lease_safety(ttl);
}

/*
 * How long one command may wait for its reply: what the lease can
 * afford.  One server: its answer is needed, and three tries fit in the
 * room between the first renewal and the moment the command must be
 * stopped (lease_kill_room()), so a server far away (a round trip of a
 * tenth of the TTL or more) is slow, not unavailable; at least 50 ms
 * for a loaded machine, at most 2 s, since "unavailable" must come
 * within seconds.  Several servers: one that does not answer quickly is
 * passed over, since the Redlock validity counts the slowest answer
 * used (a twentieth of the TTL, 100 ms to 1 s).
 */
int64_t
lease_op_timeout(int nservers, int64_t ttl)
{
	if (nservers > 1)
		return clock_clamp(ttl / 20, 100, 1000);
	return clock_clamp(lease_kill_room(ttl) / 3, 50, 2000);
}

/* The pause between renewal retries: several fit in the kill room, and
 * a failing server is not hammered (10 ms to 0.5 s). */
int64_t
lease_renew_retry(int64_t ttl)
{
	return clock_clamp(ttl / 30, 10, 500);
}
