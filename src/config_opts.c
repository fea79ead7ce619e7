/*
 * config_opts.c - the command line's vocabulary: every option in one
 * table, with the type of its value and that value's bounds, from which
 * config.c checks a value and words its message (for the command line
 * and the REDLOCK_* variables alike), config_env.c names the variables,
 * and getopt_long() gets its table; and the verbs.  A new option is one
 * row (and its code, and its field in struct config).
 */
#include "config_opts.h"

#include "config_types.h"
#include "lease.h"
#include "log.h"

/* The largest --limit: a semaphore of more holders than this is no
 * limit at all, and every holder costs the server a little. */
#define CONFIG_LIMIT_MAX 1000000

/* The most attempts in a row --skip-alert counts to: any more is no
 * alert at all. */
#define CONFIG_SKIP_ALERT_MAX 1000000

/* -E: an exit status is one byte. */
#define CONFIG_EXIT_MAX 255

/* A row's long name, code and type. */
#define OPT(n, c, t) .name = (n), .code = (c), .type = (t)
/* The field f of struct config, for a row. */
#define FIELD(f) .off = offsetof(struct config, f), \
	.size = sizeof(((struct config *)0)->f)
/* An int field of struct config that an option sets to 1 as well. */
#define ALSO(f) .also = offsetof(struct config, f)
/* The char[] of struct config that keeps how an option was given. */
#define BY(f) .by = offsetof(struct config, f), \
	.bylen = sizeof(((struct config *)0)->f)

static const char *const on_lost_words[] = { "term", "kill", "ignore", NULL };

/* How messages name the forms of a CONFIG_FOR_* mask. */
const char *
config_forms_words(unsigned forms)
{
	switch (forms) {
	case CONFIG_FOR_RUN: return "the run form";
	case CONFIG_FOR_TAKING: return "the run form and acquire";
	case CONFIG_FOR_TAKING | CONFIG_FOR(VERB_EXTEND):
		return "the run form, acquire and extend";
	case CONFIG_FOR_VIEWS: return "status, list and runs";
	case CONFIG_FOR(VERB_ACQUIRE): return "acquire";
	case CONFIG_FOR(VERB_RUNS): return "runs";
	case CONFIG_FOR(VERB_BREAK): return "break";
	default: return "other forms";
	}
}

/* The first row of a code names it (in messages and in the
 * environment); an ALIAS row is another name for it.  No option may
 * take the name of a variable that describes the lock to the command
 * (REDLOCK_NAME, _KEY, _TOKEN, _FENCE, _HELD). */
const struct config_opt config_opts[] = {
	/* REDLOCK_URL is a list: config_env_urls() */
	{ OPT("url", 'u', CONFIG_T_OWN), .var = "" },
	{ OPT("ttl", 't', CONFIG_T_DURATION), FIELD(ttl), .lo = LEASE_MIN_TTL },
	{ OPT("nonblock", 'n', CONFIG_T_SET), FIELD(wait), .value = 0 },
	{ OPT("nb", 'n', CONFIG_T_ALIAS) },
	{ OPT("wait", 'w', CONFIG_T_DURATION), FIELD(wait) },
	{ OPT("timeout", 'w', CONFIG_T_ALIAS) },
	{ OPT("conflict-exit-code", 'E', CONFIG_T_INTEGER),
	    FIELD(conflict_exit),
	    .lo = 0, .hi = CONFIG_EXIT_MAX, .noun = "exit code",
	    ALSO(conflict_quiet) },
	/* the command is not a setting */
	{ OPT("command", 'c', CONFIG_T_STRING), FIELD(shell), .var = "" },
	{ OPT("prefix", 'p', CONFIG_T_STRING), FIELD(prefix) },
	{ OPT("on-lost", OPT_ON_LOST, CONFIG_T_CHOICE), FIELD(on_lost),
	    .noun = "action", .words = on_lost_words,
	    .forms = CONFIG_FOR_RUN },
	{ OPT("kill-after", OPT_KILL_AFTER, CONFIG_T_DURATION),
	    FIELD(kill_after), .forms = CONFIG_FOR_RUN },
	{ OPT("min-hold", OPT_MIN_HOLD, CONFIG_T_DURATION), FIELD(min_hold),
	    .forms = CONFIG_FOR_RUN },
	{ OPT("max-time", OPT_MAX_TIME, CONFIG_T_DURATION), FIELD(max_time),
	    .lo = 1, .forms = CONFIG_FOR_RUN },
	{ OPT("env", OPT_ENV, CONFIG_T_FLAG), FIELD(env),
	    .forms = CONFIG_FOR(VERB_ACQUIRE) },
	{ OPT("json", OPT_JSON, CONFIG_T_FLAG), FIELD(json),
	    .forms = CONFIG_FOR_VIEWS },
	{ OPT("fence", OPT_FENCE, CONFIG_T_FLAG), FIELD(fence),
	    .forms = CONFIG_FOR(VERB_BREAK) },
	{ OPT("shared", 's', CONFIG_T_FLAG), FIELD(shared) },
	{ OPT("exclusive", 'x', CONFIG_T_OWN_FLAG) },
	{ OPT(NULL, 'e', CONFIG_T_OWN_FLAG) },
	{ OPT("limit", OPT_LIMIT, CONFIG_T_INTEGER), FIELD(limit), .lo = 1,
	    .hi = CONFIG_LIMIT_MAX, ALSO(shared) },
	{ OPT("tls", OPT_TLS, CONFIG_T_FLAG), FIELD(tls),
	    .var = "REDLOCK_TLS" },
	{ OPT("cacert", OPT_CACERT, CONFIG_T_STRING), FIELD(tls_opts.cacert),
	    BY(tls_opts.cacert_by), .flags = CONFIG_NONEMPTY },
	{ OPT("cacertdir", OPT_CACERTDIR, CONFIG_T_STRING),
	    FIELD(tls_opts.cacertdir), BY(tls_opts.cacertdir_by),
	    .flags = CONFIG_NONEMPTY },
	/* REDLOCK_KEY is the lock's key in the command's environment */
	{ OPT("cert", OPT_CERT, CONFIG_T_STRING), FIELD(tls_opts.cert),
	    BY(tls_opts.cert_by), .flags = CONFIG_NONEMPTY,
	    .var = "REDLOCK_TLS_CERT" },
	{ OPT("key", OPT_KEY, CONFIG_T_STRING), FIELD(tls_opts.key),
	    BY(tls_opts.key_by), .flags = CONFIG_NONEMPTY,
	    .var = "REDLOCK_TLS_KEY" },
	{ OPT("sni", OPT_SNI, CONFIG_T_HOST), FIELD(tls_opts.sni),
	    .flags = CONFIG_NONEMPTY },
	{ OPT("insecure", OPT_INSECURE, CONFIG_T_FLAG),
	    FIELD(tls_opts.insecure) },
	{ OPT("password-file", OPT_PASSWORD_FILE, CONFIG_T_OWN),
	    .flags = CONFIG_NONEMPTY },
	{ OPT("label", OPT_LABEL, CONFIG_T_STRING), FIELD(label),
	    .flags = CONFIG_NONEMPTY, .forms = CONFIG_FOR_TAKING },
	{ OPT("store-args", OPT_STORE_ARGS, CONFIG_T_FLAG), FIELD(store_args),
	    .var = "REDLOCK_STORE_ARGS", .forms = CONFIG_FOR_RUN },
	{ OPT("metrics-dir", OPT_METRICS_DIR, CONFIG_T_STRING),
	    FIELD(metrics_dir),
	    .flags = CONFIG_NONEMPTY, .forms = CONFIG_FOR_RUN },
	{ OPT("record", OPT_RECORD, CONFIG_T_FLAG), FIELD(record),
	    .var = "REDLOCK_RECORD", .forms = CONFIG_FOR_RUN },
	{ OPT("skip-alert", OPT_SKIP_ALERT, CONFIG_T_INTEGER),
	    FIELD(skip_alert),
	    .lo = 1, .hi = CONFIG_SKIP_ALERT_MAX, .flags = CONFIG_NONEMPTY,
	    .forms = CONFIG_FOR_RUN },
	{ OPT("on-start", OPT_ON_START, CONFIG_T_STRING), FIELD(on_start),
	    .flags = CONFIG_NONEMPTY, .forms = CONFIG_FOR_RUN },
	{ OPT("on-exit", OPT_ON_EXIT, CONFIG_T_STRING), FIELD(on_exit),
	    .flags = CONFIG_NONEMPTY, .forms = CONFIG_FOR_RUN },
	{ OPT("hook-timeout", OPT_HOOK_TIMEOUT, CONFIG_T_DURATION),
	    FIELD(hook_timeout), .lo = 1, .flags = CONFIG_NONEMPTY,
	    .forms = CONFIG_FOR_RUN },
	{ OPT("prom", OPT_PROM, CONFIG_T_FLAG), FIELD(prom),
	    .forms = CONFIG_FOR(VERB_RUNS) },
	{ OPT("once-per", OPT_ONCE_PER, CONFIG_T_DURATION), FIELD(once_per),
	    .lo = 1, .forms = CONFIG_FOR_RUN },
	{ OPT("lock-delay", OPT_LOCK_DELAY, CONFIG_T_DURATION),
	    FIELD(lock_delay),
	    .forms = CONFIG_FOR_TAKING | CONFIG_FOR(VERB_EXTEND) },
	{ OPT("replace", OPT_REPLACE, CONFIG_T_FLAG), FIELD(replace),
	    .var = "REDLOCK_REPLACE", .forms = CONFIG_FOR_TAKING },
	{ OPT("respawn", OPT_RESPAWN, CONFIG_T_FLAG), FIELD(respawn),
	    .var = "REDLOCK_RESPAWN", .forms = CONFIG_FOR_RUN },
	{ OPT("fair", OPT_FAIR, CONFIG_T_FLAG), FIELD(fair),
	    .var = "REDLOCK_FAIR", .forms = CONFIG_FOR_TAKING },
	{ OPT("verbose", 'v', CONFIG_T_SET), FIELD(verbosity),
	    .value = LOG_VERBOSE },
	{ OPT("quiet", 'q', CONFIG_T_SET), FIELD(verbosity),
	    .value = LOG_QUIET },
	{ OPT("help", 'h', CONFIG_T_OWN_FLAG) },
	{ OPT("version", 'V', CONFIG_T_OWN_FLAG) },
	{ .name = NULL }
};

/* The rows of config_opts[], without its closing one. */
const size_t config_nopts = sizeof(config_opts) / sizeof(config_opts[0]) - 1;

/* The row that names option code (its first), or NULL. */
const struct config_opt *
config_opt_of(int code)
{
	for (const struct config_opt *o = config_opts; o->code != 0; o++)
		if (o->code == code)
			return o;
	return NULL;
}

/* Does the option with row o (its first) take a value? */
int
config_opt_has_value(const struct config_opt *o)
{
	return o->type != CONFIG_T_FLAG && o->type != CONFIG_T_SET &&
	    o->type != CONFIG_T_OWN_FLAG;
}

/*
 * getopt_long()'s table of the long names, into out[0..max) with its
 * closing row of zeros (max: at least the rows of config_opts[] and
 * one).  Returns how many names.
 */
size_t
config_getopt_table(struct option *out, size_t max)
{
	size_t n = 0;

	for (const struct config_opt *o = config_opts; o->code != 0 &&
	    n + 1 < max; o++) {
		const struct config_opt *named = config_opt_of(o->code);

		if (o->name == NULL)
			continue;
		out[n++] = (struct option){ o->name,
		    config_opt_has_value(named) ? required_argument :
		    no_argument, NULL, o->code };
	}
	out[n] = (struct option){ NULL, 0, NULL, 0 };
	return n;
}

const char *const config_verbs[] = {
	"run", "acquire", "release", "extend", "status", "list", "break", "stop",
	"runs"
};

const size_t config_nverbs = sizeof(config_verbs) / sizeof(config_verbs[0]);
