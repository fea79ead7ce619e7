/* config_opts.h - every option in one table: its names, its variable,
 * the type of its value and that value's bounds (config_opts.c);
 * config.c parses with it, config_env.c reads the variables it names */
#ifndef REDLOCK_CONFIG_OPTS_H
#define REDLOCK_CONFIG_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* The codes of the long options without a letter. */
enum {
	OPT_ON_LOST = 256, OPT_KILL_AFTER, OPT_MIN_HOLD, OPT_MAX_TIME,
	OPT_ENV, OPT_JSON, OPT_FENCE, OPT_TLS, OPT_CACERT, OPT_CACERTDIR,
	OPT_CERT, OPT_KEY, OPT_SNI, OPT_INSECURE, OPT_PASSWORD_FILE, OPT_LIMIT,
	OPT_LABEL, OPT_STORE_ARGS,
	OPT_METRICS_DIR, OPT_RECORD, OPT_SKIP_ALERT, OPT_ON_START, OPT_ON_EXIT,
	OPT_HOOK_TIMEOUT, OPT_PROM,
	OPT_ONCE_PER, OPT_LOCK_DELAY, OPT_REPLACE, OPT_RESPAWN,
	OPT_FAIR,
	OPT_END
};

/* What an option's value is, and so how config.c checks and keeps it. */
enum config_type {
	CONFIG_T_FLAG,		/* no value: the int field becomes 1 */
	CONFIG_T_SET,		/* no value: the field becomes `value` */
	CONFIG_T_STRING,	/* kept as given */
	CONFIG_T_HOST,		/* a DNS name (url_is_dns_name()) */
	CONFIG_T_DURATION,	/* a DURATION in ms, at least lo */
	CONFIG_T_INTEGER,	/* decimal digits, from lo to hi */
	CONFIG_T_CHOICE,	/* one of words[]: the field takes its index */
	CONFIG_T_OWN,		/* config.c's own code, with a value */
	CONFIG_T_OWN_FLAG,	/* config.c's own code, without */
	CONFIG_T_ALIAS		/* another long name of the row with its code */
};

/* Flags of a row. */
#define CONFIG_NONEMPTY 1	/* '' is refused ("needs a value") */

/* One option.  The fields a row leaves zero are not used. */
struct config_opt {
	const char *name;	/* the long name; NULL: a letter only */
	int code;		/* getopt_long()'s: the letter, or OPT_* */
	enum config_type type;
	size_t off, size;	/* the field of struct config it sets */
	int64_t lo, hi;		/* DURATION, INTEGER: the bounds */
	int64_t value;		/* SET: what the field becomes */
	const char *noun;	/* INTEGER, CHOICE: what messages call the
				 * value ("exit code"); NULL: an integer */
	const char *const *words;	/* CHOICE: NULL-terminated */
	unsigned flags;		/* CONFIG_NONEMPTY */
	unsigned forms;		/* on the command line only for these forms
				 * (CONFIG_FOR_*); 0: any */
	size_t also;		/* an int field that becomes 1 too; 0 none */
	size_t by, bylen;	/* a char[] that keeps how it was given
				 * ("--cacert" or its variable) */
	const char *var;	/* the variable, if not REDLOCK_ + the long
				 * name (config_env.c); "": none */
};

/* The forms an option may be given to (struct config_opt's forms). */
#define CONFIG_FOR(verb) (1u << (verb))
#define CONFIG_FOR_RUN CONFIG_FOR(VERB_RUN)
#define CONFIG_FOR_TAKING (CONFIG_FOR_RUN | CONFIG_FOR(VERB_ACQUIRE))
#define CONFIG_FOR_VIEWS (CONFIG_FOR(VERB_STATUS) | CONFIG_FOR(VERB_LIST) | \
	CONFIG_FOR(VERB_RUNS))

extern const struct config_opt config_opts[];
extern const size_t config_nopts;
extern const char *const config_verbs[];
extern const size_t config_nverbs;

const struct config_opt *config_opt_of(int code);
int config_opt_has_value(const struct config_opt *o);
size_t config_getopt_table(struct option *out, size_t max);
const char *config_forms_words(unsigned forms);

#endif
