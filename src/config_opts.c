/*
 * config_opts.c - the command line's vocabulary: every long option with
 * its code, the variables that do not follow the REDLOCK_ + long name
 * rule, and the verbs.  config.c parses with them.
 */
#include "config_opts.h"

#include <stddef.h>


/* The first entry of a code names it (in messages and in the
 * environment); later ones are aliases. */
const struct option config_longopts[] = {
	{ "url", required_argument, NULL, 'u' },
	{ "ttl", required_argument, NULL, 't' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nb", no_argument, NULL, 'n' },
	{ "wait", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "command", required_argument, NULL, 'c' },
	{ "prefix", required_argument, NULL, 'p' },
	{ "on-lost", required_argument, NULL, OPT_ON_LOST },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "min-hold", required_argument, NULL, OPT_MIN_HOLD },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "env", no_argument, NULL, OPT_ENV },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "fence", no_argument, NULL, OPT_FENCE },
	{ "shared", no_argument, NULL, 's' },
	{ "exclusive", no_argument, NULL, 'x' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "cacert", required_argument, NULL, OPT_CACERT },
	{ "cacertdir", required_argument, NULL, OPT_CACERTDIR },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "sni", required_argument, NULL, OPT_SNI },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "store-args", no_argument, NULL, OPT_STORE_ARGS },
	{ "metrics-dir", required_argument, NULL, OPT_METRICS_DIR },
	{ "record", no_argument, NULL, OPT_RECORD },
	{ "skip-alert", required_argument, NULL, OPT_SKIP_ALERT },
	{ "on-start", required_argument, NULL, OPT_ON_START },
	{ "on-exit", required_argument, NULL, OPT_ON_EXIT },
	{ "hook-timeout", required_argument, NULL, OPT_HOOK_TIMEOUT },
	{ "prom", no_argument, NULL, OPT_PROM },
	{ "once-per", required_argument, NULL, OPT_ONCE_PER },
	{ "lock-delay", required_argument, NULL, OPT_LOCK_DELAY },
	{ "replace", no_argument, NULL, OPT_REPLACE },
	{ "respawn", no_argument, NULL, OPT_RESPAWN },
	{ "fair", no_argument, NULL, OPT_FAIR },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/*
 * The options whose variable is not REDLOCK_ + the long name in capitals
 * with '-' as '_' (see config_env.c); NULL: none.  The options without a
 * value have none unless listed here.  No option may take the name of a
 * variable that describes the lock to the command (REDLOCK_NAME, _KEY,
 * _TOKEN, _FENCE, _HELD).
 */
const struct config_env_special config_env_special_opts[] = {
	{ 'u', NULL },		/* REDLOCK_URL is a list: config_env_urls() */
	{ 'c', NULL },		/* the command is not a setting */
	{ OPT_CERT, "REDLOCK_TLS_CERT" },	/* REDLOCK_KEY is the lock's */
	{ OPT_KEY, "REDLOCK_TLS_KEY" },		/* key in the command's env */
	{ OPT_TLS, "REDLOCK_TLS" },
	{ OPT_STORE_ARGS, "REDLOCK_STORE_ARGS" },
	{ OPT_RECORD, "REDLOCK_RECORD" },
	{ OPT_REPLACE, "REDLOCK_REPLACE" },
	{ OPT_RESPAWN, "REDLOCK_RESPAWN" },
	{ OPT_FAIR, "REDLOCK_FAIR" },
	{ 0, NULL }
};

const char *const config_verbs[] = {
	"run", "acquire", "release", "extend", "status", "list", "break", "stop",
	"runs"
};

const size_t config_nverbs = sizeof(config_verbs) / sizeof(config_verbs[0]);
