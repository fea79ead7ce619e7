/*
 * clock.c - the lease clock, deadlines and DURATION parsing.
 *
 * Every lease computation uses clock_ms().  It is CLOCK_BOOTTIME where
 * the kernel has it: like CLOCK_MONOTONIC it never steps with the wall
 * clock, but it also keeps counting while the machine is suspended, and
 * the Redis server's TTL keeps counting then too.
 */
#include "clock.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef CLOCK_BOOTTIME
#define LEASE_CLOCK CLOCK_BOOTTIME
#else
#define LEASE_CLOCK CLOCK_MONOTONIC
#endif

int64_t
clock_ms(void)
{
	struct timespec ts;

	if (clock_gettime(LEASE_CLOCK, &ts) != 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Parse a DURATION: digits, an optional fraction of at most nine
 * digits, an optional unit (ms, s, m, h; none means seconds).  No sign,
 * exponent or blanks.
 * Stores milliseconds (fractions of a millisecond round up, so "0.1ms"
 * is 1) and returns 0; returns -1 on malformed input or a value above
 * CLOCK_MAX_MS.
 */
int
duration_parse(const char *s, int64_t *ms)
{
	int64_t whole = 0, frac = 0, fracdiv = 1, unit;
	const char *p = s;
	int digits = 0;

	while (isdigit((unsigned char)*p)) {
		if (whole > CLOCK_MAX_MS)
			return -1;
		whole = whole * 10 + (*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			if (fracdiv == 1000000000)
				return -1;	/* at most nine decimals */
			frac = frac * 10 + (*p - '0');
			fracdiv *= 10;
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	if (p[0] == '\0' || (p[0] == 's' && p[1] == '\0'))
		unit = 1000;
	else if (p[0] == 'm' && p[1] == 's' && p[2] == '\0')
		unit = 1;
	else if (p[0] == 'm' && p[1] == '\0')
		unit = 60 * 1000LL;
	else if (p[0] == 'h' && p[1] == '\0')
		unit = 3600 * 1000LL;
	else
		return -1;
	if (whole > CLOCK_MAX_MS / unit)
		return -1;
	whole = whole * unit + (frac * unit + fracdiv - 1) / fracdiv;
	if (whole > CLOCK_MAX_MS)
		return -1;
	*ms = whole;
	return 0;
}

/* Format milliseconds for people: "250ms", "1.5s", "10m", "2h30m". */
void
duration_format(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else if (ms < 60000)
		snprintf(buf, len, "%lld.%03llds", (long long)(ms / 1000),
		    (long long)(ms % 1000));
	else if (ms < 3600000)
		snprintf(buf, len, "%lldm%llds", (long long)(ms / 60000),
		    (long long)(ms % 60000 / 1000));
	else
		snprintf(buf, len, "%lldh%lldm", (long long)(ms / 3600000),
		    (long long)(ms % 3600000 / 60000));
}

/* v, kept within [lo, hi]: timeouts derived from the TTL use it. */
int64_t
clock_clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* A pseudo-random delay in [0, max]; spreads retries of many hosts. */
int64_t
clock_jitter(int64_t max)
{
	static unsigned int seed;

	if (max <= 0)
		return 0;
	if (seed == 0)
		seed = (unsigned int)(clock_ms() ^ ((int64_t)getpid() << 16));
	return (int64_t)(rand_r(&seed) % (max + 1));
}
