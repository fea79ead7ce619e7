/* url.h - Redis server URLs (pure parsing, no I/O) */
#ifndef REDLOCK_URL_H
#define REDLOCK_URL_H

#include <stddef.h>

enum url_kind { URL_TCP, URL_UNIX };

struct url {
	enum url_kind kind;
	char *host;		/* URL_TCP: name or address, no brackets */
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

#endif
