/* lease.h - lease arithmetic: pure functions of the TTL, no I/O */
#ifndef REDLOCK_LEASE_H
#define REDLOCK_LEASE_H

#include <stdint.h>

/* The shortest TTL accepted: renewals every ttl/3 must fit a round trip
 * and a retry on a loaded machine. */
#define LEASE_MIN_TTL 100

int64_t lease_drift(int64_t ttl);
int64_t lease_end(int64_t sent, int64_t ttl);
int64_t lease_renew_every(int64_t ttl);
int64_t lease_safety(int64_t ttl);
int64_t lease_kill_after(int64_t ttl, int64_t kill_after);
int64_t lease_kill_room(int64_t ttl);
int64_t lease_op_timeout(int nservers, int64_t ttl);
int64_t lease_renew_retry(int64_t ttl);

#endif
