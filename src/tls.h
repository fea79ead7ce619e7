/*
 * tls.h - TLS for the Redis connections, through OpenSSL, which is
 * loaded only when a TLS URL is used (see tls.c).  No OpenSSL type
 * appears here: config.c fills struct tls_opts without OpenSSL.
 */
#ifndef REDLOCK_TLS_H
#define REDLOCK_TLS_H

#include <stddef.h>
#include <sys/types.h>

/* The TLS options of the command line; the strings are not owned. */
struct tls_opts {
	int used;		/* some URL is TLS: OpenSSL is needed */
	int insecure;		/* --insecure: check neither chain nor name */
	const char *cacert;	/* --cacert FILE */
	const char *cacertdir;	/* --cacertdir DIR */
	const char *cert;	/* --cert FILE (with key) */
	const char *key;	/* --key FILE (with cert) */
	const char *sni;	/* --sni NAME: sent and verified instead of
				 * the host */
	/* How each file was given, for messages: "--cacert", or the
	 * variable "REDLOCK_CACERT"; "" means the option. */
	char cacert_by[24], cacertdir_by[24], cert_by[24], key_by[24];
};

/* What a TLS operation needs before it can go on. */
enum tls_io { TLS_OK, TLS_WANT_READ, TLS_WANT_WRITE, TLS_FAILED };

struct tls;

/* Whether the run needs tls_init() at all: some URL is TLS or a TLS
 * file was named.  Inline so that a plain run decides it without
 * entering tls.c, which the link keeps away from the common path. */
static inline int
tls_wanted(const struct tls_opts *o)
{
	return o->used || o->cacert != NULL || o->cacertdir != NULL ||
	    o->cert != NULL || o->key != NULL;
}

int tls_init(const struct tls_opts *o);
struct tls *tls_new(int fd, const char *host, char *err, size_t errlen);
enum tls_io tls_handshake(struct tls *t, char *err, size_t errlen);
enum tls_io tls_read(struct tls *t, char *buf, size_t len, size_t *got,
    char *err, size_t errlen);
enum tls_io tls_write(struct tls *t, const char *buf, size_t len,
    size_t *put, char *err, size_t errlen);
int tls_pending(const struct tls *t);
void tls_free(struct tls *t);

#endif
