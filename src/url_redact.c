/*
 * url_redact.c - what of a URL may be shown or passed on: a URL for an
 * error message without what may be a password (url_redact()), and a
 * list of URLs for the command's environment without the passwords
 * (url_list_drop_passwords(), url_list_env()).  Text only: nothing here
 * parses a URL the way url.c does, since what they are given may not
 * parse at all.
 */
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Copy the URL list s (as $REDLOCK_URL holds it) into out, of at least
 * strlen(s) + 1 bytes, with each URL's password left out and its user
 * kept: "redis://u:pw@h" becomes "redis://u@h", "redis://:pw@h"
 * "redis://h".  A URL's user information ends at the last '@' before
 * the '/', '?' or '#' that follows its "://", as url_redact() takes it.
 * Returns 1 when a password was left out, else 0.
 */
int
url_list_drop_passwords(const char *s, char *out)
{
	int dropped = 0;

	while (*s != '\0') {
		const char *a = strstr(s, "://"), *e, *at = NULL, *colon;

		if (a == NULL)
			break;
		memcpy(out, s, (size_t)(a + 3 - s));
		out += a + 3 - s;
		s = a + 3;
		e = s + strcspn(s, "/?#");
		for (const char *c = s; c < e; c++)
			if (*c == '@')
				at = c;
		if (at == NULL || (colon = memchr(s, ':', (size_t)(at - s))) == NULL)
			continue;
		memcpy(out, s, (size_t)(colon - s));
		out += colon - s;
		if (colon > s)
			*out++ = '@';
		s = at + 1;
		dropped = 1;
	}
	memcpy(out, s, strlen(s) + 1);
	return dropped;
}

/*
 * "REDLOCK_URL=" and the n URLs joined by commas, as the variable lists
 * them, each without its password (url_list_drop_passwords()), so that
 * a nested redlock reaches the same servers.  Returns a malloc'd
 * string, or NULL when out of memory.
 */
char *
url_list_env(const char *const *urls, int n)
{
	static const char var[] = "REDLOCK_URL=";
	size_t len = sizeof(var), used = 0;
	char *list, *out;

	for (int i = 0; i < n; i++)
		len += strlen(urls[i]) + 1;
	if ((list = malloc(len)) == NULL || (out = malloc(len)) == NULL) {
		free(list);
		return NULL;
	}
	list[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(list + used, len - used, "%s%s",
		    i ? "," : "", urls[i]);
	memcpy(out, var, sizeof(var) - 1);
	url_list_drop_passwords(list, out + sizeof(var) - 1);
	explicit_bzero(list, len);
	free(list);
	return out;
}

/* In URL s with no '@': the length of s up to and including the last
 * ':' of its host part (of all of s when it has no "://") when what
 * follows that ':' (up to '/', '?' or '#') is not a port number; else
 * 0. */
static size_t
port_not_number(const char *s)
{
	const char *a = strstr(s, "://"), *c, *e;

	/* Without "://" the whole of s is looked at, "redis:/h:pw" too. */
	e = a != NULL ? a + 3 + strcspn(a + 3, "/?#") : s + strlen(s);
	a = a != NULL ? a + 3 : s;
	for (c = e; c > a && c[-1] != ':' && c[-1] != ']'; c--)
		;
	if (c == a || c[-1] != ':')
		return 0;
	for (const char *d = c; d < e; d++)
		if (*d < '0' || *d > '9')
			return (size_t)(c - s);
	return 0;
}

/*
 * Copy s for an error message with any user information (which may
 * hold a password) replaced by "***", whenever s holds an '@', parsed
 * or not (a URL malformed before it, "redis:/:pw@h", ":pw@host", is
 * masked from its start, or from after "://"); and each value of its
 * query too, which may be a password (redis-py reads ?password=).
 */
void
url_redact(const char *s, char *buf, size_t len)
{
	/* The last '@': a password may hold '/', '?' or '#', and hiding a
	 * little too much is better than showing a secret. */
	const char *auth = strstr(s, "://"), *at = strrchr(s, '@');
	const char *rest = at ? at : s, *q = rest + strcspn(rest, "?");
	size_t o;

	if (at == NULL && (o = port_not_number(s)) > 0) {
		/* "redis://user:password", the '@' forgotten: what follows
		 * the host's ':' is no port, and may be a password. */
		snprintf(buf, len, "%.*s***", (int)o, s);
		return;
	}
	auth = at == NULL ? s : auth != NULL && auth < at ? auth + 3 : s;
	o = (size_t)snprintf(buf, len, "%.*s%s%.*s", (int)(auth - s), s,
	    at ? "***" : "", (int)(q - (at ? at : auth)), at ? at : auth);
	for (size_t k; *q != '\0' && o + 1 < len; q += strcspn(q, "&")) {
		k = strcspn(q + 1, "=&");
		o += (size_t)snprintf(buf + o, len - o, "%c%.*s%s", *q, (int)k,
		    q + 1, q[1 + k] == '=' ? "=***" : "");
		q += 1 + k;
	}
}
