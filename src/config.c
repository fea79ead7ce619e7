/*
 * config.c - parse argv and the environment into a struct config.
 * Everything is checked here, before any connection is made, so a usage
 * error sends nothing to Redis.  Returns errors; never exits.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lease.h"
#include "log.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "redlock:"
#define DEFAULT_TTL 30000

enum {
	OPT_ON_LOST = 256, OPT_KILL_AFTER, OPT_MIN_HOLD, OPT_MAX_TIME,
	OPT_ENV, OPT_JSON, OPT_FENCE, OPT_LIMIT
};

/* The largest --limit: a semaphore of more holders than this is no
 * limit at all, and every holder costs the server a little. */
#define LIMIT_MAX 1000000

static const struct option longopts[] = {
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
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static const char *const verbs[] = {
	"run", "acquire", "release", "extend", "status", "list", "break", "stop"
};

/* Parsing state that does not outlive config_parse(). */
struct parse {
	const char *urls[64];
	int nurls;
	char *err;
	size_t errlen;
};

static int
bad(struct parse *p, const char *fmt, const char *what)
{
	snprintf(p->err, p->errlen, fmt, what);
	return CONFIG_USAGE;
}

static int
duration_opt(struct parse *p, const char *opt, const char *s, int64_t *ms)
{
	char fmt[96];

	if (duration_parse(s, ms) == 0)
		return CONFIG_OK;
	snprintf(fmt, sizeof(fmt), "invalid DURATION for %s: '%%s'", opt);
	return bad(p, fmt, s);
}

/*
 * -s, -x/-e, --limit N: the last of -s and -x wins; --limit implies -s.
 * And -E: a caller who chose the conflict status tests for it, so, as
 * with flock(1), the conflict itself is reported only with -v.  Returns
 * CONFIG_OK, CONFIG_USAGE, or -1 for option() to go on.
 */
static int
mode_option(struct config *c, struct parse *p, int ch, const char *arg)
{
	char *end;
	long v;

	if (ch == 'E')
		c->conflict_quiet = 1;
	if (ch != 's' && ch != 'x' && ch != 'e' && ch != OPT_LIMIT)
		return -1;
	if (ch == 's') {
		c->shared = 1;
		return CONFIG_OK;
	}
	if (ch != OPT_LIMIT) {
		c->shared = 0;
		c->limit = 0;
		return CONFIG_OK;
	}
	v = strtol(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || v < 1 ||
	    v > LIMIT_MAX)
		return bad(p, "invalid --limit: '%s' (an integer from 1 to "
		    "1000000)", arg);
	c->shared = 1;
	c->limit = v;
	return CONFIG_OK;
}

/* --on-lost ACTION. */
static int
on_lost_opt(struct config *c, struct parse *p, const char *arg)
{
	if (strcmp(arg, "term") == 0)
		c->on_lost = ON_LOST_TERM;
	else if (strcmp(arg, "kill") == 0)
		c->on_lost = ON_LOST_KILL;
	else if (strcmp(arg, "ignore") == 0)
		c->on_lost = ON_LOST_IGNORE;
	else
		return bad(p, "invalid --on-lost action '%s' "
		    "(term, kill or ignore)", arg);
	return CONFIG_OK;
}

/* Apply one option; returns CONFIG_OK or the result to return. */
static int
option(struct config *c, struct parse *p, int ch, const char *arg,
    const char *word)
{
	char *end;
	long v;

	switch (ch) {
	case 'u':
		if (p->nurls == 64)
			return bad(p, "too many %s options", "--url");
		p->urls[p->nurls++] = arg;
		return CONFIG_OK;
	case 't':
		if (duration_opt(p, "--ttl", arg, &c->ttl) != CONFIG_OK)
			return CONFIG_USAGE;
		if (c->ttl < LEASE_MIN_TTL)
			return bad(p, "--ttl must be at least 100ms, not '%s'", arg);
		return CONFIG_OK;
	case 'n':
		c->wait = 0;
		return CONFIG_OK;
	case 'w':
		return duration_opt(p, "--wait", arg, &c->wait);
	case 'E':
		v = strtol(arg, &end, 10);
		if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || v > 255)
			return bad(p, "invalid exit code for --conflict-exit-code: "
			    "'%s' (0-255)", arg);
		c->conflict_exit = (int)v;
		return CONFIG_OK;
	case 'c':
		c->shell = arg;
		return CONFIG_OK;
	case 'p':
		c->prefix = arg;
		return CONFIG_OK;
	case OPT_ON_LOST:
		return on_lost_opt(c, p, arg);
	case OPT_KILL_AFTER:
		return duration_opt(p, "--kill-after", arg, &c->kill_after);
	case OPT_MIN_HOLD:
		return duration_opt(p, "--min-hold", arg, &c->min_hold);
	case OPT_MAX_TIME:
		if (duration_opt(p, "--max-time", arg, &c->max_time) != CONFIG_OK)
			return CONFIG_USAGE;
		if (c->max_time == 0)
			return bad(p, "--max-time must be more than 0, not '%s'", arg);
		return CONFIG_OK;
	case OPT_ENV:
		c->env = 1;
		return CONFIG_OK;
	case OPT_JSON:
		c->json = 1;
		return CONFIG_OK;
	case OPT_FENCE:
		c->fence = 1;
		return CONFIG_OK;
	case 'v':
		c->verbosity = LOG_VERBOSE;
		return CONFIG_OK;
	case 'q':
		c->verbosity = LOG_QUIET;
		return CONFIG_OK;
	case 'h':
		return CONFIG_HELP;
	case 'V':
		return CONFIG_VERSION;
	case ':':
		return bad(p, "option '%s' needs a value", word);
	default:
		return bad(p, "unknown option '%s'", word);
	}
}

/* Say what was wrong with the option getopt_long() rejected in word. */
static int
option_error(struct parse *p, int ch, const char *word, int rc)
{
	char w[64];

	if (ch != '?' && ch != ':')
		return rc;
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
	char shown[256];

	url_redact(what, shown, sizeof(shown));
	return bad(p, "unexpected argument '%s'", shown);
}

/*
 * Run getopt_long over argv[0..argc) (argv[0] is not looked at).  With
 * operands != NULL, operands may mix with options and are collected in
 * order; otherwise parsing stops at the first operand.  *next is set to
 * the index of the first word not consumed.
 */
static int
options(struct config *c, struct parse *p, int argc, char **argv,
    const char **operands, int *nops, int *next)
{
	const char *optstr = operands ? "-:u:t:nw:E:c:p:sxevqhV" :
	    "+:u:t:nw:E:c:p:sxevqhV";
	int ch, rc;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstr, longopts, NULL)) != -1) {
		if (ch == 1 && operands != NULL) {
			if (*nops == 3)
				return bad_operand(p, optarg);
			operands[(*nops)++] = optarg;
			continue;
		}
		if ((rc = mode_option(c, p, ch, optarg)) < 0)
			rc = option(c, p, ch, optarg, argv[optind - 1]);
		if (rc != CONFIG_OK)
			return option_error(p, ch, argv[optind - 1], rc);
	}
	*next = optind;
	return CONFIG_OK;
}

/* Does s start with a URL scheme and "://"? */
static int
has_scheme(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	return n > 0 && strncmp(s + n, "://", 3) == 0;
}

/*
 * Split $REDLOCK_URL into p->urls at the commas (and blanks) that come
 * before a scheme, so that a comma inside a password does not split.
 */
static int
env_urls(struct parse *p, char *list)
{
	char *s = list + strspn(list, ", \t");

	while (*s != '\0') {
		char *e = s, *next;

		if (p->nurls == 64)
			return bad(p, "too many URLs in %s", "REDLOCK_URL");
		p->urls[p->nurls++] = s;
		for (;;) {
			e += strcspn(e, ", \t");
			next = e + strspn(e, ", \t");
			if (*e == '\0' || *next == '\0' || has_scheme(next))
				break;
			e = next;
		}
		if (*e == '\0')
			break;
		*e = '\0';
		s = next;
	}
	return CONFIG_OK;
}

static int
parse_urls(struct config *c, struct parse *p)
{
	char why[128];

	c->urls = calloc((size_t)p->nurls, sizeof(*c->urls));
	if (c->urls == NULL)
		return bad(p, "%s", "out of memory");
	for (int i = 0; i < p->nurls; i++) {
		c->nurls++;
		if (url_parse(p->urls[i], &c->urls[i], why, sizeof(why)) < 0) {
			char shown[256];
			url_redact(p->urls[i], shown, sizeof(shown));
			snprintf(p->err, p->errlen, "invalid URL '%s': %s",
			    shown, why);
			return CONFIG_USAGE;
		}
	}
	return CONFIG_OK;
}

static int
check_name(struct parse *p, const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0)
		return bad(p, "%s", "the lock NAME is empty");
	if (n > CONFIG_NAME_MAX) {
		char what[64];
		snprintf(what, sizeof(what), "%zu bytes, at most %d", n,
		    CONFIG_NAME_MAX);
		return bad(p, "the lock NAME is too long (%s)", what);
	}
	return CONFIG_OK;
}

/* The run form after its options: NAME, then COMMAND or -c STRING. */
static int
run_operands(struct config *c, struct parse *p, int argc, char **argv)
{
	if (argc < 1)
		return bad(p, "%s", "missing lock NAME");
	c->name = argv[0];
	if (argc >= 2 && (strcmp(argv[1], "-c") == 0 ||
	    strcmp(argv[1], "--command") == 0)) {
		if (argc < 3)
			return bad(p, "option '%s' needs a value", argv[1]);
		if (argc > 3)
			return bad_operand(p, argv[3]);
		c->shell = argv[2];
	} else if (argc >= 2 && strncmp(argv[1], "--command=", 10) == 0) {
		if (argc > 2)
			return bad_operand(p, argv[2]);
		c->shell = argv[1] + 10;
	} else if (argc >= 2) {
		if (c->shell != NULL)
			return bad_operand(p, argv[1]);
		c->cmd = &argv[1];
	} else if (c->shell == NULL)
		return bad(p, "%s", "missing COMMAND");
	return check_name(p, c->name);
}

/* The operands of the other verbs. */
static int
verb_operands(struct config *c, struct parse *p, const char **ops, int n)
{
	static const int want[] = { 0, 1, 2, 2, 1, -1, 1, 1 };
	static const char *const missing[] = {
		"", "missing lock NAME", "missing lock NAME and TOKEN",
		"missing lock NAME and TOKEN", "missing lock NAME", "",
		"missing lock NAME", "missing lock NAME"
	};
	int w = want[c->verb];

	if (w < 0) {
		if (n > 1)
			return bad_operand(p, ops[1]);
		c->pattern = n == 1 ? ops[0] : NULL;
		return CONFIG_OK;
	}
	if (n < w)
		return bad(p, "%s", n == 1 ? "missing TOKEN" : missing[c->verb]);
	if (n > w)
		return bad_operand(p, ops[w]);
	c->name = ops[0];
	if (w == 2) {
		c->token = ops[1];
		if (c->token[0] == '\0')
			return bad(p, "%s", "the TOKEN is empty");
	}
	return check_name(p, c->name);
}

/* The grace between SIGTERM and SIGKILL, given or derived from the TTL. */
int64_t
config_kill_after(const struct config *c)
{
	return lease_kill_after(c->ttl, c->kill_after);
}

static int
check_run(struct config *c, struct parse *p)
{
	int64_t room = lease_kill_room(c->ttl);

	if (config_kill_after(c) >= room) {
		char ka[32], r[32], what[128];
		duration_format(config_kill_after(c), ka, sizeof(ka));
		duration_format(room > 0 ? room : 0, r, sizeof(r));
		snprintf(what, sizeof(what), "%s does not fit in the TTL "
		    "(must be under %s)", ka, r);
		return bad(p, "--kill-after %s", what);
	}
	return CONFIG_OK;
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
	const char *ops[4] = { NULL, NULL, NULL, NULL };
	const char *env;
	char *envlist = NULL;
	int nops = 0, next = 0, rc;

	memset(c, 0, sizeof(*c));
	c->ttl = DEFAULT_TTL;
	c->wait = -1;
	c->kill_after = -1;
	c->max_time = -1;
	c->conflict_exit = 1;
	c->verb = VERB_RUN;
	err[0] = '\0';

	rc = options(c, &p, argc, argv, NULL, &nops, &next);
	if (rc != CONFIG_OK)
		return rc;
	argv += next;
	argc -= next;
	for (size_t i = 0; argc > 0 && i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[0], verbs[i]) == 0)
			c->verb = (enum verb)i;
	if (argc > 0 && c->verb == VERB_RUN && strcmp(argv[0], "run") == 0) {
		rc = options(c, &p, argc, argv, NULL, &nops, &next);
		if (rc != CONFIG_OK)
			return rc;
		argv += next;
		argc -= next;
	} else if (argc > 0 && c->verb != VERB_RUN) {
		rc = options(c, &p, argc, argv, ops, &nops, &next);
		if (rc != CONFIG_OK)
			return rc;
		for (; next < argc && nops < 4; next++)
			ops[nops++] = argv[next];
		if (nops > 3)
			return bad_operand(&p, ops[3]);
	}
	rc = c->verb == VERB_RUN ? run_operands(c, &p, argc, argv) :
	    verb_operands(c, &p, ops, nops);
	if (rc != CONFIG_OK)
		return rc;
	if (c->verb == VERB_RUN && (rc = check_run(c, &p)) != CONFIG_OK)
		return rc;

	if (c->prefix == NULL)
		c->prefix = (env = getenv("REDLOCK_PREFIX")) ? env : DEFAULT_PREFIX;
	env = getenv("REDLOCK_PASSWORD");
	if (env == NULL || env[0] == '\0')
		env = getenv("REDISCLI_AUTH");
	if (env != NULL && env[0] != '\0')
		c->password = env;
	if (p.nurls == 0 && (env = getenv("REDLOCK_URL")) != NULL) {
		if ((envlist = strdup(env)) == NULL)
			return bad(&p, "%s", "out of memory");
		rc = env_urls(&p, envlist);
	}
	if (rc == CONFIG_OK && p.nurls == 0)
		p.urls[p.nurls++] = DEFAULT_URL;
	if (rc == CONFIG_OK)
		rc = parse_urls(c, &p);
	free(envlist);
	if (rc == CONFIG_OK && c->shared && c->nurls > 1)
		rc = bad(&p, "%s", "-s and --limit need one server: a majority "
		    "of several cannot bound the number of holders");
	return rc;
}

void
config_free(struct config *c)
{
	for (int i = 0; i < c->nurls; i++)
		url_free(&c->urls[i]);
	free(c->urls);
	c->urls = NULL;
	c->nurls = 0;
}
