/*
 * unit.c - unit tests of the pure parsers (DURATION, URL, the URL list
 * of $REDLOCK_URL), printing TAP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "url.h"

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

static void
redacts(const char *s, const char *want)
{
	char buf[256];

	url_redact(s, buf, sizeof(buf));
	ok(strcmp(buf, want) == 0 && strstr(buf, "secret") == NULL,
	    "URL is redacted", s);
}

int
main(void)
{
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
	url_bad("rediss://host");
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

	printf("1..%d\n", n);
	return failed != 0;
}
