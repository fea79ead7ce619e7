/* url.h - Redis server URLs (pure parsing, no I/O) */
#ifndef REDLOCK_URL_H
#define REDLOCK_URL_H

#include <stddef.h>

enum url_kind { URL_TCP, URL_UNIX, URL_SENTINEL };

/* One Sentinel of a redis+sentinel:// URL. */
struct url_sentinel {
	char *host;		/* name or address, no brackets */
	int port;
};

struct url {
	enum url_kind kind;
	int tls;		/* rediss://, rediss+sentinel://, or --tls */
	char *host;		/* URL_TCP: name or address, no brackets; an
				 * IPv6 zone follows a '%' (fe80::1%eth0) */
	int port;
	char *path;		/* URL_UNIX: socket path */
	int db;
	char *user;		/* NULL when absent */
	char *password;		/* NULL when absent */
	/* URL_SENTINEL: the master named service, found through these
	 * sentinels (user and password above are the master's). */
	struct url_sentinel *sentinels;
	int nsentinels;
	char *service;
	int of_sentinel;	/* a sentinel's own address (sentinel.c), whose
				 * password is $REDLOCK_SENTINEL_PASSWORD */
};

int url_parse(const char *s, struct url *u, char *err, size_t errlen);
void url_free(struct url *u);
void url_redact(const char *s, char *buf, size_t len);
int url_list_drop_passwords(const char *s, char *out);
char *url_list_env(const char *const *urls, int n);
int url_list_label(const struct url *urls, int nurls, char *buf, size_t len);
void url_name(const struct url *u, char *buf, size_t len);
int url_same_server(const struct url *a, const struct url *b);
int url_host_is_ip(const char *host);
int url_is_dns_name(const char *s);

#endif
