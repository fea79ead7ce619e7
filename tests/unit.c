/*
 * unit.c - unit tests of the pure parsers (DURATION, URL), printing TAP.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
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
	redacts("redis://:secret@h:1/2", "redis://***@h:1/2");
	redacts("redis://u:secret@h", "redis://***@h");
	redacts("redis://h:1", "redis://h:1");
	redacts("redis://:secret/x@h", "redis://***@h");
	redacts("redis://:se?cret@h:1", "redis://***@h:1");
	redacts("redis://:secret#@h", "redis://***@h");

	printf("1..%d\n", n);
	return failed != 0;
}
