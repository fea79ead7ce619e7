/*
 * prom.c - the Prometheus text exposition format (0.0.4), as the
 * node_exporter textfile collector and promtool read it: HELP and TYPE
 * lines, label values escaped, values without a timestamp (the
 * collector drops a whole file whose lines carry one).
 */
#include "prom.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Make room for n more bytes and a NUL; 0, or -1 (b->oom set). */
static int
prom_room(struct prom_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return -1;
	if (b->len + n + 1 <= b->cap)
		return 0;
	while (cap < b->len + n + 1)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void
prom_add(struct prom_buf *b, const char *s, size_t n)
{
	if (prom_room(b, n) < 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
prom_printf(struct prom_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	/* ap comes from va_start() just above. */
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	if (n > 0)
		prom_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n :
		    sizeof(tmp) - 1);
}

/*
 * key="value" with the n bytes of s as the value: double quote and
 * line feed escaped as the format says, and each byte that is not part
 * of valid UTF-8 or is a control character (C0 but the line feed, DEL,
 * and C1's two bytes, which terminals obey as they do ESC) written as
 * the four characters \xNN (their backslash escaped as the format
 * says), as `runs` and `status` print them.  A backslash is \x5c too,
 * as there: so that any byte string gives a valid label that is safe on
 * a terminal, and different strings different labels (NAME "a\x1b"
 * must not be NAME "a" and ESC).
 */
void
prom_label(struct prom_buf *b, const char *key, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	prom_printf(b, "%s=\"", key);
	for (size_t i = 0; i < n;) {
		size_t u = utf8_seq(p + i, n - i);

		if (p[i] == '\n') {
			prom_add(b, "\\n", 2);
			i++;
		} else if (u == 0 || p[i] < 0x20 || p[i] == 0x7f ||
		    p[i] == '\\')
			prom_printf(b, "\\\\x%02x", p[i++]);
		else if (u == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0) {
			prom_printf(b, "\\\\x%02x\\\\x%02x", p[i], p[i + 1]);
			i += 2;
		} else if (p[i] == '"') {
			prom_add(b, "\\\"", 2);
			i++;
		} else {
			prom_add(b, s + i, u);
			i += u;
		}
	}
	prom_add(b, "\"", 1);
}

/* The HELP and TYPE lines of family f. */
void
prom_header(struct prom_buf *b, const struct prom_family *f)
{
	prom_printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help,
	    f->name, f->type);
}

/* A time or a span of ms as seconds, in the base unit. */
void
prom_seconds(struct prom_buf *b, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	prom_printf(b, "%lld.%03lld", (long long)(ms / 1000),
	    (long long)(ms % 1000));
}

void
prom_free(struct prom_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
