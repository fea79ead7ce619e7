/* clock.h - lease time, deadlines and DURATION parsing */
#ifndef REDLOCK_CLOCK_H
#define REDLOCK_CLOCK_H

#include <stdint.h>
#include <stddef.h>

/* The longest DURATION accepted anywhere: 100 days, in milliseconds. */
#define CLOCK_MAX_MS (100LL * 24 * 3600 * 1000)

int64_t clock_ms(void);
int64_t clock_wall_ms(void);
int duration_parse(const char *s, int64_t *ms);
void duration_format(int64_t ms, char *buf, size_t len);
int64_t clock_jitter(int64_t max);
int64_t clock_clamp(int64_t v, int64_t lo, int64_t hi);

#endif
