/*
 * url_label.c - the servers of a lock as the metrics' and the run
 * records' "servers" label names them (url_list_label()), so that the
 * hosts' files and the published records of one lock carry the same.
 */
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sort the servers' names as strings, for qsort(). */
static int
server_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The longest name of one server in the label (url_name()'s). */
#define URL_LABEL_NAME_MAX 320

/*
 * The n servers urls as the label "servers" says them: each as messages
 * name it (host:port, a socket's path, a Sentinel service; never a
 * password), with "/DB" for a database other than 0, sorted, joined by
 * ','.  Into buf; returns 0, or -1 when out of memory or it does not fit.
 */
int
url_list_label(const struct url *urls, int nurls, char *buf, size_t len)
{
	size_t nu = nurls > 0 ? (size_t)nurls : 0, used = 0, n;
	char *names = calloc(nu + 1, URL_LABEL_NAME_MAX);
	char **sorted = calloc(nu + 1, sizeof(*sorted));
	int rc = names != NULL && sorted != NULL ? 0 : -1;

	buf[0] = '\0';
	for (size_t i = 0; rc == 0 && i < nu; i++) {
		char *nm = names + i * URL_LABEL_NAME_MAX;

		url_name(&urls[i], nm, URL_LABEL_NAME_MAX);
		n = strlen(nm);
		if (urls[i].db != 0)
			snprintf(nm + n, URL_LABEL_NAME_MAX - n, "/%d",
			    urls[i].db);
		sorted[i] = nm;
	}
	if (rc == 0)
		qsort(sorted, nu, sizeof(*sorted), server_cmp);
	for (size_t i = 0; rc == 0 && i < nu; i++) {
		n = (size_t)snprintf(buf + used, len - used, "%s%s",
		    i ? "," : "", sorted[i]);
		if (n >= len - used)
			rc = -1;
		else
			used += n;
	}
	free(names);
	free(sorted);
	return rc;
}
