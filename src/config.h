/* config.h - the command line and environment, checked before any I/O
 * (config.c); struct config is config_types.h's */
#ifndef REDLOCK_CONFIG_H
#define REDLOCK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config_types.h"
#include "lease.h"

int config_parse(struct config *c, int argc, char **argv, char *err,
    size_t errlen);
void config_free(struct config *c);

/* The grace between SIGTERM and SIGKILL, given or derived from the TTL. */
static inline int64_t
config_kill_after(const struct config *c)
{
	return lease_kill_after(c->ttl, c->kill_after);
}

#endif
