/*
 * config_env.c - what the configuration takes from the environment and
 * from files: variable names, boolean values, the $REDLOCK_URL list,
 * and the password (redlock(1), SYNOPSIS; redlock(1), TLS and Passwords).
 */
#include "config_env.h"

#include "fmt.h"
#include "config_opts.h"
#include "config_types.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

/*
 * The variable of row o of config_opts[] into var, or 0 if it has none:
 * REDLOCK_ + the long name in capitals with '-' as '_' (--kill-after:
 * REDLOCK_KILL_AFTER), unless the row names another ("": none).  An
 * option without a value has none unless its row names one.  An alias
 * (a later row with the same code) of an option with a value has one of
 * its own name, since every long name has one (--timeout:
 * REDLOCK_TIMEOUT); others have none.
 */
static int
env_var(const struct config_opt *o, char *var, size_t len)
{
	const struct config_opt *m = config_opt_of(o->code);

	if (o->name == NULL || m == NULL || (m != o && m->var != NULL))
		return 0;
	if (o->var != NULL) {
		fmt_cat(var, len, o->var, (char *)NULL);
		return o->var[0] != '\0';
	}
	if (!config_opt_has_value(m))
		return 0;
	fmt_cat(var, len, "REDLOCK_", o->name, (char *)NULL);
	for (char *v = var + strlen("REDLOCK_"); *v != '\0'; v++)
		*v = (char)(*v == '-' ? '_' : toupper((unsigned char)*v));
	return 1;
}

/* A variable that turns an option on or off: 1, 0, or -1 for neither. */
static int
env_bool(const char *v)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* Most environments set no REDLOCK_ variable: up to this many are
 * looked through instead of the whole environment; with more, getenv(). */
#define ENV_OURS_MAX 64

/*
 * The value of variable var, as getenv() finds it: the first of the
 * environment's REDLOCK_ variables ours[0..n) that is var, or, when
 * there were too many to list (n < 0), getenv()'s answer.
 */
static const char *
env_of(const char *const *ours, int n, const char *var)
{
	size_t len = strlen(var);

	if (n < 0)
		return getenv(var);
	for (int i = 0; i < n; i++)
		if (strncmp(ours[i], var, len) == 0 && ours[i][len] == '=')
			return ours[i] + len + 1;
	return NULL;
}

/*
 * Apply the options of config_opts[] (config_opts.c) that are not
 * marked in seen[code] (given on the command line, which wins) and that
 * the forms (CONFIG_FOR()) take, from their variables, through apply();
 * the variables of the rest are left alone, bad values included.  An empty variable
 * counts as unset, except REDLOCK_PREFIX, where it is the empty prefix.
 * A variable of an option without a value says 1, yes, true or on, or
 * 0, no, false or off (any case).  Returns 0, or
 * the first error: apply()'s, or CONFIG_USAGE naming the variable.
 */
int
config_env_options(const unsigned char *seen, unsigned forms,
    config_env_apply_fn *apply, void *arg, char *err, size_t errlen)
{
	const char *ours[ENV_OURS_MAX];
	int n = 0;

	/* Every option's variable starts with REDLOCK_ (config_opts.c). */
	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, "REDLOCK_", strlen("REDLOCK_")) != 0)
			continue;
		if (n == ENV_OURS_MAX) {
			n = -1;		/* too many to list: getenv() */
			break;
		}
		ours[n++] = *e;
	}
	if (n == 0)
		return 0;
	for (const struct config_opt *o = config_opts; o->code != 0; o++) {
		const struct config_opt *m = config_opt_of(o->code);
		char var[64], main_var[64];
		const char *v, *w;
		int rc = 0, on;

		if (m == NULL || seen[o->code] ||
		    (m->forms != 0 && !(m->forms & forms)) ||
		    !env_var(o, var, sizeof(var)) ||
		    (v = env_of(ours, n, var)) == NULL ||
		    (v[0] == '\0' && strcmp(var, "REDLOCK_PREFIX") != 0))
			continue;
		/* An alias's variable gives way to the option's own. */
		if (m != o && env_var(m, main_var, sizeof(main_var)) &&
		    (w = env_of(ours, n, main_var)) != NULL && w[0] != '\0')
			continue;
		if (config_opt_has_value(m))
			rc = apply(arg, o->code, v, var);
		else if ((on = env_bool(v)) < 0) {
			snprintf(err, errlen, "invalid value for %s: '%s' "
			    "(1, yes, true, on or 0, no, false, off)", var, v);
			return CONFIG_USAGE;
		} else if (on)
			rc = apply(arg, o->code, NULL, var);
		if (rc != 0)
			return rc;
	}
	return 0;
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
 * Split list ($REDLOCK_URL, modified in place) into urls[] at the commas
 * (and blanks) that come before a scheme, so that a comma inside a
 * password, or in a Sentinel URL's host list, does not split.  Returns
 * the number of URLs, or -1 if there are more than max.
 */
int
config_env_urls(char *list, const char **urls, int max)
{
	char *s = list + strspn(list, ", \t");
	int n = 0;

	while (*s != '\0') {
		char *e = s, *next;

		if (n == max)
			return -1;
		urls[n++] = s;
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
	return n;
}

/*
 * Read the first line of path, without its line end, into a malloc'd
 * *buf.  It is read with read(2) into our own buffer, so that no copy of
 * the password stays behind in a stdio buffer; the rest is wiped.
 * Returns 0, or -1 with a message naming who and path (never the
 * content) in err.
 */
static int
read_first_line(const char *path, const char *who, char **buf, char *err,
    size_t errlen)
{
	size_t cap = CONFIG_ENV_PASSWORD_MAX + 2, n = 0, len;
	const char *why = NULL, *nl;
	ssize_t r = 0;
	char *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0 || (b = malloc(cap)) == NULL) {
		snprintf(err, errlen, "%s '%s': %s", who, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (n < cap && memchr(b, '\n', n) == NULL &&
	    (r = read(fd, b + n, cap - n)) > 0)
		n += (size_t)r;
	if (r < 0)
		why = strerror(errno);
	close(fd);
	nl = memchr(b, '\n', n);
	len = nl != NULL ? (size_t)(nl - b) : n;
	if (len > 0 && b[len - 1] == '\r')
		len--;
	if (why == NULL && len > CONFIG_ENV_PASSWORD_MAX)
		why = "the first line is too long";
	else if (why == NULL && len == 0)
		why = "the first line is empty";
	else if (why == NULL && memchr(b, '\0', len) != NULL)
		why = "the first line holds a NUL byte";
	if (why != NULL) {
		snprintf(err, errlen, "%s '%s': %s", who, path, why);
		explicit_bzero(b, cap);
		free(b);
		return -1;
	}
	explicit_bzero(b + len, cap - len);
	b[len] = '\0';
	*buf = b;
	return 0;
}

/*
 * The password for the servers whose URL has none (redlock(1), TLS and Passwords): the
 * first line of file (given by who: --password-file or
 * REDLOCK_PASSWORD_FILE) into *buf, else $REDLOCK_PASSWORD, else
 * $REDISCLI_AUTH; *password is NULL without any.  Returns 0, or -1 with
 * a message in err when the file cannot be used.
 */
int
config_env_password(const char *file, const char *who, char **buf,
    const char **password, char *err, size_t errlen)
{
	const char *env;

	*password = NULL;
	if (file != NULL) {
		if (read_first_line(file, who, buf, err, errlen) < 0)
			return -1;
		*password = *buf;
		return 0;
	}
	env = getenv("REDLOCK_PASSWORD");
	if (env == NULL || env[0] == '\0')
		env = getenv("REDISCLI_AUTH");
	if (env != NULL && env[0] != '\0')
		*password = env;
	return 0;
}
