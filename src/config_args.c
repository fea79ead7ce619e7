/*
 * config_args.c - what the words after the options mean: the run
 * form's NAME and COMMAND, and each verb's NAME, TOKEN or PATTERN.
 * Each function returns CONFIG_OK, or CONFIG_USAGE with a one-line
 * reason in err.
 */
#include "config_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A usage error: the message into err; returns CONFIG_USAGE. */
int
config_usage(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* ap comes from va_start() just above. */
	vsnprintf(err, errlen, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	return CONFIG_USAGE;
}

/* Quote an operand in a message; a URL's password is hidden. */
int
config_bad_operand(const char *what, char *err, size_t errlen)
{
	char shown[256];

	url_redact(what, shown, sizeof(shown));
	return config_usage(err, errlen, "unexpected argument '%s'", shown);
}

static int
check_name(const char *name, char *err, size_t errlen)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0)
		return config_usage(err, errlen, "%s", "the lock NAME is empty");
	if (n > CONFIG_NAME_MAX)
		return config_usage(err, errlen, "the lock NAME is too long "
		    "(%zu bytes, at most %d)", n, CONFIG_NAME_MAX);
	return CONFIG_OK;
}

/* The run form after its options: NAME, then COMMAND or -c STRING. */
int
config_run_operands(struct config *c, int argc, char **argv, char *err,
    size_t errlen)
{
	if (argc < 1)
		return config_usage(err, errlen, "%s", "missing lock NAME");
	c->name = argv[0];
	if (argc >= 2 && (strcmp(argv[1], "-c") == 0 ||
	    strcmp(argv[1], "--command") == 0)) {
		if (argc < 3)
			return config_usage(err, errlen, "option '%s' needs a value",
			    argv[1]);
		if (argc > 3)
			return config_bad_operand(argv[3], err, errlen);
		c->shell = argv[2];
	} else if (argc >= 2 && strncmp(argv[1], "--command=", 10) == 0) {
		if (argc > 2)
			return config_bad_operand(argv[2], err, errlen);
		c->shell = argv[1] + 10;
	} else if (argc >= 2) {
		if (c->shell != NULL)
			return config_bad_operand(argv[1], err, errlen);
		c->cmd = &argv[1];
	} else if (c->shell == NULL)
		return config_usage(err, errlen, "%s", "missing COMMAND");
	return check_name(c->name, err, errlen);
}

/* The operands of the other verbs, ops[0..n). */
int
config_verb_operands(struct config *c, const char **ops, int n, char *err,
    size_t errlen)
{
	static const int want[] = { 0, 1, 2, 2, 1, -1, 1, 1, -1 };
	static const char *const missing[] = {
		"", "missing lock NAME", "missing lock NAME and TOKEN",
		"missing lock NAME and TOKEN", "missing lock NAME", "",
		"missing lock NAME", "missing lock NAME", ""
	};
	int w = want[c->verb];

	if (w < 0) {
		if (n > 1)
			return config_bad_operand(ops[1], err, errlen);
		c->pattern = n == 1 ? ops[0] : NULL;
		return CONFIG_OK;
	}
	if (n < w)
		return config_usage(err, errlen, "%s", n == 1 ? "missing TOKEN" :
		    missing[c->verb]);
	if (n > w)
		return config_bad_operand(ops[w], err, errlen);
	c->name = ops[0];
	if (w == 2) {
		c->token = ops[1];
		if (c->token[0] == '\0')
			return config_usage(err, errlen, "%s", "the TOKEN is empty");
	}
	return check_name(c->name, err, errlen);
}
