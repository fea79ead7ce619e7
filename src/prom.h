/* prom.h - Prometheus text exposition (format 0.0.4), built in memory */
#ifndef REDLOCK_PROM_H
#define REDLOCK_PROM_H

#include <stddef.h>
#include <stdint.h>

/* A growing text; after an allocation failure it stays as it was and
 * oom is set. */
struct prom_buf {
	char *p;
	size_t len, cap;
	int oom;
};

/* One metric family: every file and every output of redlock names it
 * with the same type and help, which node_exporter requires of the
 * files it merges. */
struct prom_family {
	const char *name, *type, *help;
};

void prom_add(struct prom_buf *b, const char *s, size_t n);
void prom_printf(struct prom_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void prom_label(struct prom_buf *b, const char *key, const char *s,
    size_t n);
void prom_header(struct prom_buf *b, const struct prom_family *f);
void prom_seconds(struct prom_buf *b, int64_t ms);
void prom_free(struct prom_buf *b);

#endif
