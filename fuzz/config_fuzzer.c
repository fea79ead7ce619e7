/*
 * config_fuzzer.c - libFuzzer target for the whole command line parser,
 * config_parse() (src/config.c and config_env.c, with the URL and
 * DURATION parsers they call).
 *
 * Input: words separated by NUL bytes.  Leading words of the form
 * VAR=VALUE, VAR REDISCLI_AUTH or REDLOCK_ followed by capitals, digits
 * and '_' (the options' variables: REDLOCK_TTL, REDLOCK_TLS, ...), set
 * that environment variable (as env(1) would); the other words are
 * argv[1..] (argv[0] is "redlock").  So the corpus file
 *     REDLOCK_URL=redis://h:1\0acquire\0-t\0005s\0name
 * is `REDLOCK_URL=redis://h:1 redlock acquire -t 5s name`.
 *
 * Besides what ASan/UBSan/LSan catch (config_free() is called after
 * every result, as main() does), it checks the contract of config.h:
 * one of the four results; a usage error has a one-line reason that
 * fits err and never shows the password from the environment; a
 * successful parse is complete and within the documented ranges (NAME
 * 1..4096 bytes, TTL >= 100ms, -E 0..255, durations <= 100 days, a
 * COMMAND or -c STRING for the run form, a TOKEN for release and
 * extend, --kill-after fitting the TTL, --cert with --key, no server
 * twice, TLS only on TCP URLs and "used" exactly when one is TLS); and
 * parsing the same argv twice gives the same answer (getopt's hidden
 * state is reset).  A violated check calls abort(), which libFuzzer
 * reports as a crash.  Inputs naming /dev, /proc or /sys are skipped:
 * --password-file reads the file it is given.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "lease.h"

#define MAX_WORDS 128
#define MAX_VARS 32
#define CANARY "Fz-Canary-Secret-91c7"

/* The variables set for the current input, unset before the next. */
static char set_vars[MAX_VARS][64];
static int nset_vars;

static char **words_for_message;
static int nwords_for_message;

/* A broken promise: report it with the argv, and crash. */
#define check(ok, what) do { if (!(ok)) broken(what); } while (0)

static _Noreturn void
broken(const char *what)
{
	fprintf(stderr, "config_fuzzer: %s; argv:", what);
	for (int i = 0; i < nwords_for_message; i++)
		fprintf(stderr, " '%s'", words_for_message[i]);
	fputc('\n', stderr);
	abort();
}

/* Set VAR=VALUE if word is one of ours; returns 1 if it was. */
static int
env_word(char *word)
{
	size_t n = strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

	if (word[n] != '=' || n >= sizeof(set_vars[0]) || nset_vars == MAX_VARS ||
	    (strncmp(word, "REDLOCK_", 8) != 0 &&
	    strncmp(word, "REDISCLI_AUTH=", 14) != 0))
		return 0;
	memcpy(set_vars[nset_vars], word, n);
	set_vars[nset_vars][n] = '\0';
	setenv(set_vars[nset_vars], word + n + 1, 1);
	nset_vars++;
	return 1;
}

static void
env_reset(void)
{
	while (nset_vars > 0)
		unsetenv(set_vars[--nset_vars]);
	unsetenv("REDLOCK_PASSWORD");
}

/* A parsed URL names something to connect to: a socket path, a host
 * and port, or a service with at least one sentinel that has both. */
static int
url_complete(const struct url *u)
{
	switch (u->kind) {
	case URL_UNIX:
		return u->path != NULL;
	case URL_TCP:
		return u->host != NULL && u->port > 0;
	case URL_SENTINEL:
		if (u->service == NULL || *u->service == '\0' || u->nsentinels < 1)
			return 0;
		for (int i = 0; i < u->nsentinels; i++)
			if (u->sentinels[i].host == NULL || u->sentinels[i].port <= 0)
				return 0;
		return 1;
	}
	return 0;
}

static void
check_urls(const struct config *c)
{
	int tls = 0;

	check(c->nurls >= 1 && c->urls != NULL, "no URL");
	for (int i = 0; i < c->nurls; i++) {
		const struct url *u = &c->urls[i];

		check(url_complete(u) && !(u->kind == URL_UNIX && u->tls),
		    "bad URL");
		tls |= u->tls;
		for (int j = 0; j < i; j++)
			check(!url_same_server(&c->urls[j], u), "a server twice");
	}
	check(c->tls_opts.used == tls, "TLS used but by no URL, or not used");
	check((c->tls_opts.cert == NULL) == (c->tls_opts.key == NULL),
	    "--cert without --key");
}

static void
check_ok(const struct config *c)
{
	check_urls(c);
	check(c->prefix != NULL, "no prefix");
	check(c->ttl >= LEASE_MIN_TTL && c->ttl <= CLOCK_MAX_MS,
	    "TTL out of range");
	check(c->wait >= -1 && c->wait <= CLOCK_MAX_MS, "wait out of range");
	check(c->kill_after >= -1 && c->kill_after <= CLOCK_MAX_MS,
	    "--kill-after out of range");
	check(c->min_hold >= 0 && c->min_hold <= CLOCK_MAX_MS,
	    "--min-hold out of range");
	check(c->max_time == -1 || (c->max_time > 0 &&
	    c->max_time <= CLOCK_MAX_MS), "--max-time out of range");
	check(c->conflict_exit >= 0 && c->conflict_exit <= 255,
	    "-E out of range");
	check(c->verbosity >= -1 && c->verbosity <= 1, "bad verbosity");
	if (c->verb == VERB_LIST || c->verb == VERB_RUNS)	/* a PATTERN */
		return;
	check(c->name != NULL && c->name[0] != '\0' &&
	    strlen(c->name) <= CONFIG_NAME_MAX, "NAME missing, empty or long");
	if (c->verb == VERB_RELEASE || c->verb == VERB_EXTEND)
		check(c->token != NULL && c->token[0] != '\0', "no TOKEN");
	if (c->verb == VERB_RUN) {
		check((c->cmd != NULL) != (c->shell != NULL),
		    "not exactly one of COMMAND and -c STRING");
		check(c->cmd == NULL || c->cmd[0] != NULL, "empty COMMAND");
		check(config_kill_after(c) < lease_kill_room(c->ttl),
		    "--kill-after does not fit the TTL");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[MAX_WORDS + 2], err[512], err2[512];
	struct config c, c2;
	int argc = 1, rc, rc2, setting_env = 1, canary = 1;

	if (size > 16384)
		return 0;
	if (memmem(data, size, "/dev", 4) != NULL ||
	    memmem(data, size, "/proc", 5) != NULL ||
	    memmem(data, size, "/sys", 4) != NULL)
		return 0;
	if ((buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	env_reset();
	if (memmem(data, size, CANARY, strlen(CANARY)) != NULL)
		canary = 0;

	argv[0] = "redlock";
	/* "a\0b" is two words, "a\0" one, "a\0\0" two (the second empty). */
	for (char *w = buf; w < buf + size && argc <= MAX_WORDS;
	    w += strlen(w) + 1) {
		if (setting_env && env_word(w)) {
			if (strncmp(w, "REDLOCK_PASSWORD=", 17) == 0)
				canary = 0;
			continue;
		}
		setting_env = 0;
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	if (canary)
		setenv("REDLOCK_PASSWORD", CANARY, 1);
	words_for_message = argv;
	nwords_for_message = argc;

	memset(err, 'x', sizeof(err));
	rc = config_parse(&c, argc, argv, err, sizeof(err));
	check(rc == CONFIG_OK || rc == CONFIG_HELP || rc == CONFIG_VERSION ||
	    rc == CONFIG_USAGE, "unknown result");
	check(memchr(err, '\0', sizeof(err)) != NULL, "err not terminated");
	if (rc == CONFIG_USAGE) {
		check(err[0] != '\0', "usage error without a reason");
		check(!canary || strstr(err, CANARY) == NULL,
		    "the usage message shows $REDLOCK_PASSWORD");
	} else if (rc == CONFIG_OK) {
		check_ok(&c);
		if (canary && c.password_buf == NULL)
			check(c.password != NULL &&
			    strcmp(c.password, CANARY) == 0,
			    "$REDLOCK_PASSWORD not taken");
	}

	/* The same argv again: the same answer. */
	rc2 = config_parse(&c2, argc, argv, err2, sizeof(err2));
	check(rc2 == rc, "a second parse gives another result");
	check(rc != CONFIG_USAGE || strcmp(err, err2) == 0,
	    "a second parse gives another message");
	check(rc != CONFIG_OK || (c.verb == c2.verb && c.name == c2.name &&
	    c.ttl == c2.ttl && c.nurls == c2.nurls && c.cmd == c2.cmd),
	    "a second parse gives another config");
	config_free(&c2);
	config_free(&c);
	env_reset();
	free(buf);
	return 0;
}
