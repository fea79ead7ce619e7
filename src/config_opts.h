/* config_opts.h - the options, variables and verbs (config_opts.c) */
#ifndef REDLOCK_CONFIG_OPTS_H
#define REDLOCK_CONFIG_OPTS_H

#include <getopt.h>
#include <stddef.h>

/* An option whose variable is not the usual one; var NULL: none. */
struct config_env_special {
	int code;
	const char *var;
};

/* The codes of the long options without a letter. */
enum {
	OPT_ON_LOST = 256, OPT_KILL_AFTER, OPT_MIN_HOLD, OPT_MAX_TIME,
	OPT_ENV, OPT_JSON, OPT_FENCE, OPT_TLS, OPT_CACERT, OPT_CACERTDIR,
	OPT_CERT, OPT_KEY, OPT_SNI, OPT_INSECURE, OPT_PASSWORD_FILE, OPT_LIMIT,
	OPT_LABEL, OPT_STORE_ARGS,
	/* In the order of enum config_monitor_opt. */
	OPT_METRICS_DIR, OPT_RECORD, OPT_SKIP_ALERT, OPT_ON_START, OPT_ON_EXIT,
	OPT_HOOK_TIMEOUT, OPT_PROM,
	OPT_ONCE_PER, OPT_LOCK_DELAY, OPT_REPLACE, OPT_RESPAWN,
	OPT_FAIR,
	OPT_END
};

extern const struct option config_longopts[];
extern const struct config_env_special config_env_special_opts[];
extern const char *const config_verbs[];
extern const size_t config_nverbs;

#endif
