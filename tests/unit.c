/*
 * unit.c - unit tests of the pure parsers (DURATION, URL, the command
 * line and the environment), printing TAP.  Linked without hiredis and
 * OpenSSL.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "fmt.h"
#include "proto.h"
#include "scripts.h"
#include "sha1.h"
#include "url.h"

extern char **environ;

static int n, failed;

static void
ok(int cond, const char *what, const char *input)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s: '%s'\n", cond ? "" : "not ", n, what, input);
}

static void
duration_ok(const char *s, long long want)
{
	int64_t ms = -1;
	int rc = duration_parse(s, &ms);

	ok(rc == 0 && ms == want, "duration parses", s);
	if (rc != 0 || ms != want)
		printf("# got rc=%d ms=%lld, want %lld\n", rc, (long long)ms, want);
}

static void
duration_bad(const char *s)
{
	int64_t ms = 0;

	ok(duration_parse(s, &ms) < 0, "duration is rejected", s);
}

static void
url_ok(const char *s, enum url_kind kind, const char *host, int port,
    const char *path, int db, const char *user, const char *pass)
{
	struct url u;
	char err[128];
	int rc = url_parse(s, &u, err, sizeof(err));
	int good = rc == 0 && u.kind == kind && u.db == db &&
	    (kind == URL_UNIX ? strcmp(u.path, path) == 0 :
	    strcmp(u.host, host) == 0 && u.port == port) &&
	    (user ? u.user && strcmp(u.user, user) == 0 : u.user == NULL) &&
	    (pass ? u.password && strcmp(u.password, pass) == 0 :
	    u.password == NULL);

	ok(good, "URL parses", s);
	if (rc != 0)
		printf("# error: %s\n", err);
	url_free(&u);
}

static void
url_bad(const char *s)
{
	struct url u;
	char err[128];
	int rc = url_parse(s, &u, err, sizeof(err));

	ok(rc < 0, "URL is rejected", s);
	url_free(&u);
}

/*
 * A Sentinel URL: want is "SERVICE db user pass tls host:port,..."
 * with "-" for an absent user or password.
 */
static void
sentinel_ok(const char *s, const char *want)
{
	struct url u;
	char err[128], got[512];
	int rc = url_parse(s, &u, err, sizeof(err));
	size_t len;

	if (rc == 0 && u.kind == URL_SENTINEL) {
		len = (size_t)snprintf(got, sizeof(got), "%s %d %s %s %d ",
		    u.service, u.db, u.user ? u.user : "-",
		    u.password ? u.password : "-", u.tls);
		for (int i = 0; i < u.nsentinels && len < sizeof(got); i++)
			len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s:%d",
			    i ? "," : "", u.sentinels[i].host, u.sentinels[i].port);
	} else
		snprintf(got, sizeof(got), "rc %d kind %d: %s", rc, (int)u.kind,
		    rc ? err : "");
	ok(strcmp(got, want) == 0, "Sentinel URL parses", s);
	if (strcmp(got, want) != 0)
		printf("# got '%s', want '%s'\n", got, want);
	url_free(&u);
}

/*
 * $REDLOCK_URL env splits into the URLs of want ("|"-separated, as
 * url_name() names them).
 */
static void
env_splits(const char *env, const char *want)
{
	char *argv[] = { "redlock", "status", "x", NULL };
	char err[256], got[512] = "";
	struct config c;
	size_t len = 0;
	int rc;

	setenv("REDLOCK_URL", env, 1);
	rc = config_parse(&c, 3, argv, err, sizeof(err));
	for (int i = 0; rc == CONFIG_OK && i < c.nurls && len < sizeof(got); i++) {
		char name[128];
		url_name(&c.urls[i], name, sizeof(name));
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s",
		    i ? "|" : "", name);
	}
	if (rc != CONFIG_OK)
		snprintf(got, sizeof(got), "error: %s", err);
	ok(strcmp(got, want) == 0, "REDLOCK_URL splits", env);
	if (strcmp(got, want) != 0)
		printf("# got '%s', want '%s'\n", got, want);
	config_free(&c);
	unsetenv("REDLOCK_URL");
}

/* s is rejected with a message that contains want. */
static void
url_bad_why(const char *s, const char *want)
{
	struct url u;
	char err[128] = "";
	int rc = url_parse(s, &u, err, sizeof(err));

	ok(rc < 0 && strstr(err, want) != NULL, "URL is rejected saying why", s);
	if (rc == 0 || strstr(err, want) == NULL)
		printf("# got rc=%d '%s', want '%s'\n", rc, err, want);
	url_free(&u);
}

/* s parses, with TLS or not, and host (when not NULL). */
static void
url_tls(const char *s, int tls, const char *host)
{
	struct url u;
	char err[128];
	int rc = url_parse(s, &u, err, sizeof(err));

	ok(rc == 0 && u.tls == tls && (host == NULL ||
	    strcmp(u.host, host) == 0), tls ? "URL is TLS" : "URL is plain", s);
	if (rc != 0)
		printf("# error: %s\n", err);
	url_free(&u);
}

/* a and b parse and name the same server (or not). */
static void
same_server(const char *a, const char *b, int same)
{
	struct url ua, ub;
	char err[128], what[256];
	int rc = url_parse(a, &ua, err, sizeof(err)) |
	    url_parse(b, &ub, err, sizeof(err));

	snprintf(what, sizeof(what), "%s %s", a, b);
	ok(rc == 0 && url_same_server(&ua, &ub) == same,
	    same ? "URLs name the same server" : "URLs name other servers", what);
	url_free(&ua);
	url_free(&ub);
}

/* Does proto_aux_shared() say of key k what want says? */
static void
aux_shared(const char *k, int want)
{
	ok(proto_aux_shared(k, strlen(k)) == want, want ?
	    "a key that names another lock's auxiliary keys is found" :
	    "a key whose auxiliary keys are its own passes", k);
}

/* The auxiliary keys of other, a key with a '}' but no tag, are those
 * of "{T}other" (T: its slot's tag), which proto_aux_shared() finds. */
static void
aux_shared_tagged(const char *other)
{
	size_t l;
	char *a = proto_aux_key(other, strlen(other), "fence", &l);
	char k[64];
	size_t base = strlen(a);	/* up to the NUL before "fence" */

	snprintf(k, sizeof(k), "%.*s", (int)base, a);
	aux_shared(k, 1);
	free(a);
}

static void
drops(const char *s, const char *want, int dropped)
{
	char buf[256];
	int d = url_list_drop_passwords(s, buf);

	ok(strcmp(buf, want) == 0 && d == dropped,
	    "a URL list keeps all but its passwords", s);
}

static void
redacts(const char *s, const char *want)
{
	char buf[256];

	url_redact(s, buf, sizeof(buf));
	ok(strcmp(buf, want) == 0 && strstr(buf, "secret") == NULL,
	    "URL is redacted", s);
}

/* --- config_parse ------------------------------------------------------- */

/* Remove every REDLOCK_* variable and REDISCLI_AUTH. */
static void
env_clear(void)
{
	char name[128];

	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e != NULL; e++) {
			size_t len = strcspn(*e, "=");
			if ((strncmp(*e, "REDLOCK_", 8) == 0 ||
			    strncmp(*e, "REDISCLI_AUTH=", 14) == 0) &&
			    len < sizeof(name)) {
				snprintf(name, sizeof(name), "%.*s", (int)len, *e);
				unsetenv(name);
				again = 1;
				break;
			}
		}
	}
}

/*
 * Parse "redlock ARGS..." (NULL-terminated) with the environment given
 * in env ("VAR=VALUE" words, NULL-terminated, may be NULL); returns the
 * result, c filled, message in err.
 */
static int
parse(struct config *c, char *err, size_t errlen, const char *const *env,
    ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	env_clear();
	for (; env != NULL && *env != NULL; env++) {
		char *kv = strdup(*env), *eq = strchr(kv, '=');
		*eq = '\0';
		setenv(kv, eq + 1, 1);
		free(kv);
	}
	argv[argc++] = "redlock";
	va_start(ap, env);
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start above
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return config_parse(c, argc, argv, err, errlen);
}

#define ENV(...) ((const char *const[]){ __VA_ARGS__, NULL })
/* The end of parse()'s argument words. */
#define END ((char *)NULL)

/* A usage error whose message contains want. */
static void
usage_says(int rc, const char *err, const char *want, const char *what)
{
	ok(rc == CONFIG_USAGE && strstr(err, want) != NULL,
	    "usage error naming the culprit", what);
	if (rc != CONFIG_USAGE || strstr(err, want) == NULL)
		printf("# got rc=%d '%s', want '%s'\n", rc, err, want);
}

static void
config_env_tests(void)
{
	struct config c;
	char err[512];
	int rc;

	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TTL=10m"), "n", "true", END);
	ok(rc == CONFIG_OK && c.ttl == 600000, "REDLOCK_TTL sets --ttl", "10m");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TTL=garbage"), "n", "true", END);
	usage_says(rc, err, "REDLOCK_TTL", "REDLOCK_TTL=garbage");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TTL=garbage"), "-t", "5s",
	    "n", "true", END);
	ok(rc == CONFIG_OK && c.ttl == 5000, "the command line wins", "-t 5s");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TTL="), "n", "true", END);
	ok(rc == CONFIG_OK && c.ttl == 30000, "an empty variable is unset",
	    "REDLOCK_TTL=");
	config_free(&c);
	/* Variables are looked for among the REDLOCK_ ones (config_env.c):
	 * a longer name sharing the prefix is another variable, and with
	 * more of them than are listed, getenv() finds the same. */
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TTLX=1s",
	    "REDLOCK_TTL=7s"), "n", "true", END);
	ok(rc == CONFIG_OK && c.ttl == 7000, "REDLOCK_TTLX is not REDLOCK_TTL",
	    "REDLOCK_TTL=7s");
	config_free(&c);
	{
		const char *many[72];
		char words[70][24];

		for (int i = 0; i < 70; i++) {
			snprintf(words[i], sizeof(words[i]), "REDLOCK_X%d=%d", i, i);
			many[i] = words[i];
		}
		many[70] = "REDLOCK_TTL=9s";
		many[71] = NULL;
		rc = parse(&c, err, sizeof(err), many, "n", "true", END);
		ok(rc == CONFIG_OK && c.ttl == 9000,
		    "71 REDLOCK_ variables: REDLOCK_TTL still counts",
		    "REDLOCK_TTL=9s");
		config_free(&c);
	}
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_WAIT=5s"), "-n", "n",
	    "true", END);
	ok(rc == CONFIG_OK && c.wait == 0, "-n wins over REDLOCK_WAIT", "-n");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_WAIT=5s",
	    "REDLOCK_TIMEOUT=bad", "REDLOCK_COMMAND=x", "REDLOCK_KEY=k",
	    "REDLOCK_CERT=c", "REDLOCK_NAME=x", "REDLOCK_JSON=maybe"),
	    "n", "true", END);
	ok(rc == CONFIG_OK && c.wait == 5000 && c.shell == NULL &&
	    c.tls_opts.cert == NULL, "only the options' variables count",
	    "REDLOCK_WAIT");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_ON_LOST=kill",
	    "REDLOCK_CONFLICT_EXIT_CODE=7", "REDLOCK_KILL_AFTER=1s",
	    "REDLOCK_MIN_HOLD=2s", "REDLOCK_MAX_TIME=1h", "REDLOCK_PREFIX="),
	    "n", "true", END);
	ok(rc == CONFIG_OK && c.on_lost == ON_LOST_KILL && c.conflict_exit == 7 &&
	    c.kill_after == 1000 && c.min_hold == 2000 &&
	    c.max_time == 3600000 && strcmp(c.prefix, "") == 0,
	    "every option with a value has its variable", "REDLOCK_ON_LOST...");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_ON_LOST=explode"), "n",
	    "true", END);
	usage_says(rc, err, "REDLOCK_ON_LOST", "REDLOCK_ON_LOST=explode");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_KILL_AFTER=1h"), "n",
	    "true", END);
	usage_says(rc, err, "REDLOCK_KILL_AFTER 1h", "REDLOCK_KILL_AFTER=1h");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TLS=1",
	    "REDLOCK_URL=redis://a,unix:///s,rediss://b:1",
	    "REDLOCK_TLS_CERT=/c", "REDLOCK_TLS_KEY=/k", "REDLOCK_CACERT=/ca",
	    "REDLOCK_CACERTDIR=/d", "REDLOCK_SNI=x.example"),
	    "acquire", "n", END);
	ok(rc == CONFIG_OK && c.nurls == 3 && c.urls[0].tls && !c.urls[1].tls &&
	    c.urls[2].tls && c.tls_opts.used &&
	    strcmp(c.tls_opts.cert, "/c") == 0 && strcmp(c.tls_opts.key, "/k") == 0 &&
	    strcmp(c.tls_opts.cacert, "/ca") == 0 &&
	    strcmp(c.tls_opts.cacertdir, "/d") == 0 &&
	    strcmp(c.tls_opts.sni, "x.example") == 0,
	    "REDLOCK_TLS and the TLS variables", "REDLOCK_TLS=1");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TLS=maybe"), "n", "true", END);
	usage_says(rc, err, "REDLOCK_TLS", "REDLOCK_TLS=maybe");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TLS=0"), "n", "true", END);
	ok(rc == CONFIG_OK && !c.tls_opts.used, "REDLOCK_TLS=0 is off", "0");
	config_free(&c);
}

static void
config_tls_tests(void)
{
	struct config c;
	char err[512];
	int rc;

	rc = parse(&c, err, sizeof(err), NULL, "-u", "redis://h", "n", "true", END);
	ok(rc == CONFIG_OK && !c.tls_opts.used, "plain URLs need no TLS", "redis://h");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "--tls", "--insecure", "-u",
	    "unix:///s", "-u", "redis://h", "n", "true", END);
	ok(rc == CONFIG_OK && c.urls[1].tls && !c.urls[0].tls &&
	    c.tls_opts.used && c.tls_opts.insecure, "--tls: unix:// stays plain",
	    "--tls");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "--cert", "/c.pem", "n", "true", END);
	usage_says(rc, err, "/c.pem", "--cert without --key");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_TLS_KEY=/k.pem"), "n", "true",
	    END);
	usage_says(rc, err, "/k.pem", "--key without --cert");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "--sni", "bad name", "n", "true", END);
	usage_says(rc, err, "--sni", "--sni 'bad name'");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "--cacert", "", "n", "true", END);
	usage_says(rc, err, "--cacert", "--cacert ''");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "-u", "redis://h:6379", "-u",
	    "rediss://:pw@H", "n", "true", END);
	usage_says(rc, err, "given twice", "the same server twice");
	ok(strstr(err, "pw") == NULL, "the duplicate is shown without password",
	    err);
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_URL=unix:///s?db=1, unix:///s?db=2"),
	    "n", "true", END);
	ok(rc == CONFIG_OK && c.nurls == 2, "two databases are two servers",
	    "unix:///s?db=1,2");
	config_free(&c);
}

/* Write s to a new temporary file; returns its malloc'd path. */
static char *
temp_file(const char *s, size_t n)
{
	char *path = strdup("/tmp/redlock-unit.XXXXXX");
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, s, n) != (ssize_t)n)
		abort();
	close(fd);
	return path;
}

/*
 * The SHA-1 of every server script, as the servers name it (EVALSHA).
 * A script whose text changes gets another name on every server, and
 * runs that know only the old one see NOSCRIPT: change an entry only
 * with a deliberate change of that script's text (src/lua/README).
 */
static const struct {
	const char *name, *sha1;
} script_sha1s[] = {
	{ "acquire", "cf351dd5ded6135a06daca183b08013ec039f6ba" },
	{ "acquire_any", "7e4ef7d1121fa3c145f41c65371ee9f4b85c75bf" },
	{ "bump", "dd3a7a59f4b8e182d3aea21e98fd27f4156b95ec" },
	{ "fair", "5d04b24a4b0a70ab79a238e00145f9f8dc8b7e21" },
	{ "inspect", "a805b273c4dbb92feb9ab2c87cccd8a81881179f" },
	{ "inspect_holders", "f7bf134ad4cd9e390b07b9c1dd9468be49854d53" },
	{ "inspect_key", "39ca5a995f7f3cb9251d1b6602d63f69e9beed1a" },
	{ "inspect_record", "78201cf3645ba2718ce9ebd922cf98ee8b482c49" },
	{ "notify", "478c0a2ae40e8c7a1cc139f320d618040308f24e" },
	{ "once", "50b1b6627794dd1cfb66f28f35b60ba833e9c4a6" },
	{ "once_done", "5b9f23dc1f5322b1d2429f84505b41a856212d7b" },
	{ "once_mark", "4f67993ae6317da49b0e1b6b573195a65c570532" },
	{ "record", "e2db0e222cfc9aa92f1736c785dbfb49355a98b5" },
	{ "release", "39fad8996aa2d23758789cc79e11e4df9301bfa4" },
	{ "release_done", "c1a4d95e1abc4edccdd27e8f19b3d79e329971aa" },
	{ "release_key", "6600a1968416638f1f5de826e98d664907574503" },
	{ "release_record", "995ae3fe4320b0d66e537eb45b1fca32e80ee777" },
	{ "renew", "dc0f6e2f73e1bc7a7c57a0281c6426b68e75bd31" },
	{ "renew_record", "c07e36e20776587a54121db5b990749283c86813" },
	{ "sh_acquire", "ed6a4a5672e8bd58d6adc2472bb9a5eb4c9a0c31" },
	{ "sh_release", "1da564302eb042e6769bc6d5cf80474abe9369d6" },
	{ "sh_release_mark", "636656250355ede69ef3af02f51ee5f01509df83" },
	{ "sh_release_meta", "85115da9ca4b55d945d5eb7e15ada674ae6a3321" },
	{ "sh_release_set", "7f64d71f4434a0b1447e6aafb1143bacef402658" },
	{ "sh_renew", "815beffc55a1ad25f8c950a036636c4270950639" },
	{ "sh_renew_mark", "4969455cf0f1081c5f2e1abbe7aa283390ca56e8" },
	{ "sh_renew_meta", "ea1f6c10496b68969d416be5b5dc8a0423d6a383" },
	{ "sh_renew_set", "ffd6f69b74e6f2d5193e7fb19aa4572877c6ff67" },
	{ "stop", "b2c816222dc35b1019715cff0b1c03c3f64d0908" },
	{ "unqueue", "281feaa53628cf768a473653005d97afa4b0e291" },
	{ "wake_push", "e34ebdebee4838b21808c5fae5f2a2e39e1e162b" },
};

/* Every embedded script has the SHA-1 of the list, and every script of
 * the list is embedded. */
static void
script_tests(void)
{
	size_t want = sizeof(script_sha1s) / sizeof(script_sha1s[0]), have;

	for (have = 0; lua_scripts[have].name != NULL; have++) {
		const struct lua_script *s = &lua_scripts[have];
		const char *sha1 = "(not in the list)";
		char got[41];

		for (size_t i = 0; i < want; i++)
			if (strcmp(script_sha1s[i].name, s->name) == 0)
				sha1 = script_sha1s[i].sha1;
		sha1_hex(s->text, strlen(s->text), got);
		ok(strcmp(got, sha1) == 0, "script keeps its SHA-1", s->name);
		if (strcmp(got, sha1) != 0)
			printf("# got %s, want %s\n", got, sha1);
	}
	ok(have == want, "every listed script is embedded", "lua_scripts");
	/* The SHA-1 args_script() sends is its text's (tools/luagen.sh
	 * writes it beside the text at build time). */
	for (int i = 0; i < SCRIPT_COUNT; i++) {
		char got[41];

		sha1_hex(script_table[i].text, strlen(script_table[i].text),
		    got);
		ok(strcmp(got, script_table[i].sha1) == 0,
		    "an entry's listed SHA-1 is its text's", "script_table");
	}
	/* lock.c reads the three acquire scripts' array replies alike. */
	ok(REPLY_ACQUIRE_CODE == REPLY_ACQUIRE_ANY_CODE &&
	    REPLY_SH_ACQUIRE_CODE == REPLY_ACQUIRE_ANY_CODE &&
	    REPLY_ACQUIRE_VALUE == REPLY_ACQUIRE_ANY_VALUE &&
	    REPLY_SH_ACQUIRE_VALUE == REPLY_ACQUIRE_ANY_VALUE &&
	    REPLY_SH_ACQUIRE_TOKEN == REPLY_ACQUIRE_ANY_TOKEN,
	    "the acquire scripts' replies share one layout", "--@reply");
}

static void
config_password_tests(void)
{
	struct config c;
	char err[512], var[300];
	char *pw = temp_file("s3cret\r\nsecond line\n", 21);
	char *empty = temp_file("\nx\n", 3);
	int rc;

	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_PASSWORD=env",
	    "REDISCLI_AUTH=cli"), "--password-file", pw, "n", "true", END);
	ok(rc == CONFIG_OK && c.password && strcmp(c.password, "s3cret") == 0,
	    "--password-file: the first line without its end, before "
	    "$REDLOCK_PASSWORD", pw);
	config_free(&c);
	snprintf(var, sizeof(var), "REDLOCK_PASSWORD_FILE=%s", pw);
	rc = parse(&c, err, sizeof(err), ENV(var), "n", "true", END);
	ok(rc == CONFIG_OK && c.password && strcmp(c.password, "s3cret") == 0,
	    "$REDLOCK_PASSWORD_FILE", pw);
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV(var), "--password-file", empty,
	    "n", "true", END);
	usage_says(rc, err, empty, "--password-file wins, and its empty line");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), NULL, "--password-file", "/nonexistent/pw",
	    "n", "true", END);
	usage_says(rc, err, "/nonexistent/pw", "a missing password file");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDLOCK_PASSWORD=env",
	    "REDISCLI_AUTH=cli"), "n", "true", END);
	ok(rc == CONFIG_OK && strcmp(c.password, "env") == 0,
	    "$REDLOCK_PASSWORD before $REDISCLI_AUTH", "env");
	config_free(&c);
	rc = parse(&c, err, sizeof(err), ENV("REDISCLI_AUTH=cli"), "n", "true", END);
	ok(rc == CONFIG_OK && strcmp(c.password, "cli") == 0,
	    "$REDISCLI_AUTH last", "cli");
	config_free(&c);
	unlink(pw);
	unlink(empty);
	free(pw);
	free(empty);
	env_clear();
}

/* TLS, query parameters, IPv6 zones, the same server twice. */
static void
url_more_tests(void)
{
	url_bad("rediss://host:0");
	url_bad("redis://[zz::1]");
	url_bad("redis://[fe80::1%lo]");
	url_bad("redis://[fe80::1%25]");
	url_bad("redis://[fe80::1%25a/b]");
	url_bad_why("redis://h:1/1?x=y", "unknown query parameter 'x'");
	url_bad_why("unix:///s?db=1&db=2", "'db' given twice");
	url_bad_why("unix:///s?db", "'db' needs a value");
	url_bad_why("unix:///s?foo=1", "unknown query parameter 'foo'");
	url_bad_why("redis://h?db=1", "'db' does not apply");
	url_bad_why("redis://h/1#x", "'#'");
	url_tls("rediss://h", 1, "h");
	url_tls("REDISS://h:1/2", 1, "h");
	url_tls("redis://h", 0, "h");
	url_tls("unix:///s", 0, NULL);
	url_tls("redis://[fe80::1%25lo]:1", 0, "fe80::1%lo");
	url_tls("rediss://[fe80::1%25eth0.2]", 1, "fe80::1%eth0.2");
	same_server("redis://h:6379", "rediss://u:p@H", 1);
	same_server("redis://h/1", "redis://h/2", 0);
	same_server("redis://h:1", "redis://h:2", 0);
	same_server("redis://[::1]", "redis://[0:0::1]", 1);
	same_server("redis://127.0.0.1", "redis://localhost", 0);
	same_server("unix:///s", "unix:///s?db=0", 1);
	same_server("unix:///s", "redis://s", 0);
	ok(url_host_is_ip("127.0.0.1") && url_host_is_ip("::1") &&
	    url_host_is_ip("fe80::1%lo") && !url_host_is_ip("localhost") &&
	    !url_host_is_ip("1.2.3"), "url_host_is_ip", "addresses and names");
}

/* fmt_ll(v) writes what snprintf("%lld") does. */
static void
fmt_ll_ok(long long v)
{
	char got[FMT_LL_SIZE], want[32];
	size_t len = fmt_ll(got, v);

	snprintf(want, sizeof(want), "%lld", v);
	ok(strcmp(got, want) == 0 && len == strlen(want),
	    "fmt_ll writes what %lld does", want);
}

/* fmt_cat(size, a, b) writes and returns what snprintf("%s%s") does. */
static void
fmt_cat_ok(size_t size, const char *a, const char *b)
{
	char got[16] = "xxxxxxxxxxxxxxx", want[16] = "xxxxxxxxxxxxxxx";
	size_t len = fmt_cat(got, size, a, b, (char *)NULL);
	int w = snprintf(want, size, "%s%s", a, b);

	ok(memcmp(got, want, sizeof(got)) == 0 && len == (size_t)w,
	    "fmt_cat writes what %s%s does", b);
}

static void
fmt_tests(void)
{
	static const unsigned char u[16] = { 0x12, 0x3e, 0x45, 0x67, 0xe8,
	    0x9b, 0x42, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00 };
	char id[37];

	fmt_ll_ok(0);
	fmt_ll_ok(7);
	fmt_ll_ok(-1);
	fmt_ll_ok(6379);
	fmt_ll_ok(1234567890123LL);
	fmt_ll_ok(9223372036854775807LL);
	fmt_ll_ok(-9223372036854775807LL - 1);
	fmt_cat_ok(16, "REDLOCK_", "TTL");
	fmt_cat_ok(16, "", "");
	fmt_cat_ok(16, "REDLOCK_", "LOCK_DELAY");	/* cut at 15 */
	fmt_cat_ok(4, "abcdef", "gh");
	fmt_cat_ok(1, "a", "b");
	fmt_cat_ok(0, "a", "b");
	fmt_uuid(u, id);
	ok(strcmp(id, "123e4567-e89b-42d3-a456-426614174000") == 0,
	    "fmt_uuid writes a UUID as uuid_unparse_lower() does", id);
}

int
main(void)
{
	fmt_tests();
	duration_ok("0", 0);
	duration_ok("1", 1000);
	duration_ok("30s", 30000);
	duration_ok("250ms", 250);
	duration_ok("1.5s", 1500);
	duration_ok("1.5", 1500);
	duration_ok("10m", 600000);
	duration_ok("2h", 7200000);
	duration_ok(".5s", 500);
	duration_ok("5.", 5000);
	duration_ok("0.0001s", 1);
	duration_ok("2400h", 2400LL * 3600 * 1000);
	duration_ok("1.000000001s", 1001);
	duration_ok(".240000001s", 241);
	duration_ok(".07777777h", 280000);
	duration_bad("");
	duration_bad("s");
	duration_bad(".");
	duration_bad("-1");
	duration_bad("+1");
	duration_bad("1e3");
	duration_bad("1e30");
	duration_bad("1 s");
	duration_bad(" 1");
	duration_bad("1sec");
	duration_bad("1d");
	duration_bad("1.2.3");
	duration_bad("2401h");
	duration_bad("99999999999999999999999");
	duration_bad("0x10");
	duration_bad("8640000.00000000000001");
	duration_bad("1.0000000001s");

	url_ok("redis://127.0.0.1", URL_TCP, "127.0.0.1", 6379, NULL, 0,
	    NULL, NULL);
	url_ok("redis://localhost:6380/3", URL_TCP, "localhost", 6380, NULL,
	    3, NULL, NULL);
	url_ok("redis://:secret@host", URL_TCP, "host", 6379, NULL, 0, NULL,
	    "secret");
	url_ok("redis://alice:s%40cret@host:1/0", URL_TCP, "host", 1, NULL, 0,
	    "alice", "s@cret");
	url_ok("redis://a:b:c@h", URL_TCP, "h", 6379, NULL, 0, "a", "b:c");
	url_ok("redis://[::1]:7000", URL_TCP, "::1", 7000, NULL, 0, NULL,
	    NULL);
	url_ok("redis://h/", URL_TCP, "h", 6379, NULL, 0, NULL, NULL);
	url_ok("unix:///tmp/r.sock", URL_UNIX, NULL, 0, "/tmp/r.sock", 0,
	    NULL, NULL);
	url_ok("unix:///tmp/r.sock?db=2", URL_UNIX, NULL, 0, "/tmp/r.sock",
	    2, NULL, NULL);
	url_bad("");
	url_bad("127.0.0.1:6379");
	url_bad("http://host");
	url_bad("redis://");
	url_bad("redis://host:");
	url_bad("redis://host:0");
	url_bad("redis://host:65536");
	url_bad("redis://host:http");
	url_bad("redis://host/x");
	url_bad("redis://host/-1");
	url_bad("redis://host/1/2");
	url_bad("redis://:p%zz@host");
	url_bad("redis://:p%4@host");
	url_bad("redis://:p%00@host");
	url_bad("redis://[::1");
	url_bad("redis://ho st");
	url_bad("unix://");
	url_bad("unix://relative.sock");
	url_bad("unix:///tmp/r.sock?db=x");
	url_bad("unix:///tmp/r.sock?foo=1");
	url_bad("redis://h%zz");
	url_bad("redis://:hunter2/x@host");
	sentinel_ok("redis+sentinel://h/mymaster",
	    "mymaster 0 - - 0 h:26379");
	sentinel_ok("redis+sentinel://a:1,b,[::1]:3/m/2",
	    "m 2 - - 0 a:1,b:26379,::1:3");
	sentinel_ok("rediss+sentinel://u:p%2Cw@s1:26380,s2/svc%20a/",
	    "svc a 0 u p,w 1 s1:26380,s2:26379");
	sentinel_ok("redis+sentinel://:secret@10.0.0.1,10.0.0.2/m",
	    "m 0 - secret 0 10.0.0.1:26379,10.0.0.2:26379");
	url_bad("redis+sentinel://h");
	url_bad("redis+sentinel://h/");
	url_bad("redis+sentinel://h//1");
	url_bad("redis+sentinel:///m");
	url_bad("redis+sentinel://a,/m");
	url_bad("redis+sentinel://,a/m");
	url_bad("redis+sentinel://a,,b/m");
	url_bad("redis+sentinel://a:0/m");
	url_bad("redis+sentinel://a:x/m");
	url_bad("redis+sentinel://a/m/x");
	url_bad("redis+sentinel://a/m?db=1");
	url_bad("redis+sentinel://a/m%zz");
	url_bad("redis+sentinel://[::1/m");
	url_bad("redis+sentinel://a b/m");
	url_bad("redis+sentinel://:p%00@a/m");
	env_splits("redis+sentinel://a:1,b:2/m",
	    "m via a:1,...");
	env_splits("redis+sentinel://a,b/m,redis://c:7,redis+sentinel://d/n",
	    "m via a:26379,...|c:7|n via d:26379");
	env_splits("redis+sentinel://:x,y@a,b/m, rediss+sentinel://c,d/n/1",
	    "m via a:26379,...|n via c:26379,...");
	redacts("redis+sentinel://:secret@a,b/m", "redis+sentinel://***@a,b/m");
	redacts("redis://:secret@h:1/2", "redis://***@h:1/2");
	redacts("redis://u:secret@h", "redis://***@h");
	redacts("redis://h:1", "redis://h:1");
	redacts("redis://:secret/x@h", "redis://***@h");
	redacts("redis://:se?cret@h:1", "redis://***@h:1");
	redacts("redis://:secret#@h", "redis://***@h");
	/* A query's values (redis-py reads ?password=). */
	redacts("unix:///s?password=secret", "unix:///s?password=***");
	redacts("redis://:secret@h:1?password=secret&db=2",
	    "redis://***@h:1?password=***&db=***");
	redacts("redis://h:1/0?x&y=secret", "redis://h:1/0?x&y=***");
	redacts("redis://h?=secret", "redis://h?=***");
	/* The '@' forgotten: what follows the host's ':' is no port. */
	redacts("redis://admin:secret", "redis://admin:***");
	redacts("redis://:secret", "redis://:***");
	redacts("rediss://u:secret/0", "rediss://u:***");
	redacts("redis:/h:secret", "redis:/h:***");
	redacts("redis://h:6379/0", "redis://h:6379/0");
	redacts("redis://[::1]:6379", "redis://[::1]:6379");
	redacts("redis://[::1]/2", "redis://[::1]/2");
	drops("redis://u:secret@h:1/2", "redis://u@h:1/2", 1);
	drops("redis://:secret@h", "redis://h", 1);
	drops("redis://u@h", "redis://u@h", 0);
	drops("redis://h1,rediss://:se@cret@h2:7/1", "redis://h1,rediss://h2:7/1", 1);
	drops("redis+sentinel://u:secret@s1:1,s2:2/svc,unix:///s?db=1",
	    "redis+sentinel://u@s1:1,s2:2/svc,unix:///s?db=1", 1);
	drops("", "", 0);
	/* Keys whose auxiliary keys another key has too (-p ''): "{X}" is
	 * X's base, "{T}X" that of an X with a '}' but no tag. */
	aux_shared("{deploy}", 1);
	aux_shared("{a{b}", 1);
	aux_shared_tagged("a}b");
	aux_shared_tagged("}");
	aux_shared("deploy", 0);
	aux_shared("redlock:{deploy}", 0);
	aux_shared("{deploy}x", 0);
	aux_shared("{}", 0);
	aux_shared("{a}b}c{", 0);

	url_more_tests();
	config_env_tests();
	config_tls_tests();
	config_password_tests();
	script_tests();

	printf("1..%d\n", n);
	return failed != 0;
}
