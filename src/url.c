/*
 * url.c - parse the URLs that name a server:
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://...               the same, over TLS
 *   unix:///path[?db=N]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/SERVICE[/db]
 *   rediss+sentinel://...      the same, over TLS
 *
 * Pure functions: no I/O, no exit().  Error messages never quote the
 * user information part, which may hold a password.  A new scheme is a
 * line in schemes[], a new query parameter a line in params[].
 */
#include "url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "fmt.h"

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

/* --- query parameters ------------------------------------------------ */

static int
param_db(struct url *u, const char *v, size_t n, char *err, size_t errlen)
{
	long db = parse_uint(v, n, 0, URL_MAX_DB);

	if (db < 0)
		return fail(err, errlen, "bad database number");
	u->db = (int)db;
	return 0;
}

/* The query parameters understood, and the kinds of URL they apply to. */
static const struct param {
	const char *name;
	unsigned kinds;		/* 1u << enum url_kind */
	int (*set)(struct url *, const char *, size_t, char *, size_t);
} params[] = {
	{ "db", 1u << URL_UNIX, param_db },
};

#define NPARAMS (sizeof(params) / sizeof(params[0]))

/*
 * Apply the query q (after the '?': name=value pairs joined by '&') to
 * u.  A parameter that is unknown, meant for another kind of URL, given
 * twice or without a value is an error naming it (names are shown, never
 * values).
 */
static int
parse_query(const char *q, struct url *u, char *err, size_t errlen)
{
	int seen[NPARAMS + 1] = { 0 };

	while (*q != '\0') {
		size_t n = strcspn(q, "&"), k = strcspn(q, "=&"), i;
		int shown = k > 40 ? 40 : (int)k;

		for (i = 0; i < NPARAMS; i++)
			if (strlen(params[i].name) == k &&
			    memcmp(params[i].name, q, k) == 0)
				break;
		if (k == 0)
			return fail(err, errlen, "empty query parameter");
		if (i == NPARAMS) {
			snprintf(err, errlen, "unknown query parameter '%.*s'",
			    shown, q);
			return -1;
		}
		if (!(params[i].kinds & (1u << u->kind))) {
			snprintf(err, errlen, "query parameter '%s' does not "
			    "apply to this kind of URL", params[i].name);
			return -1;
		}
		if (seen[i]++) {
			snprintf(err, errlen, "query parameter '%s' given twice",
			    params[i].name);
			return -1;
		}
		if (k == n) {
			snprintf(err, errlen, "query parameter '%s' needs a value",
			    params[i].name);
			return -1;
		}
		if (params[i].set(u, q + k + 1, n - k - 1, err, errlen) < 0)
			return -1;
		q += n + (q[n] == '&');
	}
	return 0;
}

/* --- unix:// ------------------------------------------------------------ */

static int
parse_unix(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *q = strchr(s, '?');
	size_t plen = q ? (size_t)(q - s) : strlen(s);

	u->kind = URL_UNIX;
	if (plen == 0 || s[0] != '/')
		return fail(err, errlen, "needs an absolute socket path");
	if (q != NULL && parse_query(q + 1, u, err, errlen) < 0)
		return -1;
	if ((u->path = pct_decode(s, plen)) == NULL)
		return fail(err, errlen, "bad %-escape in the path");
	/* Longer, connect() would take another socket: its first bytes. */
	if (strlen(u->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, errlen, "the socket path is longer than the %zu "
		    "bytes a unix socket's address holds",
		    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -1;
	}
	return 0;
}

/* --- redis:// and rediss:// ------------------------------------------------ */

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

/*
 * The IPv6 address s[0..n) of a "[...]" host, with an optional zone
 * written "%25zone" (RFC 6874) and kept as "addr%zone", the form
 * getaddrinfo() takes.  Sets *host, or returns -1.
 */
static int
parse_ipv6(const char *s, size_t n, char **host, char *err, size_t errlen)
{
	const char *pct = memchr(s, '%', n);
	size_t alen = pct ? (size_t)(pct - s) : n;
	char addr[INET6_ADDRSTRLEN + 1], *zone = NULL;
	unsigned char bin[16];

	if (alen == 0 || alen >= sizeof(addr))
		return fail(err, errlen, "bad IPv6 address");
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET6, addr, bin) != 1)
		return fail(err, errlen, "bad IPv6 address");
	if (pct != NULL) {
		size_t zlen = n - alen;
		if (zlen <= 3 || strncmp(pct, "%25", 3) != 0 ||
		    (zone = pct_decode(pct + 3, zlen - 3)) == NULL)
			return fail(err, errlen, "bad IPv6 zone (write %25zone)");
		for (const char *z = zone; *z; z++)
			if (!isalnum((unsigned char)*z) && strchr("-._~", *z) == NULL) {
				free(zone);
				return fail(err, errlen, "bad IPv6 zone");
			}
	}
	if (asprintf(host, "%s%s%s", addr, zone ? "%" : "",
	    zone ? zone : "") < 0) {
		*host = NULL;
		free(zone);
		return fail(err, errlen, "out of memory");
	}
	free(zone);
	return 0;
}

/* Set *host from a name or IPv4 address s[0..n). */
static int
parse_hostname(const char *s, size_t n, char **host, char *err,
    size_t errlen)
{
	if (n == 0)
		return fail(err, errlen, "missing host");
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr(".-_", s[i]) == NULL)
			return fail(err, errlen, "bad host name");
	if ((*host = strndup(s, n)) == NULL)
		return fail(err, errlen, "out of memory");
	return 0;
}

/*
 * host[:port] in s[0..n): an IPv6 address in brackets, or a name or
 * IPv4 address.  Sets *host and *port (left as it was when s names
 * none), or returns -1.
 */
static int
parse_hostport(const char *s, size_t n, char **host, int *port, char *err,
    size_t errlen)
{
	const char *end = s + n, *p;
	long v;

	if (n > 0 && *s == '[') {
		const char *close = memchr(s, ']', n);
		if (close == NULL)
			return fail(err, errlen, "bad IPv6 address");
		if (parse_ipv6(s + 1, (size_t)(close - s - 1), host, err,
		    errlen) < 0)
			return -1;
		p = close + 1;
	} else {
		p = memchr(s, ':', n);
		if (p == NULL)
			p = end;
		if (parse_hostname(s, (size_t)(p - s), host, err, errlen) < 0)
			return -1;
	}
	if (p == end)
		return 0;
	if (*p != ':' ||
	    (v = parse_uint(p + 1, (size_t)(end - p - 1), 1, 65535)) < 0)
		return fail(err, errlen, "bad port");
	*port = (int)v;
	return 0;
}

/* What follows host[:port]: [/db][?query]. */
static int
parse_tail(const char *t, struct url *u, char *err, size_t errlen)
{
	if (*t == '/') {
		size_t n = strcspn(++t, "?#");
		long db = n == 0 ? 0 : parse_uint(t, n, 0, URL_MAX_DB);
		if (db < 0)
			return fail(err, errlen, "bad database number");
		u->db = (int)db;
		t += n;
	}
	if (*t == '?') {
		size_t n = strcspn(++t, "#");
		char *q = strndup(t, n);
		int rc;
		if (q == NULL)
			return fail(err, errlen, "out of memory");
		rc = parse_query(q, u, err, errlen);
		free(q);
		if (rc < 0)
			return -1;
		t += n;
	}
	if (*t == '#')
		return fail(err, errlen, "unexpected '#'");
	return 0;
}

static int
parse_tcp(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *end, *at = NULL, *h, *p;

	/* Up to '/', '?' or '#'; not strcspn(), a page of libc (Makefile). */
	for (end = s; *end != '\0' && strchr("/?#", *end) == NULL; end++)
		;

	u->kind = URL_TCP;
	u->port = 6379;
	for (p = s; p < end; p++)
		if (*p == '@')
			at = p;
	if (at != NULL) {
		if (parse_userinfo(s, (size_t)(at - s), u, err, errlen) < 0)
			return -1;
		h = at + 1;
	} else
		h = s;
	if (parse_hostport(h, (size_t)(end - h), &u->host, &u->port, err,
	    errlen) < 0)
		return -1;
	return parse_tail(end, u, err, errlen);
}

/* --- redis+sentinel:// and rediss+sentinel:// ------------------------------ */

/* The port of a sentinel whose URL names none (Redis Sentinel's own). */
#define URL_SENTINEL_PORT 26379

/*
 * After the host list: "/SERVICE[/db][?query]".  The service name (the
 * master's name in the sentinels' configuration) may hold %-escapes.
 */
static int
parse_service(const char *s, struct url *u, char *err, size_t errlen)
{
	size_t n;

	if (*s != '/' || strchr("/?#", s[1]) != NULL)
		return fail(err, errlen, "missing the master's name (/SERVICE)");
	n = strcspn(++s, "/?#");
	if ((u->service = pct_decode(s, n)) == NULL)
		return fail(err, errlen, "bad %-escape in the service name");
	return parse_tail(s + n, u, err, errlen);
}

/*
 * The part of a Sentinel URL after "://": the master's user information,
 * the sentinels (port 26379 unless given), the service and the db.
 */
static int
parse_sentinel(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *end = s + strcspn(s, "/?#"), *at = NULL, *h, *p;
	int n = 1;

	u->kind = URL_SENTINEL;
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
		u->sentinels[i].port = URL_SENTINEL_PORT;
		if (parse_hostport(h, (size_t)(c - h), &u->sentinels[i].host,
		    &u->sentinels[i].port, err, errlen) < 0)
			return -1;
		h = c + 1;
	}
	return parse_service(end, u, err, errlen);
}

/* --- the schemes --------------------------------------------------------- */

static const struct scheme {
	const char *prefix;
	int tls;
	int (*parse)(const char *, struct url *, char *, size_t);
} schemes[] = {
	{ "redis://", 0, parse_tcp },
	{ "rediss://", 1, parse_tcp },
	{ "unix://", 0, parse_unix },
	{ "redis+sentinel://", 0, parse_sentinel },
	{ "rediss+sentinel://", 1, parse_sentinel },
};

/*
 * Parse s into u (which the caller frees with url_free(), also after an
 * error).  Returns 0, or -1 with a reason in err.  The scheme is matched
 * without regard to case, as RFC 3986 says.
 */
int
url_parse(const char *s, struct url *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].prefix);
		if (strncasecmp(s, schemes[i].prefix, n) == 0) {
			u->tls = schemes[i].tls;
			return schemes[i].parse(s + n, u, err, errlen);
		}
	}
	return fail(err, errlen, "expected redis://host[:port][/db], "
	    "rediss://..., unix:///path or redis+sentinel://host/SERVICE");
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
		fmt_cat(buf, len, u->path, (char *)NULL);
	else {
		char port[FMT_LL_SIZE];

		fmt_ll(port, u->port);	/* an IPv6 address goes in brackets */
		fmt_cat(buf, len, strchr(u->host, ':') ? "[" : "", u->host,
		    strchr(u->host, ':') ? "]:" : ":", port, (char *)NULL);
	}
}

/*
 * The binary form of an IP address host (zone dropped into *zone, ""
 * without one) in bin, with its family; 0 if host is a name.
 */
static int
ip_of(const char *host, unsigned char bin[16], const char **zone)
{
	char a[INET6_ADDRSTRLEN + 1];
	size_t n = strcspn(host, "%");

	*zone = host + n;
	if (n >= sizeof(a))
		return 0;
	memcpy(a, host, n);
	a[n] = '\0';
	memset(bin, 0, 16);
	if (inet_pton(AF_INET, a, bin) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, a, bin) == 1)
		return AF_INET6;
	return 0;
}

/* Is s a plausible DNS name (for --sni): letters, digits, '-', '.'? */
int
url_is_dns_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789-.") == n;
}

/* Is host an IPv4 or IPv6 address (rather than a name)? */
int
url_host_is_ip(const char *host)
{
	unsigned char bin[16];
	const char *zone;

	return ip_of(host, bin, &zone) != 0;
}

/* Are host a and b, with their ports, the same: names without regard
 * to case, addresses by value (so ::1 and 0::1 are the same)? */
static int
same_host(const char *a, int pa, const char *b, int pb)
{
	unsigned char ba[16], bb[16];
	const char *za, *zb;
	int fa, fb;

	if (pa != pb)
		return 0;
	fa = ip_of(a, ba, &za);
	fb = ip_of(b, bb, &zb);
	if (fa != 0 || fb != 0)
		return fa == fb && memcmp(ba, bb, 16) == 0 && strcmp(za, zb) == 0;
	return strcasecmp(a, b) == 0;
}

/*
 * Do a and b name the same server and database, as far as their text
 * tells: the same host and port (same_host()), the same socket path, or
 * the same service known to a sentinel they share.  The scheme and the
 * credentials do not matter.  (Two names for one server, such as
 * localhost and 127.0.0.1, are only found by asking the servers.)
 */
int
url_same_server(const struct url *a, const struct url *b)
{
	if (a->kind != b->kind || a->db != b->db)
		return 0;
	if (a->kind == URL_UNIX)
		return strcmp(a->path, b->path) == 0;
	if (a->kind == URL_TCP)
		return same_host(a->host, a->port, b->host, b->port);
	if (strcmp(a->service, b->service) != 0)
		return 0;
	for (int i = 0; i < a->nsentinels; i++)
		for (int j = 0; j < b->nsentinels; j++)
			if (same_host(a->sentinels[i].host, a->sentinels[i].port,
			    b->sentinels[j].host, b->sentinels[j].port))
				return 1;
	return 0;
}

