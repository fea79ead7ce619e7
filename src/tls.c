/*
 * tls.c - TLS through OpenSSL for conn.c, verified as a browser would
 * (redlock(1), TLS and Passwords): the chain against --cacert/--cacertdir or the
 * system's store, and the name against the URL's host (a DNS name, also
 * sent as SNI, against the certificate's DNS names; an address against
 * its IP addresses), unless --insecure.
 *
 * OpenSSL is loaded with dlopen() the first time a TLS URL is used:
 * linking libssl and libcrypto into every redlock cost a plain
 * `redlock NAME true` 0.7 ms (+38 %) and 1.5 MiB of resident pages for
 * the dynamic loader's work on them, linking them statically 0.24 ms and
 * 1 MiB (bench/results.md).  The headers give the types; every function
 * is called through ossl, filled by dlsym().
 *
 * One SSL_CTX per process, made once (pthread_once) by tls_init() or by
 * the first tls_new() in whichever thread comes first; one SSL per
 * connection, non-blocking on the connection's own socket.  The caller
 * (conn.c) drives the handshake, reads and writes from its poll loop.
 */
#include "tls.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "exit.h"
#include "log.h"
#include "url.h"

#if defined(OPENSSL_VERSION_NUMBER) && OPENSSL_VERSION_NUMBER < 0x30000000L
#error "redlock needs the headers of OpenSSL 3 (libssl-dev)"
#endif

#define TLS_STR(x) #x
#define TLS_XSTR(x) TLS_STR(x)
#ifdef OPENSSL_SHLIB_VERSION
#define TLS_LIBSSL "libssl.so." TLS_XSTR(OPENSSL_SHLIB_VERSION)
#else
#define TLS_LIBSSL "libssl.so." SHLIB_VERSION_NUMBER
#endif

/* The OpenSSL functions used (functions, not macros: the macros used
 * are spelled out with SSL_ctrl and SSL_CTX_ctrl). */
#define OSSL_FUNCS(X) \
	X(TLS_client_method) X(SSL_CTX_new) X(SSL_CTX_free) \
	X(SSL_CTX_ctrl) X(SSL_CTX_set_options) X(SSL_CTX_set_verify) \
	X(SSL_CTX_load_verify_locations) X(SSL_CTX_set_default_verify_paths) \
	X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey_file) \
	X(SSL_CTX_check_private_key) X(SSL_CTX_set_default_passwd_cb) \
	X(SSL_CTX_set_default_passwd_cb_userdata) \
	X(SSL_new) X(SSL_free) X(SSL_set_fd) X(SSL_set_connect_state) \
	X(SSL_ctrl) X(SSL_get0_param) X(SSL_connect) X(SSL_read) \
	X(SSL_write) X(SSL_get_error) X(SSL_has_pending) \
	X(SSL_get_verify_result) X(X509_VERIFY_PARAM_set_hostflags) \
	X(X509_VERIFY_PARAM_set1_host) X(X509_VERIFY_PARAM_set1_ip_asc) \
	X(X509_verify_cert_error_string) X(X509_get_default_cert_dir) \
	X(X509_get_default_cert_dir_env) X(X509_get_default_cert_file_env) \
	X(ERR_get_error) X(ERR_clear_error) X(ERR_reason_error_string)

static struct {
#define OSSL_MEMBER(f) __typeof__(f) *f; // NOLINT(bugprone-macro-parentheses): a declarator
	OSSL_FUNCS(OSSL_MEMBER)
#undef OSSL_MEMBER
} ossl;

struct tls {
	SSL *ssl;
	int heard;		/* the server has sent data */
};

/* The process's TLS context, made once; see ctx_make(). */
static struct tls_opts opts;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static SSL_CTX *ctx;
static int ctx_status;		/* 0, EXIT_USAGE or EXIT_UNAVAILABLE */
static char ctx_err[384];

/* Load libssl (and with it libcrypto) and find every function. */
static int
ossl_load(void)
{
	void *h = dlopen(TLS_LIBSSL, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		snprintf(ctx_err, sizeof(ctx_err), "TLS is not available: %s",
		    dlerror());
		return -1;
	}
	/* ISO C has no cast from a data pointer to a function pointer;
	 * POSIX guarantees that dlsym()'s result converts. */
#define OSSL_LOAD(f) \
	if ((ossl.f = (__typeof__(ossl.f))dlsym(h, #f)) == NULL) { \
		snprintf(ctx_err, sizeof(ctx_err), "TLS is not available: " \
		    "%s has no %s", TLS_LIBSSL, #f); \
		return -1; \
	}
	OSSL_FUNCS(OSSL_LOAD)
#undef OSSL_LOAD
	return 0;
}

/* OpenSSL's reason for the oldest error queued, or fallback. */
static const char *
ossl_reason(const char *fallback)
{
	unsigned long e = ossl.ERR_get_error();
	const char *r = e != 0 ? ossl.ERR_reason_error_string(e) : NULL;

	ossl.ERR_clear_error();
	return r != NULL ? r : fallback;
}

/* Never prompt for a key's passphrase: say it was wanted, and fail. */
static int
no_passphrase(char *buf, int size, int rwflag, void *wanted)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	*(int *)wanted = 1;
	return 0;
}

/* Can path be opened (as a file, or with dir as a directory)?  If not,
 * say so in ctx_err, naming the option and the file. */
static int
readable(const char *opt, const char *path, int dir)
{
	DIR *d;
	FILE *f;

	if (dir && (d = opendir(path)) != NULL) {
		closedir(d);
		return 1;
	}
	if (!dir && (f = fopen(path, "re")) != NULL) {
		fclose(f);
		return 1;
	}
	snprintf(ctx_err, sizeof(ctx_err), "%s '%s': %s", opt, path,
	    strerror(errno));
	return 0;
}

/* Does dir hold certificates named by subject hash ("1a2b3c4d.0"), as
 * openssl-rehash(1) and update-ca-certificates(8) make them? */
static int
hashed_dir(const char *dir)
{
	DIR *d = strchr(dir, ':') == NULL ? opendir(dir) : NULL;
	struct dirent *e;
	int found = 0;

	while (d != NULL && !found && (e = readdir(d)) != NULL)
		found = strlen(e->d_name) == 10 && strcmp(e->d_name + 8, ".0") == 0 &&
		    strspn(e->d_name, "0123456789abcdef") == 8;
	if (d != NULL)
		closedir(d);
	return found;
}

/*
 * The system's store, as OpenSSL's defaults (and $SSL_CERT_FILE,
 * $SSL_CERT_DIR) name it.  Its bundle file is parsed whole when loaded,
 * which for Debian's 140 authorities costs some 40 ms of a run that
 * otherwise takes 5; its hashed directory is read lazily, the issuer's
 * file only.  So the directory alone is used when it is hashed and
 * $SSL_CERT_FILE names no file of its own.
 */
static int
ctx_system_store(void)
{
	const char *dir = getenv(ossl.X509_get_default_cert_dir_env());

	if (dir == NULL)
		dir = ossl.X509_get_default_cert_dir();
	if (getenv(ossl.X509_get_default_cert_file_env()) == NULL &&
	    hashed_dir(dir))
		return ossl.SSL_CTX_load_verify_locations(ctx, NULL, dir) == 1;
	return ossl.SSL_CTX_set_default_verify_paths(ctx) == 1;
}

/* The name a file was given by (see struct tls_opts), else the option. */
static const char *
by(const char *given, const char *option)
{
	return given[0] != '\0' ? given : option;
}

/* The chain to trust: the given CA file or directory, else the system's
 * store (not even read with --insecure and neither given). */
static int
ctx_trust(void)
{
	const char *f = opts.cacert, *d = opts.cacertdir;

	if ((f != NULL && !readable(by(opts.cacert_by, "--cacert"), f, 0)) ||
	    (d != NULL && !readable(by(opts.cacertdir_by, "--cacertdir"), d, 1)))
		return -1;
	if (f != NULL || d != NULL) {
		if (ossl.SSL_CTX_load_verify_locations(ctx, f, d) != 1) {
			snprintf(ctx_err, sizeof(ctx_err), "%s '%s': %s",
			    f ? by(opts.cacert_by, "--cacert") :
			    by(opts.cacertdir_by, "--cacertdir"), f ? f : d,
			    ossl_reason("no certificate found"));
			return -1;
		}
	} else if (!opts.insecure && !ctx_system_store()) {
		ctx_status = EXIT_UNAVAILABLE;
		snprintf(ctx_err, sizeof(ctx_err), "cannot read the system's "
		    "trusted certificates: %s", ossl_reason("unknown error"));
		return -1;
	}
	return 0;
}

/* The client certificate and key, for mutual TLS. */
static int
ctx_identity(void)
{
	static int wanted;	/* under ctx_once */

	if (opts.cert == NULL)
		return 0;
	if (!readable(by(opts.cert_by, "--cert"), opts.cert, 0) ||
	    !readable(by(opts.key_by, "--key"), opts.key, 0))
		return -1;
	if (ossl.SSL_CTX_use_certificate_chain_file(ctx, opts.cert) != 1) {
		snprintf(ctx_err, sizeof(ctx_err), "%s '%s': not a PEM "
		    "certificate (%s)", by(opts.cert_by, "--cert"), opts.cert,
		    ossl_reason("unreadable"));
		return -1;
	}
	ossl.SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	ossl.SSL_CTX_set_default_passwd_cb_userdata(ctx, &wanted);
	if (ossl.SSL_CTX_use_PrivateKey_file(ctx, opts.key,
	    SSL_FILETYPE_PEM) != 1) {
		unsigned long e;
		int mismatch = 0;

		while ((e = ossl.ERR_get_error()) != 0)
			mismatch |= ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
		snprintf(ctx_err, sizeof(ctx_err), "%s '%s': %s",
		    by(opts.key_by, "--key"), opts.key,
		    wanted ? "the key is encrypted, and redlock never asks "
		    "for a passphrase" : mismatch ? "it is not the key of "
		    "the certificate" : "not a PEM private key");
		return -1;
	}
	if (ossl.SSL_CTX_check_private_key(ctx) != 1) {
		ossl.ERR_clear_error();
		snprintf(ctx_err, sizeof(ctx_err), "%s '%s' does not match "
		    "%s '%s'", by(opts.key_by, "--key"), opts.key,
		    by(opts.cert_by, "--cert"), opts.cert);
		return -1;
	}
	return 0;
}

/* Make the context from opts (under ctx_once); on failure set
 * ctx_status and ctx_err and leave ctx NULL. */
static void
ctx_make(void)
{
	uint64_t o = SSL_OP_NO_COMPRESSION;

	ctx_status = EXIT_UNAVAILABLE;
	if (ossl_load() < 0)
		return;
	ossl.ERR_clear_error();
	if ((ctx = ossl.SSL_CTX_new(ossl.TLS_client_method())) == NULL) {
		snprintf(ctx_err, sizeof(ctx_err), "cannot set up TLS: %s",
		    ossl_reason("out of memory"));
		return;
	}
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* A server that closes without close_notify (it died) has closed
	 * the connection; it is not an attack on a length-framed protocol. */
	o |= SSL_OP_IGNORE_UNEXPECTED_EOF;
#endif
	ossl.SSL_CTX_set_options(ctx, o);
	/* conn.c's output buffer may move, and grows, between retries. */
	ossl.SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
	ossl.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION,
	    NULL);
	ossl.SSL_CTX_set_verify(ctx, opts.insecure ? SSL_VERIFY_NONE :
	    SSL_VERIFY_PEER, NULL);
	ctx_status = EXIT_USAGE;
	if (ctx_trust() < 0 || ctx_identity() < 0) {
		ossl.SSL_CTX_free(ctx);
		ctx = NULL;
		return;
	}
	ctx_status = 0;
}

/* Without OpenSSL: are the files that o names there to be read?  Sets
 * ctx_err; returns 0 or EXIT_USAGE. */
static int
files_readable(const struct tls_opts *o)
{
	return (o->cacert == NULL ||
	    readable(by(o->cacert_by, "--cacert"), o->cacert, 0)) &&
	    (o->cacertdir == NULL ||
	    readable(by(o->cacertdir_by, "--cacertdir"), o->cacertdir, 1)) &&
	    (o->cert == NULL || readable(by(o->cert_by, "--cert"), o->cert, 0)) &&
	    (o->key == NULL || readable(by(o->key_by, "--key"), o->key, 0)) ?
	    0 : EXIT_USAGE;
}

/*
 * Set TLS up for the run: load OpenSSL and check the CA, certificate
 * and key files, so that a bad file is a usage error before any
 * connection is made.  When no URL is TLS (o->used is 0) the files are
 * checked all the same, as a mistake to show at once, and an OpenSSL
 * that cannot be loaded is no error; with neither TLS nor files this
 * does nothing, and plain runs never load OpenSSL.  Returns 0, or an
 * exit status (EXIT_USAGE, EXIT_UNAVAILABLE) after saying why.
 */
int
tls_init(const struct tls_opts *o)
{
	if (!tls_wanted(o))
		return 0;
	opts = *o;
	pthread_once(&ctx_once, ctx_make);
	if (!o->used && ctx_status == EXIT_UNAVAILABLE)
		ctx_status = files_readable(o);
	if (ctx_status == EXIT_USAGE)
		log_usage("%s", ctx_err);
	else if (ctx_status != 0)
		log_error("%s", ctx_err);
	return ctx_status;
}

/*
 * Why the last operation on t failed (ret its return value), for a
 * message: the verification result, OpenSSL's reason, or the system's.
 */
static void
tls_why(const struct tls *t, int ret, char *err, size_t errlen)
{
	int e = ossl.SSL_get_error(t->ssl, ret), saved = errno;
	long v = ossl.SSL_get_verify_result(t->ssl);
	unsigned long q = ossl.ERR_get_error();
	const char *r = q != 0 ? ossl.ERR_reason_error_string(q) : NULL;

	/* A server that wants a client certificate and got none may close
	 * (TLS 1.3: after the handshake, with an alert that a reset can
	 * overtake) before saying anything. */
	const char *hint = !t->heard && opts.cert == NULL ?
	    " (does the server want a client certificate? see --cert)" : "";

	ossl.ERR_clear_error();
	if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && saved == 0))
		snprintf(err, errlen, "Server closed the connection%s", hint);
	else if (e == SSL_ERROR_SYSCALL)
		snprintf(err, errlen, "%s%s", strerror(saved),
		    saved == ECONNRESET || saved == EPIPE ? hint : "");
	else if (!opts.insecure && v != X509_V_OK)
		snprintf(err, errlen, "certificate verify failed: %s",
		    ossl.X509_verify_cert_error_string(v));
	else
		snprintf(err, errlen, "TLS error: %s", r ? r : "unknown");
}

/* What an operation that returned ret needs: TLS_WANT_* or TLS_FAILED. */
static enum tls_io
tls_want(struct tls *t, int ret, char *err, size_t errlen)
{
	switch (ossl.SSL_get_error(t->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		return TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_WANT_WRITE;
	default:
		tls_why(t, ret, err, errlen);
		return TLS_FAILED;
	}
}

/* Check host against the certificate (an address against its IP
 * addresses, a name or --sni against its DNS names) and send the name
 * as SNI; an address is never sent (RFC 6066). */
static int
tls_name(struct tls *t, const char *host)
{
	X509_VERIFY_PARAM *vp = ossl.SSL_get0_param(t->ssl);
	const char *name = opts.sni != NULL ? opts.sni : host;
	int ip = opts.sni == NULL && url_host_is_ip(host);
	char addr[64];

	if (!ip && ossl.SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME,
	    TLSEXT_NAMETYPE_host_name, (void *)name) != 1)
		return -1;
	if (opts.insecure)
		return 0;
	if (!ip) {
		ossl.X509_VERIFY_PARAM_set_hostflags(vp,
		    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		return ossl.X509_VERIFY_PARAM_set1_host(vp, name, 0) == 1 ? 0 : -1;
	}
	snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(host, "%"), host);
	return ossl.X509_VERIFY_PARAM_set1_ip_asc(vp, addr) == 1 ? 0 : -1;
}

/*
 * A TLS client on the connected (or connecting) socket fd for host, the
 * URL's host.  The socket stays the caller's.  Returns NULL with the
 * reason in err.
 */
struct tls *
tls_new(int fd, const char *host, char *err, size_t errlen)
{
	struct tls *t;

	pthread_once(&ctx_once, ctx_make);
	if (ctx == NULL) {
		snprintf(err, errlen, "%s", ctx_err);
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->ssl = ossl.SSL_new(ctx)) == NULL ||
	    ossl.SSL_set_fd(t->ssl, fd) != 1 || tls_name(t, host) < 0) {
		snprintf(err, errlen, "cannot set up TLS: %s",
		    ossl_reason("out of memory"));
		tls_free(t);
		return NULL;
	}
	ossl.SSL_set_connect_state(t->ssl);
	return t;
}

/* Take the handshake a step further: TLS_OK once it is done. */
enum tls_io
tls_handshake(struct tls *t, char *err, size_t errlen)
{
	int rc;

	ossl.ERR_clear_error();
	rc = ossl.SSL_connect(t->ssl);
	return rc == 1 ? TLS_OK : tls_want(t, rc, err, errlen);
}

/* Read up to len bytes into buf: TLS_OK with *got > 0, a TLS_WANT_*,
 * or TLS_FAILED (the server closed the connection, or an error). */
enum tls_io
tls_read(struct tls *t, char *buf, size_t len, size_t *got, char *err,
    size_t errlen)
{
	int rc;

	ossl.ERR_clear_error();
	rc = ossl.SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (rc > 0) {
		t->heard = 1;
		*got = (size_t)rc;
		return TLS_OK;
	}
	return tls_want(t, rc, err, errlen);
}

/* Write up to len bytes of buf; as tls_read().  A retry after
 * TLS_WANT_* may pass the buffer moved or grown. */
enum tls_io
tls_write(struct tls *t, const char *buf, size_t len, size_t *put,
    char *err, size_t errlen)
{
	int rc;

	ossl.ERR_clear_error();
	rc = ossl.SSL_write(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (rc > 0) {
		*put = (size_t)rc;
		return TLS_OK;
	}
	return tls_want(t, rc, err, errlen);
}

/* Has OpenSSL read data that poll() cannot see any more? */
int
tls_pending(const struct tls *t)
{
	return ossl.SSL_has_pending(t->ssl);
}

void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	if (t->ssl != NULL)
		ossl.SSL_free(t->ssl);
	free(t);
}
