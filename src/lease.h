/* lease.h - lease arithmetic (pure functions of the TTL, no I/O), and
 * how long each kind of request may wait for the servers */
#ifndef REDLOCK_LEASE_H
#define REDLOCK_LEASE_H

#include <stdint.h>

/* The shortest TTL accepted: renewals every ttl/3 must fit a round trip
 * and a retry on a loaded machine. */
#define LEASE_MIN_TTL 100

/* How long a request that holds no lease may wait for the servers:
 * an operator's verb (status, list, runs, break, stop), the --once-per
 * question, a scan's page.  Nothing runs out meanwhile, so a loaded
 * server gets its time; but "unavailable" must come within seconds. */
#define LEASE_VERB_TIMEOUT_MS 2000

int64_t lease_drift(int64_t ttl);
int64_t lease_end(int64_t sent, int64_t ttl);
int64_t lease_renew_every(int64_t ttl);
int64_t lease_safety(int64_t ttl);
int64_t lease_kill_after(int64_t ttl, int64_t kill_after);
int64_t lease_kill_room(int64_t ttl);
int64_t lease_op_timeout(int nservers, int64_t ttl);
int64_t lease_renew_retry(int64_t ttl);

#endif
