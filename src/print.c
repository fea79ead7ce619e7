/*
 * print.c - what the servers hold is written by whoever took a lock
 * (redis-py, another redlock, a hostile user name), so it is printed
 * escaped: control characters as \xNN for a terminal (one lock, one
 * line, no escape sequence reaches the operator), JSON strings valid
 * UTF-8, shell words single-quoted.
 */
#include "print.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "utf8.h"

/* Print s as a single-quoted shell word. */
void
print_shell(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

/* Print n bytes of s as a JSON string; bytes that are not UTF-8 become
 * U+FFFD. */
void
print_json(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (size_t i = 0; i < n; i++) {
		size_t u;

		if (p[i] == '"' || p[i] == '\\')
			printf("\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", stdout);
		else if (p[i] == '\r')
			fputs("\\r", stdout);
		else if (p[i] == '\t')
			fputs("\\t", stdout);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			printf("\\u%04x", p[i]);
		else if (p[i] < 0x80)
			putchar(p[i]);
		else if ((u = utf8_seq(p + i, n - i)) > 0) {
			fwrite(p + i, 1, u, stdout);
			i += u - 1;
		} else
			fputs("\\ufffd", stdout);
	}
	putchar('"');
}

/*
 * How many bytes at s (n > 0 left) a terminal may be given as they are:
 * a printable ASCII byte or a whole UTF-8 character that is not a C1
 * control (U+0080 to U+009F, which terminals obey like C0's ESC);
 * 0 when s[0] must be escaped (C0, DEL, '\', C1, and every byte that
 * is not part of valid UTF-8, since an 8-bit terminal reads 0x9b as
 * CSI).
 */
static size_t
plain_len(const unsigned char *s, size_t n)
{
	size_t u;

	if (s[0] < 0x20 || s[0] == 0x7f || s[0] == '\\')
		return 0;
	if (s[0] < 0x80)
		return 1;
	if ((u = utf8_seq(s, n)) == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 0;
	return u;
}

/* How many columns print_text() takes for s. */
size_t
print_width(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0;

	for (size_t i = 0, u; i < n; i += u ? u : 1)
		w += (u = plain_len(p + i, n - i)) ? 1 : 4;
	return w;
}

/* Print s for a terminal: control characters as \xNN. */
void
print_text(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, u; i < n; i += u ? u : 1) {
		if ((u = plain_len(p + i, n - i)) == 0)
			printf("\\x%02x", p[i]);
		else
			fwrite(p + i, 1, u, stdout);
	}
}

void
print_time(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "unknown");
	else
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* s with control characters as \xNN, into buf (cut to fit); returns
 * buf. */
const char *
print_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n = strlen(s);

	for (size_t i = 0, u; i < n && o + 5 < len; i += u ? u : 1) {
		if ((u = plain_len(p + i, n - i)) == 0)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", p[i]);
		else if (o + u + 5 < len) {
			memcpy(buf + o, p + i, u);
			o += u;
		} else
			break;
	}
	if (len > 0)
		buf[o < len ? o : len - 1] = '\0';
	return buf;
}
