/*
 * url.c - parse redis://[[user]:password@]host[:port][/db],
 * unix:///path[?db=N] and
 * redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/SERVICE[/db]
 * (rediss+sentinel:// likewise).  Pure functions: no I/O, no exit().
 * Error messages never quote the user information part, which may
 * hold a password.
 */
#include "url.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX_DB 1000000

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Copy n bytes of s, decoding %XX escapes.  Returns a malloc'd string,
 * or NULL on a malformed escape, an escaped NUL, or no memory.
 */
static char *
pct_decode(const char *s, size_t n)
{
	char *out, *o;

	if (n > SIZE_MAX / 2 || (out = malloc(n + 1)) == NULL)
		return NULL;
	o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= n) {
			free(out);
			return NULL;
		}
		int hi = hexval((unsigned char)s[i + 1]);
		int lo = hexval((unsigned char)s[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return out;
}

/* Parse a decimal integer of s[0..n) within [min, max]; -1 if invalid. */
static long
parse_uint(const char *s, size_t n, long min, long max)
{
	long v = 0;

	if (n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < min || v > max ? -1 : v;
}

static int
fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -1;
}

static int
parse_unix(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *q = strchr(s, '?');
	size_t plen = q ? (size_t)(q - s) : strlen(s);

	if (plen == 0 || s[0] != '/')
		return fail(err, errlen, "needs an absolute socket path");
	if (q != NULL) {
		long db;

		if (strncmp(q, "?db=", 4) != 0)
			return fail(err, errlen, "only ?db=N is understood");
		if ((db = parse_uint(q + 4, strlen(q + 4), 0, URL_MAX_DB)) < 0)
			return fail(err, errlen, "bad database number");
		u->db = (int)db;
	}
	if ((u->path = pct_decode(s, plen)) == NULL)
		return fail(err, errlen, "bad %-escape in the path");
	u->kind = URL_UNIX;
	return 0;
}

static int
parse_userinfo(const char *s, size_t n, struct url *u, char *err,
    size_t errlen)
{
	const char *colon = memchr(s, ':', n);
	size_t ulen = colon ? (size_t)(colon - s) : n;

	if (ulen > 0 && (u->user = pct_decode(s, ulen)) == NULL)
		return fail(err, errlen, "bad %-escape in the user name");
	if (colon != NULL) {
		u->password = pct_decode(colon + 1, n - ulen - 1);
		if (u->password == NULL)
			return fail(err, errlen, "bad %-escape in the password");
		if (u->password[0] == '\0') {
			free(u->password);
			u->password = NULL;
		}
	}
	return 0;
}

static int
parse_tcp(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *end = s + strcspn(s, "/?#");
	const char *at = NULL, *h, *hend, *p;
	long port = 6379, db = 0;

	for (p = s; p < end; p++)
		if (*p == '@')
			at = p;
	if (at != NULL) {
		if (parse_userinfo(s, (size_t)(at - s), u, err, errlen) < 0)
			return -1;
		h = at + 1;
	} else
		h = s;
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (hend == NULL || hend == h + 1)
			return fail(err, errlen, "bad IPv6 address");
		p = hend + 1;
		h++;
	} else {
		hend = memchr(h, ':', (size_t)(end - h));
		if (hend == NULL)
			hend = end;
		p = hend;
	}
	if (hend == h)
		return fail(err, errlen, "missing host");
	if (p < end) {
		if (*p != ':' ||
		    (port = parse_uint(p + 1, (size_t)(end - p - 1), 1, 65535)) < 0)
			return fail(err, errlen, "bad port");
	}
	if (*end == '/' && end[1] != '\0') {
		if ((db = parse_uint(end + 1, strlen(end + 1), 0, URL_MAX_DB)) < 0)
			return fail(err, errlen, "bad database number");
	} else if (*end == '?' || *end == '#')
		return fail(err, errlen, "unexpected query or fragment");
	u->host = strndup(h, (size_t)(hend - h));
	if (u->host == NULL)
		return fail(err, errlen, "out of memory");
	for (p = u->host; *p; p++)
		if (!isalnum((unsigned char)*p) && strchr(".-_:%", *p) == NULL)
			return fail(err, errlen, "bad host name");
	if (h[-1] != '[' && (strchr(u->host, '%') || strchr(u->host, ':')))
		return fail(err, errlen, "bad host name");
	u->port = (int)port;
	u->db = (int)db;
	u->kind = URL_TCP;
	return 0;
}

/* The port of a sentinel whose URL names none (Redis Sentinel's own). */
#define URL_SENTINEL_PORT 26379

/*
 * Parse one "host[:port]" of a Sentinel URL's list, s[0..n), into h.
 * An IPv6 address comes in brackets.  Returns 0, or -1 with a reason.
 */
static int
parse_sentinel_host(const char *s, size_t n, struct url_sentinel *h,
    char *err, size_t errlen)
{
	const char *end = s + n, *hend, *p;
	long port = URL_SENTINEL_PORT;
	int v6 = n > 0 && *s == '[';

	if (v6) {
		hend = memchr(s, ']', n);
		if (hend == NULL || hend == s + 1)
			return fail(err, errlen, "bad IPv6 address");
		p = hend + 1;
		s++;
	} else {
		if ((hend = memchr(s, ':', n)) == NULL)
			hend = end;
		p = hend;
	}
	if (hend == s)
		return fail(err, errlen, "missing sentinel host");
	if (p < end && (*p != ':' ||
	    (port = parse_uint(p + 1, (size_t)(end - p - 1), 1, 65535)) < 0))
		return fail(err, errlen, "bad sentinel port");
	if ((h->host = strndup(s, (size_t)(hend - s))) == NULL)
		return fail(err, errlen, "out of memory");
	for (p = h->host; *p; p++)
		if (!isalnum((unsigned char)*p) &&
		    strchr(v6 ? ".-_:%" : ".-_", *p) == NULL)
			return fail(err, errlen, "bad sentinel host name");
	h->port = (int)port;
	return 0;
}

/*
 * After the host list: "/SERVICE[/db]".  The service name (the master's
 * name in the sentinels' configuration) may hold %-escapes.
 */
static int
parse_service(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *end;
	long db = 0;

	if (*s != '/' || s[1] == '\0' || s[1] == '/' || s[1] == '?' ||
	    s[1] == '#')
		return fail(err, errlen, "missing the master's name (/SERVICE)");
	s++;
	end = s + strcspn(s, "/?#");
	if (*end == '/' && end[1] != '\0') {
		if ((db = parse_uint(end + 1, strlen(end + 1), 0, URL_MAX_DB)) < 0)
			return fail(err, errlen, "bad database number");
	} else if (*end == '?' || *end == '#')
		return fail(err, errlen, "unexpected query or fragment");
	if ((u->service = pct_decode(s, (size_t)(end - s))) == NULL)
		return fail(err, errlen, "bad %-escape in the service name");
	u->db = (int)db;
	return 0;
}

/*
 * The part of a Sentinel URL after "://": the master's user information,
 * the sentinels (port 26379 unless given), the service and the db.
 */
static int
parse_sentinel(const char *s, struct url *u, int tls, char *err,
    size_t errlen)
{
	const char *end = s + strcspn(s, "/?#"), *at = NULL, *h, *p;
	int n = 1;

	u->kind = URL_SENTINEL;
	u->tls = tls;
	for (p = s; p < end; p++)
		if (*p == '@')
			at = p;
	if (at != NULL &&
	    parse_userinfo(s, (size_t)(at - s), u, err, errlen) < 0)
		return -1;
	h = at != NULL ? at + 1 : s;
	for (p = h; p < end; p++)
		n += *p == ',';
	if ((u->sentinels = calloc((size_t)n, sizeof(*u->sentinels))) == NULL)
		return fail(err, errlen, "out of memory");
	u->nsentinels = n;
	for (int i = 0; i < n; i++) {
		const char *c = memchr(h, ',', (size_t)(end - h));

		if (c == NULL)
			c = end;
		if (parse_sentinel_host(h, (size_t)(c - h), &u->sentinels[i],
		    err, errlen) < 0)
			return -1;
		h = c + 1;
	}
	return parse_service(end, u, err, errlen);
}

/*
 * Parse s into u (which the caller frees with url_free(), also after an
 * error).  Returns 0, or -1 with a reason in err.
 */
int
url_parse(const char *s, struct url *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	if (strncmp(s, "redis://", 8) == 0)
		return parse_tcp(s + 8, u, err, errlen);
	if (strncmp(s, "unix://", 7) == 0)
		return parse_unix(s + 7, u, err, errlen);
	if (strncmp(s, "redis+sentinel://", 17) == 0)
		return parse_sentinel(s + 17, u, 0, err, errlen);
	if (strncmp(s, "rediss+sentinel://", 18) == 0)
		return parse_sentinel(s + 18, u, 1, err, errlen);
	if (strncmp(s, "rediss://", 9) == 0)
		return fail(err, errlen, "TLS (rediss://) is not supported");
	return fail(err, errlen,
	    "expected redis://host[:port][/db] or unix:///path");
}

void
url_free(struct url *u)
{
	free(u->host);
	free(u->user);
	if (u->password != NULL) {
		explicit_bzero(u->password, strlen(u->password));
		free(u->password);
	}
	free(u->path);
	for (int i = 0; i < u->nsentinels; i++)
		free(u->sentinels[i].host);
	free(u->sentinels);
	free(u->service);
	memset(u, 0, sizeof(*u));
}

/* Name a server for messages, without credentials: "host:port", "path",
 * "SERVICE via host:port" (the first sentinel). */
void
url_name(const struct url *u, char *buf, size_t len)
{
	if (u->kind == URL_SENTINEL)
		snprintf(buf, len, strchr(u->sentinels[0].host, ':') != NULL ?
		    "%s via [%s]:%d%s" : "%s via %s:%d%s", u->service,
		    u->sentinels[0].host, u->sentinels[0].port,
		    u->nsentinels > 1 ? ",..." : "");
	else if (u->kind == URL_UNIX)
		snprintf(buf, len, "%s", u->path);
	else if (strchr(u->host, ':') != NULL)
		snprintf(buf, len, "[%s]:%d", u->host, u->port);
	else
		snprintf(buf, len, "%s:%d", u->host, u->port);
}

/*
 * Copy s for an error message with any user information (which may
 * hold a password) replaced by "***".
 */
void
url_redact(const char *s, char *buf, size_t len)
{
	const char *auth = strstr(s, "://"), *at;

	if (auth == NULL || strncmp(s, "unix://", 7) == 0) {
		snprintf(buf, len, "%s", s);	/* a socket path has no password */
		return;
	}
	auth += 3;
	/* The last '@' anywhere: a password may hold '/', '?' or '#', and
	 * hiding a little too much is better than showing a secret. */
	at = strrchr(auth, '@');
	if (at == NULL)
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "%.*s***%s", (int)(auth - s), s, at);
}
