/*
 * fmt.c - numbers, joined strings and UUIDs without printf(3); see
 * fmt.h for why.
 */
#include "fmt.h"

#include <stdarg.h>
#include <string.h>

size_t
fmt_ll(char *buf, long long v)
{
	/* The magnitude as unsigned, so that LLONG_MIN does not overflow. */
	unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v :
	    (unsigned long long)v;
	char tmp[FMT_LL_SIZE];
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + m % 10);
		m /= 10;
	} while (m != 0);
	if (v < 0)
		buf[i++] = '-';
	while (n > 0)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return i;
}

size_t
fmt_cat(char *dst, size_t size, ...)
{
	size_t total = 0;
	const char *s;
	va_list ap;

	va_start(ap, size);
	while ((s = va_arg(ap, const char *)) != NULL) {
		size_t n = strlen(s);

		if (total + 1 < size) {
			size_t room = size - 1 - total;

			memcpy(dst + total, s, n < room ? n : room);
		}
		total += n;
	}
	va_end(ap);
	if (size > 0)
		dst[total < size ? total : size - 1] = '\0';
	return total;
}

void
fmt_uuid(const unsigned char u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = '\0';
}
