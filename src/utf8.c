/*
 * utf8.c - what counts as UTF-8, for every output that must be valid
 * text: JSON (print.c), Prometheus labels (prom.c), the terminal.
 */
#include "utf8.h"

/*
 * The length of the well-formed UTF-8 sequence at s (n bytes left), or
 * 0: no overlong forms, no surrogates, nothing above U+10FFFF, which
 * is what Go's utf8.Valid, and so Prometheus, accepts.
 */
size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}
