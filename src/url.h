/* url.h - Redis server URLs (pure parsing, no I/O) */
#ifndef REDLOCK_URL_H
#define REDLOCK_URL_H

#include <stddef.h>

enum url_kind { URL_TCP, URL_UNIX };

struct url {
	enum url_kind kind;
	int tls;		/* rediss://, or --tls on a redis:// URL */
	char *host;		/* URL_TCP: name or address, no brackets; an
				 * IPv6 zone follows a '%' (fe80::1%eth0) */
	int port;
	char *path;		/* URL_UNIX: socket path */
	int db;
	char *user;		/* NULL when absent */
	char *password;		/* NULL when absent */
};

int url_parse(const char *s, struct url *u, char *err, size_t errlen);
void url_free(struct url *u);
void url_redact(const char *s, char *buf, size_t len);
void url_name(const struct url *u, char *buf, size_t len);
int url_same_server(const struct url *a, const struct url *b);
int url_host_is_ip(const char *host);
int url_is_dns_name(const char *s);

#endif
