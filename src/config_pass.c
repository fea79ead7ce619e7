/*
 * config_pass.c - what a run passes on to its command, so that a nested
 * redlock with no options of its own reaches the same servers the same
 * way (re-entrance in redlock(1)): the servers as REDLOCK_URL, and each
 * connection option given on the command line as its variable.  No
 * password is passed on; a password file's name is.
 */
#include "config_pass.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_opts.h"
#include "fmt.h"
#include "url.h"

/* The connection options passed on, with their variables; a file's
 * name is made absolute, since the command may change directory.
 * --insecure has no variable, so that nothing in the environment turns
 * the checks of certificates off: a nested redlock is given it again. */
static const struct pass {
	const char *var;
	int opt;
	int file;
} pass[] = {
	{ "REDLOCK_TLS", OPT_TLS, 0 },
	{ "REDLOCK_CACERT", OPT_CACERT, 1 },
	{ "REDLOCK_CACERTDIR", OPT_CACERTDIR, 1 },
	{ "REDLOCK_TLS_CERT", OPT_CERT, 1 },
	{ "REDLOCK_TLS_KEY", OPT_KEY, 1 },
	{ "REDLOCK_SNI", OPT_SNI, 0 },
	{ "REDLOCK_PASSWORD_FILE", OPT_PASSWORD_FILE, 1 },
};

/* The value option o was given, or NULL when it was not given. */
static const char *
given(const struct config *c, const unsigned char *seen, int o,
    const char *password_file)
{
	const struct tls_opts *t = &c->tls_opts;

	if (!seen[o])
		return NULL;
	switch (o) {
	case OPT_TLS:
		return "1";
	case OPT_CACERT:
		return t->cacert;
	case OPT_CACERTDIR:
		return t->cacertdir;
	case OPT_CERT:
		return t->cert;
	case OPT_KEY:
		return t->key;
	case OPT_SNI:
		return t->sni;
	default:
		return password_file;
	}
}

/* "VAR=" and v, made absolute when file and relative.  Returns a
 * malloc'd string, or NULL when out of memory. */
static char *
assign(const char *var, const char *v, int file)
{
	char cwd[4096];
	const char *dir = "";
	size_t len;
	char *s;

	if (file && v[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		dir = cwd;
	len = strlen(var) + strlen(dir) + strlen(v) + 3;
	if ((s = malloc(len)) != NULL)
		fmt_cat(s, len, var, "=", dir, *dir ? "/" : "", v, (char *)NULL);
	return s;
}

int
config_pass_env(const struct config *c, const unsigned char *seen,
    const char *const *urls, int nurls, const char *password_file,
    char ***out)
{
	size_t n = 0, max = sizeof(pass) / sizeof(pass[0]) + 2;
	char **env = calloc(max, sizeof(char *));
	int bad = env == NULL;

	*out = NULL;
	if (!bad && nurls > 0 && (env[n++] = url_list_env(urls, nurls)) == NULL)
		bad = 1;
	for (size_t i = 0; !bad && i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = given(c, seen, pass[i].opt, password_file);

		if (v != NULL &&
		    (env[n++] = assign(pass[i].var, v, pass[i].file)) == NULL)
			bad = 1;
	}
	if (bad || n == 0) {
		config_pass_free(env);
		return bad ? -1 : 0;
	}
	*out = env;
	return 0;
}

void
config_pass_free(char **env)
{
	if (env == NULL)
		return;
	for (char **e = env; *e != NULL; e++)
		free(*e);
	free(env);
}
