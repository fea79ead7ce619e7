/* config.h - the command line and environment, checked before any I/O */
#ifndef REDLOCK_CONFIG_H
#define REDLOCK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "url.h"

enum verb {
	VERB_RUN, VERB_ACQUIRE, VERB_RELEASE, VERB_EXTEND, VERB_STATUS,
	VERB_LIST, VERB_BREAK
};

enum on_lost { ON_LOST_TERM, ON_LOST_KILL, ON_LOST_IGNORE };

enum { CONFIG_OK, CONFIG_HELP, CONFIG_VERSION, CONFIG_USAGE };

struct config {
	enum verb verb;
	struct url *urls;
	int nurls;
	const char *password;	/* $REDLOCK_PASSWORD or $REDISCLI_AUTH */
	int64_t ttl;
	int64_t wait;		/* -1: forever */
	int64_t kill_after;	/* -1: derived from the TTL */
	int64_t min_hold;
	int64_t max_time;	/* -1: none */
	int conflict_exit;
	enum on_lost on_lost;
	int verbosity;
	int json, env;
	int fence;		/* break: also remove the fencing counter */
	const char *prefix;
	const char *shell;	/* -c STRING */
	const char *name;
	char **cmd;		/* NULL-terminated, or NULL with -c */
	const char *token;	/* release, extend */
	const char *pattern;	/* list */
};

int config_parse(struct config *c, int argc, char **argv, char *err,
    size_t errlen);
void config_free(struct config *c);
int64_t config_kill_after(const struct config *c);
int64_t config_safety(int64_t ttl);

/* Exit statuses of SPEC section 3 (sysexits values where they exist). */
#define EXIT_USAGE 64
#define EXIT_UNAVAILABLE 69
#define EXIT_INTERNAL 70
#define EXIT_LOST 75
#define EXIT_TIMEOUT 124
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

#endif
