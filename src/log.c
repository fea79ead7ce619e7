/*
 * log.c - diagnostics.  One line each on stderr, prefixed "redlock: ".
 * Errors and warnings are silenced by -q (not --skip-alert's alert);
 * progress lines need -v.
 * Usage errors always print, followed by the pointer to --help.
 * Callers never pass a password: URLs are named with url_name().
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static int level = LOG_NORMAL;

void
log_set_level(int l)
{
	level = l;
}

int
log_level(void)
{
	return level;
}

/*
 * Print one line with a single write so that lines from the renewal
 * thread and the main thread never interleave mid-line.  Control
 * characters (a NAME may hold a newline), C1 controls among them, and
 * bytes that are not UTF-8 are shown as '?', so that nothing reaches the
 * terminal as an escape sequence.
 */
static void
emit(const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;
	int r;

	snprintf(buf, sizeof(buf), "redlock: ");
	/* ap comes from va_start() in the caller. */
	r = vsnprintf(buf + 9, sizeof(buf) - 10, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	if (r < 0)
		return;
	n = 9 + ((size_t)r < sizeof(buf) - 10 ? (size_t)r : sizeof(buf) - 11);
	for (size_t i = 9, k; i < n; i += k) {
		const unsigned char *u = (const unsigned char *)buf + i;

		k = utf8_seq(u, n - i);
		if (k == 1 && *u >= 0x20 && *u != 0x7f)
			continue;
		if (k >= 2 && !(*u == 0xc2 && u[1] < 0xa0))
			continue;
		/* A control, C1 (U+0080 to U+009F) too, or a byte that is
		 * not UTF-8: '?' for each of its bytes. */
		k = k == 0 ? 1 : k;
		memset(buf + i, '?', k);
	}
	buf[n++] = '\n';
	fwrite(buf, 1, n, stderr);
}

void
log_error(const char *fmt, ...)
{
	va_list ap;

	if (level < LOG_NORMAL)
		return;
	va_start(ap, fmt);
	emit(fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (level < LOG_VERBOSE)
		return;
	va_start(ap, fmt);
	emit(fmt, ap);
	va_end(ap);
}

/* A line that -q does not silence: --skip-alert's, which a quiet cron
 * job is meant to speak up with. */
void
log_alert(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(fmt, ap);
	va_end(ap);
}

void
log_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(fmt, ap);
	va_end(ap);
	fputs("Try 'redlock --help' for more information.\n", stderr);
}
