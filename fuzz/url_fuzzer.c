/*
 * url_fuzzer.c - libFuzzer target for src/url.c and src/url_redact.c:
 * url_parse(), url_name() and url_redact().
 *
 * The input is one URL (bytes up to the first NUL; argv cannot hold a
 * NUL).  Besides what ASan/UBSan/LSan catch, it checks the contract:
 *   - url_parse() returns 0 with a usable struct url (TCP: host not
 *     empty, port 1..65535, TLS exactly for rediss://; unix: an absolute
 *     path, never TLS; Sentinel: at least one sentinel, each with a host
 *     and a port, and a service name; db >= 0) that names the same
 *     server as itself, or -1 with a reason;
 *   - url_free() after either (LSan sees what is left over);
 *   - url_redact(), which is what an "invalid URL" message shows, hides
 *     everything between "://" and the last '@' (the user information,
 *     which may hold a password, whatever characters the password has)
 *     and every value of the query after it; without an '@', what
 *     follows a host's ':' that is not a port (a forgotten '@').
 * A violated check calls abort(), which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url.h"

/* A broken promise: report it with the input, and crash. */
#define check(ok, what, input) do { if (!(ok)) broken(what, input); } while (0)

static _Noreturn void
broken(const char *what, const char *input)
{
	fprintf(stderr, "url_fuzzer: %s for input '%s'\n", what, input);
	abort();
}

/* The query q (from its '?', joined by '&') with each value as "***",
 * appended to want: one piece at a time, as a reader would. */
static void
want_query(const char *q, char *want, size_t len)
{
	const char *start = q;
	size_t o = strlen(want);

	for (int in_value = 0; *q != '\0' && o + 5 < len; q++) {
		if (*q == '&' || q == start)
			in_value = 0;
		else if (*q == '=' && !in_value) {
			in_value = 1;
			memcpy(want + o, "=***", 4);
			o += 4;
			continue;
		}
		if (!in_value)
			want[o++] = *q;
	}
	want[o] = '\0';
}

/* In s without an '@': where what follows the last ':' of the host
 * part (after "://" up to '/', '?' or '#'; all of s without "://"),
 * not after a ']', starts when it holds something other than digits,
 * which may be a password whose '@' was forgotten; else NULL. */
static const char *
not_a_port(const char *s)
{
	const char *a = strstr(s, "://"), *e, *colon = NULL;

	e = a != NULL ? a + 3 + strcspn(a + 3, "/?#") : s + strlen(s);
	for (const char *c = a != NULL ? a + 3 : s; c < e; c++)
		if (*c == ':')
			colon = c;
		else if (*c == ']')
			colon = NULL;
	if (colon == NULL)
		return NULL;
	for (const char *d = colon + 1; d < e; d++)
		if (*d < '0' || *d > '9')
			return colon + 1;
	return NULL;
}

/* What url_redact(s) must print: s without such an '@', or up to a
 * ':' that no port follows (not_a_port()) and then "***"; else s with
 * everything before its last '@' from after "://" (when "://" comes
 * before it) or from the start replaced by "***", parsed or not, a
 * unix:// URL too; and from the first '?' after that '@' (or in s) on,
 * each query value as "***". */
static void
check_redact(const char *s, size_t bufsize)
{
	char out[300], want[20000];
	const char *auth = strstr(s, "://"), *at = strrchr(s, '@');
	const char *q = strchr(at != NULL ? at : s, '?');
	const char *np = at == NULL ? not_a_port(s) : NULL;
	int before = q != NULL ? (int)(q - s) : (int)strlen(s);

	if (bufsize > sizeof(out))
		bufsize = sizeof(out);
	url_redact(s, out, bufsize);
	if (np != NULL) {
		snprintf(want, sizeof(want), "%.*s***", (int)(np - s), s);
		q = NULL;
	} else if (at != NULL) {
		const char *from = auth != NULL && auth < at ? auth + 3 : s;
		snprintf(want, sizeof(want), "%.*s***%.*s", (int)(from - s), s,
		    before - (int)(at - s), at);
	} else
		snprintf(want, sizeof(want), "%.*s", before, s);
	if (q != NULL)
		want_query(q, want, sizeof(want));
	want[bufsize - 1] = '\0';	/* url_redact truncates like snprintf */
	check(strcmp(out, want) == 0,
	    "url_redact shows part of the user information or a query value", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, err[128], name[128];
	struct url u;
	int rc;

	if (size > 4096)
		return 0;
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	memset(err, 0, sizeof(err));
	rc = url_parse(s, &u, err, sizeof(err));
	check(rc == 0 || rc == -1, "url_parse returned neither 0 nor -1", s);
	if (rc == 0) {
		check(u.db >= 0, "negative db", s);
		check(url_same_server(&u, &u), "a URL is not its own server", s);
		if (u.kind == URL_TCP) {
			check(u.host != NULL && u.host[0] != '\0', "no host", s);
			check(u.port >= 1 && u.port <= 65535, "bad port", s);
			check(u.path == NULL, "TCP URL with a path", s);
			check(u.tls == (strncasecmp(s, "rediss://", 9) == 0),
			    "TLS is not rediss://", s);
			(void)url_host_is_ip(u.host);
		} else if (u.kind == URL_SENTINEL) {
			check(u.nsentinels >= 1, "no sentinel", s);
			for (int i = 0; i < u.nsentinels; i++) {
				check(u.sentinels[i].host != NULL &&
				    u.sentinels[i].host[0] != '\0',
				    "sentinel without a host", s);
				check(u.sentinels[i].port >= 1 &&
				    u.sentinels[i].port <= 65535,
				    "bad sentinel port", s);
			}
			check(u.service != NULL && u.service[0] != '\0',
			    "no service name", s);
			check(u.host == NULL && u.path == NULL,
			    "Sentinel URL with a host or path", s);
			check(u.tls == (strncasecmp(s, "rediss+", 7) == 0),
			    "TLS is not rediss+sentinel://", s);
		} else {
			check(!u.tls, "a TLS unix:// URL", s);
			check(u.kind == URL_UNIX, "bad kind", s);
			check(u.path != NULL && u.path[0] == '/',
			    "unix URL without an absolute path", s);
			check(u.user == NULL && u.password == NULL,
			    "unix URL with credentials", s);
		}
		url_name(&u, name, sizeof(name));
		check(name[0] != '\0', "url_name is empty", s);
	} else
		check(err[0] != '\0', "url_parse failed without a reason", s);
	url_free(&u);

	/* The message buffer in config.c is 256 bytes; also try a small
	 * one for the truncation paths. */
	check_redact(s, 256);
	check_redact(s, 8);
	free(s);
	return 0;
}
