/*
 * duration_fuzzer.c - libFuzzer target for duration_parse() and
 * duration_format() (src/clock.c).
 *
 * The input is one DURATION (bytes up to the first NUL).  The result is
 * compared with a slow reference that follows the documented grammar
 * exactly, with arbitrary precision: digits, an optional fraction of
 * at most nine digits, an
 * optional unit ms|s|m|h (none: seconds); no sign, exponent or blanks;
 * at least one digit; the value in milliseconds, a fraction of a
 * millisecond rounded up; above CLOCK_MAX_MS (100 days) rejected.
 * A mismatch calls abort(), which libFuzzer reports as a crash.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* The reference: 0 and *ms, or -1. */
static int
reference(const char *s, int64_t *ms)
{
	const char *p = s, *w0, *w1, *f0 = NULL, *f1 = NULL;
	int64_t unit, whole = 0, frac;
	unsigned char digits[4200];
	size_t nf = 0;
	int carry = 0, rest = 0;

	for (w0 = p; isdigit((unsigned char)*p); p++)
		;
	w1 = p;
	if (*p == '.') {
		f0 = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		f1 = p;
	}
	if (w1 == w0 && (f0 == NULL || f1 == f0))
		return -1;
	if (f0 != NULL && f1 - f0 > 9)
		return -1;
	if (strcmp(p, "") == 0 || strcmp(p, "s") == 0)
		unit = 1000;
	else if (strcmp(p, "ms") == 0)
		unit = 1;
	else if (strcmp(p, "m") == 0)
		unit = 60000;
	else if (strcmp(p, "h") == 0)
		unit = 3600000;
	else
		return -1;
	/* The whole part, leading zeros and all. */
	for (const char *q = w0; q < w1; q++) {
		whole = whole * 10 + (*q - '0');
		if (whole > CLOCK_MAX_MS)
			return -1;
	}
	if (whole > CLOCK_MAX_MS / unit)
		return -1;
	whole *= unit;
	/* The fraction times unit, exactly: multiply the decimal digits
	 * by unit from the last one; what carries out of the first is the
	 * whole number of milliseconds, any digit left non-zero rounds up. */
	for (const char *q = f0; f0 != NULL && q < f1 && nf < sizeof(digits);
	    q++)
		digits[nf++] = (unsigned char)(*q - '0');
	if (f0 != NULL && (size_t)(f1 - f0) > nf)
		return -2;	/* too long to check */
	for (size_t i = nf; i-- > 0;) {
		int64_t t = digits[i] * unit + carry;
		digits[i] = (unsigned char)(t % 10);
		carry = (int)(t / 10);
		rest |= digits[i] != 0;
	}
	frac = carry + rest;
	if (whole + frac > CLOCK_MAX_MS)
		return -1;
	*ms = whole + frac;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[4100], buf[64];
	int64_t got = -12345, want = -12345;
	int rc, ref;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	rc = duration_parse(s, &got);
	ref = reference(s, &want);
	if (ref == -2)
		return 0;
	if (rc != ref || (rc == 0 && got != want)) {
		fprintf(stderr, "duration_fuzzer: '%s': duration_parse gives "
		    "rc=%d ms=%lld, the grammar says rc=%d ms=%lld\n", s, rc,
		    (long long)got, ref, (long long)want);
		abort();
	}
	if (rc == 0) {
		/* Whatever parses can be shown, and fits a small buffer. */
		duration_format(got, buf, sizeof(buf));
		if (strlen(buf) >= 32) {
			fprintf(stderr, "duration_fuzzer: '%s': formatted as "
			    "'%s'\n", s, buf);
			abort();
		}
	}
	return 0;
}
