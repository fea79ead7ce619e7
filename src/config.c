/*
 * config.c - parse argv and the environment into a struct config.
 * Everything is checked here, before any connection is made, so a usage
 * error sends nothing to Redis.  Returns errors; never exits.  (The TLS
 * files are checked by tls_init(), which needs OpenSSL; this file does
 * not, so that it can be unit-tested and fuzzed alone.)
 *
 * An option with a value can also come from the environment as REDLOCK_
 * + its long name (config_env_options()): a new option gets its variable,
 * check and messages from its row of config_opts[] (config_opts.c).
 */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "clock.h"
#include "config_args.h"
#include "config_env.h"
#include "config_pass.h"
#include "config_opts.h"
#include "hooks.h"
#include "lease.h"
#include "log.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "redlock:"
#define DEFAULT_TTL 30000
#define MAX_URLS 64

/* Parsing state that does not outlive config_parse(). */
struct parse {
	const char *urls[MAX_URLS];
	int nurls;
	const char *password_file;
	char password_who[64];		/* the option or variable that gave it */
	unsigned char seen[OPT_END];	/* given on the command line */
	int env_urls;			/* the URLs are $REDLOCK_URL's */
	char *err;
	size_t errlen;
};

/* What env_apply() needs. */
struct apply {
	struct config *c;
	struct parse *p;
};

static int __attribute__((format(printf, 2, 3)))
bad(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* ap comes from va_start() just above. */
	vsnprintf(p->err, p->errlen, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	return CONFIG_USAGE;
}

/* Store v in the integer field of c at off, of size bytes (an int, a
 * long, an int64_t or an enum). */
static void
store(struct config *c, size_t off, size_t size, int64_t v)
{
	char *f = (char *)c + off;
	int32_t v32 = (int32_t)v;

	if (size == sizeof(v32))
		memcpy(f, &v32, sizeof(v32));
	else
		memcpy(f, &v, sizeof(v));
}

/* "term, kill or ignore": the words of a CHOICE, for its message. */
static void
words_list(const char *const *w, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; w[i] != NULL; i++)
		n += (size_t)snprintf(buf + (n < len ? n : len),
		    n < len ? len - n : 0, "%s%s", i == 0 ? "" :
		    w[i + 1] == NULL ? " or " : ", ", w[i]);
}

/* An INTEGER of row o: decimal digits, from o->lo to o->hi, into *v. */
static int
integer_value(struct parse *p, const struct config_opt *o, const char *arg,
    const char *who, int64_t *v)
{
	char *end;
	long long n = strtoll(arg, &end, 10);

	*v = n;
	if (arg[0] >= '0' && arg[0] <= '9' && *end == '\0' && n >= o->lo &&
	    n <= o->hi)
		return CONFIG_OK;
	if (o->noun != NULL)
		return bad(p, "invalid %s for %s: '%s' (%lld-%lld)", o->noun,
		    who, arg, (long long)o->lo, (long long)o->hi);
	return bad(p, "invalid %s: '%s' (an integer from %lld to %lld)", who,
	    arg, (long long)o->lo, (long long)o->hi);
}

/*
 * Check value arg (NULL: an option without one) against row o's type
 * and bounds, the number it stands for into *v (DURATION, INTEGER,
 * CHOICE).  Returns CONFIG_OK, or CONFIG_USAGE with a message that
 * names the option as who and says the bound.
 */
static int
check_value(struct parse *p, const struct config_opt *o, const char *value,
    const char *who, int64_t *v)
{
	const char *arg = value != NULL ? value : "";
	char buf[64];

	switch (o->type) {
	case CONFIG_T_DURATION:
		if (duration_parse(arg, v) != 0)
			return bad(p, "invalid DURATION for %s: '%s'", who,
			    arg);
		if (*v >= o->lo)
			return CONFIG_OK;
		if (o->lo == 1)
			return bad(p, "%s must be more than 0, not '%s'", who,
			    arg);
		duration_format(o->lo, buf, sizeof(buf));
		return bad(p, "%s must be at least %s, not '%s'", who, buf,
		    arg);
	case CONFIG_T_INTEGER:
		return integer_value(p, o, arg, who, v);
	case CONFIG_T_CHOICE:
		for (*v = 0; o->words[*v] != NULL; (*v)++)
			if (strcmp(arg, o->words[*v]) == 0)
				return CONFIG_OK;
		words_list(o->words, buf, sizeof(buf));
		return bad(p, "invalid %s %s '%s' (%s)", who, o->noun, arg,
		    buf);
	case CONFIG_T_HOST:
		if (!url_is_dns_name(arg))
			return bad(p, "invalid server name for %s: '%s'", who,
			    arg);
		return CONFIG_OK;
	default:
		return CONFIG_OK;
	}
}

/* Keep a checked option of row o in c: arg itself, or the number v it
 * stands for; and what the row says goes with it. */
static void
keep(struct config *c, const struct config_opt *o, const char *arg,
    int64_t v, const char *who)
{
	if (o->type == CONFIG_T_STRING || o->type == CONFIG_T_HOST)
		memcpy((char *)c + o->off, &arg, sizeof(arg));
	else
		store(c, o->off, o->size, o->type == CONFIG_T_FLAG ? 1 : v);
	if (o->also != 0)
		store(c, o->also, sizeof(int), 1);
	if (o->by != 0)
		fmt_cat((char *)c + o->by, o->bylen, who, (char *)NULL);
}

/* The options the table leaves to this file (CONFIG_T_OWN, _OWN_FLAG):
 * the URLs and the password file, kept for later; -x and -e, which
 * undo -s and --limit; --help and --version.  As option(). */
static int
own_option(struct config *c, struct parse *p, int ch, const char *arg,
    const char *who)
{
	switch (ch) {
	case 'u':
		if (p->nurls == MAX_URLS)
			return bad(p, "too many %s options", who);
		p->urls[p->nurls++] = arg;
		return CONFIG_OK;
	case 'x':
	case 'e':
		c->shared = 0;
		c->limit = 0;
		return CONFIG_OK;
	case OPT_PASSWORD_FILE:
		p->password_file = arg;
		fmt_cat(p->password_who, sizeof(p->password_who), who,
		    (char *)NULL);
		return CONFIG_OK;
	case 'h':
		return CONFIG_HELP;
	case 'V':
		return CONFIG_VERSION;
	default:
		return bad(p, "unknown option '%s'", who);
	}
}

/*
 * Apply one option with a value (arg) or without (arg NULL); who names
 * it in messages: "--ttl", or "REDLOCK_TTL" when it came from the
 * environment.  Its row of config_opts[] says how its value is checked
 * and where it is kept.  Returns CONFIG_OK or the result to return.
 */
static int
option(struct config *c, struct parse *p, int ch, const char *arg,
    const char *who)
{
	const struct config_opt *o = config_opt_of(ch);
	int64_t v = o != NULL ? o->value : 0;
	int rc;

	if (o == NULL)
		return bad(p, "unknown option '%s'", who);
	if ((o->flags & CONFIG_NONEMPTY) && arg != NULL && arg[0] == '\0')
		return bad(p, "%s needs a value, not ''", who);
	if (o->type == CONFIG_T_OWN || o->type == CONFIG_T_OWN_FLAG)
		return own_option(c, p, ch, arg, who);
	if ((rc = check_value(p, o, arg, who, &v)) != CONFIG_OK)
		return rc;
	keep(c, o, arg, v, who);
	return CONFIG_OK;
}

/* "--" and the long name of option code ch, for messages. */
static const char *
option_name(int ch, char *buf, size_t len)
{
	const struct config_opt *o = config_opt_of(ch);

	char letter[2] = { (char)ch, '\0' };

	/* Made for every option given, even when no message follows:
	 * fmt.h says why not snprintf(). */
	if (o != NULL && o->name != NULL)
		fmt_cat(buf, len, "--", o->name, (char *)NULL);
	else
		fmt_cat(buf, len, "-", letter, (char *)NULL);
	return buf;
}

/* Say what was wrong with the option getopt_long() rejected in word. */
static int
option_error(struct parse *p, int ch, const char *word)
{
	char w[64];

	if (strncmp(word, "--", 2) == 0) {
		snprintf(w, sizeof(w), "%.*s", (int)strcspn(word, "="), word);
		if (ch == ':')
			return bad(p, "option '%s' needs a value", w);
		if (optopt != 0 && strchr(word, '=') != NULL)
			return bad(p, "option '%s' takes no value", w);
		return bad(p, "unknown option '%s'", w);
	}
	snprintf(w, sizeof(w), "-%c", optopt > 0 && optopt < 256 ?
	    (char)optopt : '?');
	return bad(p, ch == ':' ? "option '%s' needs a value" :
	    "unknown option '%s'", w);
}

/* Quote an operand in a message; a URL's password is hidden. */
static int
bad_operand(struct parse *p, const char *what)
{
	return config_bad_operand(what, p->err, p->errlen);
}

/*
 * Run getopt_long over argv[0..argc) (argv[0] is not looked at).  With
 * operands != NULL, operands may mix with options and are collected in
 * order; otherwise parsing stops at the first operand.  *next is set to
 * the index of the first word not consumed.  Each option given is
 * marked in p->seen, so that the environment does not override it.
 */
static int
options(struct config *c, struct parse *p, int argc, char **argv,
    const char **operands, int *nops, int *next)
{
	const char *optstr = operands ? "-:u:t:nw:E:c:p:sxevqhV" :
	    "+:u:t:nw:E:c:p:sxevqhV";
	struct option longopts[config_nopts + 1];
	char who[64];
	int ch, rc;

	config_getopt_table(longopts, config_nopts + 1);
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstr, longopts, NULL)) != -1) {
		if (ch == 1 && operands != NULL) {
			if (*nops == 3)
				return bad_operand(p, optarg);
			operands[(*nops)++] = optarg;
			continue;
		}
		if (ch == '?' || ch == ':' || ch < 0 || ch >= OPT_END)
			return option_error(p, ch, argv[optind - 1]);
		p->seen[ch] = 1;
		if (ch == 'n')		/* -n is -w 0 */
			p->seen['w'] = 1;
		if (ch == 'x' || ch == 'e')	/* which undo --limit */
			p->seen[OPT_LIMIT] = 1;
		rc = option(c, p, ch, optarg, option_name(ch, who, sizeof(who)));
		if (rc != CONFIG_OK)
			return rc;
	}
	*next = optind;
	return CONFIG_OK;
}

/* config_env_options() calls this for each variable set of an option
 * this form takes. */
static int
env_apply(void *arg, int code, const char *value, const char *var)
{
	struct apply *a = arg;

	return option(a->c, a->p, code, value, var);
}

/* Quote URL s in a message, without its password. */
static int
bad_url(struct parse *p, const char *s, const char *why)
{
	char shown[256];

	url_redact(s, shown, sizeof(shown));
	return bad(p, "%s '%s'%s%s%s", why ? "invalid URL" :
	    "the same server is given twice:", shown, p->env_urls ?
	    " in REDLOCK_URL" : "", why ? ": " : "", why ? why : "");
}

/* Parse p->urls into c->urls; --tls makes redis:// URLs TLS. */
static int
parse_urls(struct config *c, struct parse *p)
{
	char why[128];

	c->urls = calloc((size_t)p->nurls, sizeof(*c->urls));
	if (c->urls == NULL)
		return bad(p, "%s", "out of memory");
	for (int i = 0; i < p->nurls; i++) {
		struct url *u = &c->urls[i];

		c->nurls++;
		if (url_parse(p->urls[i], u, why, sizeof(why)) < 0)
			return bad_url(p, p->urls[i], why);
		for (int j = 0; j < i; j++)
			if (url_same_server(&c->urls[j], u))
				return bad_url(p, p->urls[i], NULL);
		if (c->tls && u->kind != URL_UNIX)
			u->tls = 1;
		c->tls_opts.used |= u->tls;
	}
	return CONFIG_OK;
}

static int
check_run(struct config *c, struct parse *p)
{
	int64_t room = lease_kill_room(c->ttl);

	if (config_kill_after(c) >= room) {
		char ka[32], r[32];
		duration_format(config_kill_after(c), ka, sizeof(ka));
		duration_format(room > 0 ? room : 0, r, sizeof(r));
		return bad(p, "%s %s does not fit in the TTL (must be under %s)",
		    p->seen[OPT_KILL_AFTER] || c->kill_after < 0 ? "--kill-after" :
		    "REDLOCK_KILL_AFTER", ka, r);
	}
	return CONFIG_OK;
}

/* The command line: options, the verb, its operands. */
static int
parse_argv(struct config *c, struct parse *p, int argc, char **argv)
{
	const char *ops[4] = { NULL, NULL, NULL, NULL };
	int nops = 0, next = 0, rc;

	rc = options(c, p, argc, argv, NULL, &nops, &next);
	if (rc != CONFIG_OK)
		return rc;
	argv += next;
	argc -= next;
	for (size_t i = 0; argc > 0 && i < config_nverbs; i++)
		if (strcmp(argv[0], config_verbs[i]) == 0)
			c->verb = (enum verb)i;
	if (argc > 0 && c->verb == VERB_RUN && strcmp(argv[0], "run") == 0) {
		rc = options(c, p, argc, argv, NULL, &nops, &next);
		if (rc != CONFIG_OK)
			return rc;
		argv += next;
		argc -= next;
	} else if (argc > 0 && c->verb != VERB_RUN) {
		rc = options(c, p, argc, argv, ops, &nops, &next);
		if (rc != CONFIG_OK)
			return rc;
		for (; next < argc && nops < 4; next++)
			ops[nops++] = argv[next];
		if (nops > 3)
			return bad_operand(p, ops[3]);
	}
	return c->verb == VERB_RUN ?
	    config_run_operands(c, argc, argv, p->err, p->errlen) :
	    config_verb_operands(c, ops, nops, p->err, p->errlen);
}

/* How the user gave option opt, for a message: flag, or its variable. */
static const char *
said(const struct parse *p, int opt, const char *flag, const char *var)
{
	return p->seen[opt] ? flag : var;
}

/* --fair against the options that cannot wait in a queue: a request
 * that does not wait has no place in it, --replace goes ahead of every
 * waiter.  Verbs that take no lock ignore it. */
static int
check_fair(struct config *c, struct parse *p)
{
	const char *fair = said(p, OPT_FAIR, "--fair", "REDLOCK_FAIR");

	if (!c->fair || (c->verb != VERB_RUN && c->verb != VERB_ACQUIRE))
		return CONFIG_OK;
	if (c->replace)
		return bad(p, "%s grants NAME in the order of the waiters, "
		    "%s ahead of them: not both", fair,
		    said(p, OPT_REPLACE, "--replace", "REDLOCK_REPLACE"));
	if (c->wait == 0)
		return bad(p, "%s queues waiters: a request that does not wait "
		    "(%s) has no place in the queue", fair,
		    p->seen['n'] ? "-n" : said(p, 'w', "-w 0", "REDLOCK_WAIT=0"));
	return CONFIG_OK;
}

/* The options that only some forms take (config_opts[]'s forms): given
 * on the command line to another, a usage error that says which, rather
 * than nothing (their variables may be set for the forms that take
 * them).  -c, --once-per and --respawn are check_run_options()'s. */
static int
check_verb_options(const struct config *c, struct parse *p)
{
	char name[64];

	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];

		if (o->forms != 0 && p->seen[o->code] &&
		    !(o->forms & CONFIG_FOR(c->verb)))
			return bad(p, "%s is for %s, not for '%s'",
			    option_name(o->code, name, sizeof(name)),
			    config_forms_words(o->forms), config_verbs[c->verb]);
	}
	if (c->prom && c->json)
		return bad(p, "%s", "--prom and --json are two formats: give one");
	return CONFIG_OK;
}

/* The options of a command (-c, and the scheduling options of
 * redlock-scheduling(7)) against the rest: a verb has no command to run; they concern the one holder of an
 * exclusive lock; --replace waits for the holders it asks to stop. */
static int
check_run_options(struct config *c, struct parse *p)
{
	if (c->verb != VERB_RUN && c->shell != NULL)
		return bad(p, "-c is for the run form (redlock NAME -c STRING), "
		    "not for '%s'", config_verbs[c->verb]);
	if (c->verb != VERB_RUN &&
	    (p->seen[OPT_ONCE_PER] || p->seen[OPT_RESPAWN]))
		return bad(p, "%s is for the run form (redlock NAME COMMAND), "
		    "not for '%s'", p->seen[OPT_ONCE_PER] ? "--once-per" :
		    "--respawn", config_verbs[c->verb]);
	if (c->shared && (c->once_per || c->lock_delay || c->replace))
		return bad(p, "%s needs an exclusive lock, not -s or --limit%s",
		    c->once_per ? said(p, OPT_ONCE_PER, "--once-per",
		    "REDLOCK_ONCE_PER") : c->lock_delay ? said(p, OPT_LOCK_DELAY,
		    "--lock-delay", "REDLOCK_LOCK_DELAY") : said(p, OPT_REPLACE,
		    "--replace", "REDLOCK_REPLACE"), p->seen['s'] ||
		    p->seen[OPT_LIMIT] ? "" : " (REDLOCK_LIMIT is set)");
	if (c->replace && c->wait == 0 &&
	    (c->verb == VERB_RUN || c->verb == VERB_ACQUIRE))
		return bad(p, "%s waits for the holder it asks to stop: give -w, "
		    "not %s", said(p, OPT_REPLACE, "--replace", "REDLOCK_REPLACE"),
		    p->seen['n'] ? "-n" : said(p, 'w', "-w 0", "REDLOCK_WAIT=0"));
	return check_fair(c, p);
}

/*
 * What the command line left open: options from the environment, the
 * checks that involve several options, the password, the servers.
 */
static int
settle(struct config *c, struct parse *p)
{
	const struct tls_opts *t = &c->tls_opts;
	char *envlist = NULL;
	const char *env;
	int rc;

	rc = config_env_options(p->seen, CONFIG_FOR(c->verb), env_apply,
	    &(struct apply){ c, p }, p->err, p->errlen);
	if (rc != CONFIG_OK)
		return rc;
	if (c->verb == VERB_RUN && (rc = check_run(c, p)) != CONFIG_OK)
		return rc;
	if (c->skip_alert > 0 && !c->record)
		return bad(p, "%s needs --record, which counts the attempts",
		    said(p, OPT_SKIP_ALERT, "--skip-alert",
		    "REDLOCK_SKIP_ALERT"));
	if ((t->cert == NULL) != (t->key == NULL))
		return bad(p, "%s '%s' needs %s too", t->cert ?
		    (p->seen[OPT_CERT] ? "--cert" : "REDLOCK_TLS_CERT") :
		    (p->seen[OPT_KEY] ? "--key" : "REDLOCK_TLS_KEY"),
		    t->cert ? t->cert : t->key, t->cert ? "--key" : "--cert");
	if (c->prefix == NULL)
		c->prefix = DEFAULT_PREFIX;
	if (config_env_password(p->password_file, p->password_who,
	    &c->password_buf, &c->password, p->err, p->errlen) < 0)
		return CONFIG_USAGE;
	env = getenv("REDLOCK_URL");	/* ours and the command's, without -u */
	if (c->verb == VERB_RUN && config_pass_env(c, p->seen,
	    p->nurls > 0 ? p->urls : &env, p->nurls > 0 ? p->nurls : env != NULL,
	    p->password_file, &c->pass_env) < 0)
		return bad(p, "%s", "out of memory");
	if (p->nurls == 0 && env != NULL) {
		if ((envlist = strdup(env)) == NULL)
			return bad(p, "%s", "out of memory");
		p->nurls = config_env_urls(envlist, p->urls, MAX_URLS);
		p->env_urls = 1;
		if (p->nurls < 0) {
			p->nurls = 0;
			rc = bad(p, "too many URLs in %s", "REDLOCK_URL");
		}
	}
	if (rc == CONFIG_OK && p->nurls == 0)
		p->urls[p->nurls++] = DEFAULT_URL;
	if (rc == CONFIG_OK)
		rc = parse_urls(c, p);
	free(envlist);
	if (rc == CONFIG_OK)
		rc = check_run_options(c, p);
	if (rc == CONFIG_OK)
		rc = check_verb_options(c, p);
	return rc;
}

/*
 * Fill c from argv and the environment.  Returns CONFIG_OK,
 * CONFIG_HELP, CONFIG_VERSION, or CONFIG_USAGE with a one-line reason in
 * err.  The caller frees c with config_free() in every case.
 */
int
config_parse(struct config *c, int argc, char **argv, char *err,
    size_t errlen)
{
	struct parse p = { .err = err, .errlen = errlen };
	int rc;

	memset(c, 0, sizeof(*c));
	c->ttl = DEFAULT_TTL;
	c->started = clock_ms();
	c->wait = -1;
	c->kill_after = -1;
	c->max_time = -1;
	c->hook_timeout = HOOKS_DEFAULT_TIMEOUT_MS;
	c->conflict_exit = 1;
	c->verb = VERB_RUN;
	err[0] = '\0';

	rc = parse_argv(c, &p, argc, argv);
	return rc != CONFIG_OK ? rc : settle(c, &p);
}

void
config_free(struct config *c)
{
	for (int i = 0; i < c->nurls; i++)
		url_free(&c->urls[i]);
	free(c->urls);
	c->urls = NULL;
	c->nurls = 0;
	if (c->password_buf != NULL)
		explicit_bzero(c->password_buf, strlen(c->password_buf));
	free(c->password_buf);
	c->password_buf = NULL;
	c->password = NULL;
	config_pass_free(c->pass_env);
	c->pass_env = NULL;
}
