/*
 * conn.c - one connection per server: connecting to the address it is
 * given (its URL's, or the one a Redis Cluster redirection or the
 * sentinels named: cluster.c, route.c), and the transport that exec.c
 * drives.
 *
 * hiredis is the protocol codec only: the context's reader
 * (redisReaderFeed(), redisGetReplyFromReader()) parses replies, and
 * conn_queue() writes a command's bytes as redisFormatCommandArgv()
 * would.  The bytes themselves go
 * through the I/O seam below, conn_send() and conn_recv(): the socket
 * for a plain connection, OpenSSL (tls.c) for a TLS one; nothing else
 * differs, and hiredis's own I/O calls are never used.  Sockets are
 * non-blocking: output is queued and written when poll says the socket
 * is ready.
 *
 * A connection belongs to one thread.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fmt.h"
#include "clock.h"
#include "tls.h"

/* The kind of failure errno e is. */
static enum conn_fail
fail_of(int e)
{
	switch (e) {
	case ECONNREFUSED:
	case ENOENT:		/* no socket file: nobody listens */
		return CONN_FAIL_REFUSED;
	case ECONNRESET:
	case EPIPE:
		return CONN_FAIL_CLOSED;
	case ETIMEDOUT:
		return CONN_FAIL_TIMEOUT;
	default:
		return CONN_FAIL_OTHER;
	}
}

void
conn_init(struct conn *c, const struct url *u, const char *password)
{
	memset(c, 0, sizeof(*c));
	c->url = u;
	c->password = u->password != NULL ? u->password : password;
	url_name(u, c->name, sizeof(c->name));
}

void
conn_close(struct conn *c)
{
	if (c->tls != NULL)	/* plain runs never enter tls.c */
		tls_free(c->tls);
	c->tls = NULL;
	if (c->ctx != NULL)
		redisFree(c->ctx);
	if (c->out != NULL)	/* it may hold AUTH and its password */
		explicit_bzero(c->out, c->outcap);
	free(c->out);
	if (c->ahead_reply != NULL)
		freeReplyObject(c->ahead_reply);
	/* A probe not answered, or answered but not read, is asked again
	 * at the next connect. */
	if (c->probe_reply != NULL) {
		freeReplyObject(c->probe_reply);
		c->probe = CONN_PROBE_WANTED;
	}
	if (c->probe == CONN_PROBE_SENT)
		c->probe = CONN_PROBE_WANTED;
	memset(&c->ctx, 0, sizeof(*c) - offsetof(struct conn, ctx));
}

/*
 * Point c at host:port instead of its URL's address (a Redis Cluster
 * redirection), or back at the URL's address with host NULL.  The
 * connection is closed when the address changes; the next command
 * connects there, with the URL's credentials and database.  Returns 0,
 * or -1 when host does not fit (c is left as it was).
 */
int
conn_retarget(struct conn *c, const char *host, int port)
{
	struct url at = *c->url;

	if (host != NULL && strlen(host) >= sizeof(c->host))
		return -1;
	if (host == NULL ? c->host[0] == '\0' :
	    strcmp(host, c->host) == 0 && port == c->port)
		return 0;
	conn_close(c);
	snprintf(c->host, sizeof(c->host), "%s", host != NULL ? host : "");
	c->port = host != NULL ? port : 0;
	if (host != NULL) {
		at.kind = URL_TCP;
		at.host = c->host;
		at.port = port;
	}
	url_name(&at, c->name, sizeof(c->name));
	return 0;
}

/*
 * Point c at another URL, with its credentials (password: u's own or
 * the configuration's): another node of the same Redis Cluster, given
 * by -u too (cluster.c).  That URL is c's from now on; what c learnt of
 * the cluster stays.
 */
void
conn_reseat(struct conn *c, const struct url *u, const char *password)
{
	conn_close(c);
	c->url = u;
	c->password = password;
	c->host[0] = '\0';
	c->port = 0;
	url_name(u, c->name, sizeof(c->name));
}

/*
 * Pipelining: queue a command on the open connection c to go out in the
 * same write as the next conn_exec() request, just ahead of it; the
 * server answers it first, and its reply is kept for conn_take_ahead()
 * (a blocking command holds the request back until it is answered:
 * wait.c).  The request's deadline must allow for both.  Returns 0, or
 * -1 when c is not open or out of memory.
 */
int
conn_queue_ahead(struct conn *c, int argc, const char **argv,
    const size_t *len)
{
	if (c->ctx == NULL || conn_queue(c, argc, argv, len) < 0)
		return -1;
	c->ahead++;
	return 0;
}

/* The reply to the command queued ahead, now the caller's (NULL when
 * it did not come: the connection failed or was closed). */
redisReply *
conn_take_ahead(struct conn *c)
{
	redisReply *p = c->ahead_reply;

	c->ahead_reply = NULL;
	return p;
}

/* The probe's reply, now the caller's (NULL when none came yet). */
redisReply *
conn_take_probe(struct conn *c)
{
	redisReply *p = c->probe_reply;

	c->probe_reply = NULL;
	return p;
}

/*
 * Queue one command on c's output.  Returns 0, or -1 out of memory.
 * Every copy of a command is wiped before it is freed, since AUTH's
 * holds a password (hence no realloc(), which would leave one behind).
 */
int
conn_queue(struct conn *c, int argc, const char **argv, const size_t *len)
{
	size_t n = 0;
	char *p;

	/* The bytes redisFormatCommandArgv() would make, written straight
	 * into the output: "*argc\r\n", then "$len\r\narg\r\n" each.  Its
	 * sprintf() is all a plain run used of libc's printf (fmt.h). */
	for (int i = 0; i < argc; i++)
		n += (len != NULL ? len[i] : strlen(argv[i])) + 2 * (size_t)FMT_LL_SIZE;
	n += FMT_LL_SIZE + 2;
	if (c->outlen + n > c->outcap) {
		size_t cap = (c->outlen + n) * 2;
		char *o = malloc(cap);
		if (o == NULL)
			return -1;
		if (c->out != NULL) {
			memcpy(o, c->out, c->outlen);
			explicit_bzero(c->out, c->outcap);
			free(c->out);
		}
		c->out = o;
		c->outcap = cap;
	}
	p = c->out + c->outlen;
	*p++ = '*';
	p += fmt_ll(p, argc);
	*p++ = '\r';
	*p++ = '\n';
	for (int i = 0; i < argc; i++) {
		size_t l = len != NULL ? len[i] : strlen(argv[i]);

		*p++ = '$';
		p += fmt_ll(p, (long long)l);
		*p++ = '\r';
		*p++ = '\n';
		memcpy(p, argv[i], l);
		p += l;
		*p++ = '\r';
		*p++ = '\n';
	}
	c->outlen = (size_t)(p - c->out);
	c->wwant = POLLOUT;	/* nothing blocks the new output yet */
	return 0;
}

/* Does c authenticate (a password, or a user in its URL)? */
int
conn_auths(const struct conn *c)
{
	return c->password != NULL || c->url->user != NULL;
}

/* Queue what a new connection says first: AUTH, SELECT and the probe
 * (conn.h), as far as they are wanted.  Returns how many, or -1 when
 * out of memory. */
static int
conn_preamble(struct conn *c)
{
	const struct url *u = c->url;
	int pre = 0;

	if (conn_auths(c)) {
		/* AUTH [user] password; a user without a password is sent
		 * with an empty one (which a nopass user takes), not left
		 * out, which would serve us as the default user. */
		const char *pw = c->password != NULL ? c->password : "";
		const char *av[3] = { "AUTH", u->user, pw };
		int ac = u->user == NULL ? 2 : 3;

		if (u->user == NULL)
			av[1] = pw;
		if (conn_queue(c, ac, av, NULL) < 0)
			return -1;
		pre++;
	}
	if (u->db != 0) {
		char db[FMT_LL_SIZE];
		const char *av[2] = { "SELECT", db };
		fmt_ll(db, u->db);
		if (conn_queue(c, 2, av, NULL) < 0)
			return -1;
		pre++;
	}
	if (c->probe == CONN_PROBE_WANTED) {
		static const char *const shards[2] = { "CLUSTER", "SHARDS" };

		if (conn_queue(c, 2, (const char **)shards, NULL) < 0)
			return -1;
		c->probe = CONN_PROBE_SENT;
		pre++;
	}
	return pre;
}

/*
 * What redisConnectNonBlock(host, port) does for a dotted-quad host,
 * without getaddrinfo(): whose resolver code is the largest part of
 * libc that a plain run maps for nothing (the Makefile says why pages
 * count).  The same socket (TCP, non-blocking, TCP_NODELAY; close-on-
 * exec from the start), connecting in the background, handed to
 * hiredis as a non-blocking context.  NULL when host is no dotted quad
 * or the connection did not start: the caller then asks hiredis, which
 * reports the failure in its own words, as it always did.
 */
static redisContext *
conn_tcp_numeric(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	redisContext *ctx;
	int fd, on = 1;

	/* inet_pton() takes the dotted quad only ("127.0.0.1", no leading
	 * zeros); inet_aton()'s other forms ("127.1", octal), IPv6 and names
	 * are getaddrinfo()'s, as before. */
	if (port < 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return NULL;
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    IPPROTO_TCP);
	if (fd < 0)
		return NULL;
	if ((connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) < 0 ||
	    (ctx = redisConnectFd(fd)) == NULL) {
		close(fd);
		return NULL;
	}
	ctx->flags &= ~REDIS_BLOCK;	/* as redisConnectNonBlock() leaves it */
	return ctx;
}

/* redisConnectNonBlock(host, port), without the resolver when host is
 * an IPv4 address. */
static redisContext *
conn_tcp(const char *host, int port)
{
	redisContext *ctx = conn_tcp_numeric(host, port);

	return ctx != NULL ? ctx : redisConnectNonBlock(host, port);
}

/*
 * Start connecting, with TLS if the URL says so, and queue AUTH, SELECT
 * and the probe (conn.h).  Returns the number of replies that precede
 * the caller's, or -1 with the reason in why (c->fail its kind).  A
 * Sentinel URL connects only where route.c has just pointed it.
 * hiredis 0.14 cannot open its socket with SOCK_CLOEXEC, so the flag is
 * set here, before any child can be forked.
 */
int
conn_open(struct conn *c, char *why, size_t whylen)
{
	const struct url *u = c->url;
	int pre = 0;

	c->fail = CONN_FAIL_OTHER;
	if (u->kind == URL_SENTINEL && !c->routed) {
		snprintf(why, whylen, "the sentinels were not asked");
		return -1;
	}
	if (c->host[0] != '\0')
		c->ctx = conn_tcp(c->host, c->port);
	else if (u->kind == URL_UNIX)
		c->ctx = redisConnectUnixNonBlock(u->path);
	else
		c->ctx = conn_tcp(u->host, u->port);
	if (c->ctx == NULL || c->ctx->err) {
		if (c->ctx != NULL && c->ctx->err == REDIS_ERR_IO)
			c->fail = fail_of(errno);
		snprintf(why, whylen, "%s", c->ctx ? c->ctx->errstr :
		    "out of memory");
		conn_close(c);
		return -1;
	}
	(void)fcntl(c->ctx->fd, F_SETFD, FD_CLOEXEC);
	if (u->tls && (u->kind == URL_TCP || c->host[0] != '\0')) {
		/* A redirection's node is checked against its own name. */
		const char *peer = c->host[0] != '\0' ? c->host : u->host;

		c->tls = tls_new(c->ctx->fd, peer, why, whylen);
		if (c->tls == NULL) {
			conn_close(c);
			return -1;
		}
		c->handshake = c->connecting = 1;
		c->hwant = POLLOUT;
	}
	if ((pre = conn_preamble(c)) < 0) {
		snprintf(why, whylen, "out of memory");
		conn_close(c);
		return -1;
	}
	return pre;
}

/*
 * Open c's connection ahead of its first request, so that the server
 * accepts it while redlock sets the lock up: a new connection's first
 * reply waits for the server to accept it, and that wait is then off
 * the lock's path.  What the connection says first (conn_preamble())
 * stays queued, to go out with that request in one write, which the
 * server reads at once.  Plain TCP and unix sockets only; TLS and
 * Sentinel connect when their first request does.  Best effort: on a
 * failure c is closed, and that request connects again and reports the
 * failure in its own words.
 */
void
conn_start(struct conn *c)
{
	char why[256];
	int pre;

	if (c->ctx != NULL || c->url->tls || c->url->kind == URL_SENTINEL ||
	    (pre = conn_open(c, why, sizeof(why))) < 0)
		return;
	c->early = 1 + pre;
}

/* How long a silent second connection must stay open for a server that
 * closed our first one to be taken for a TLS port: a TLS server waits
 * for the client's hello (Redis: tls-timeout, seconds), while a proxy
 * with nothing behind it or a server turning clients away closes at
 * once.  Paid only on that failure. */
#define CONN_TLS_PROBE_MS 200

/*
 * A fresh plain TCP connection of c was closed by the server before it
 * answered: is the port a TLS port?  A TLS server says nothing until
 * the client speaks and drops a client that speaks RESP, without a byte
 * that would tell (Redis sends no alert).  So connect again, send
 * nothing, and see whether that connection stays open
 * CONN_TLS_PROBE_MS.  Returns 1 if it did, else 0.
 */
int
conn_tls_likely(const struct conn *c)
{
	const struct url *u = c->url;
	redisContext *p = c->host[0] != '\0' ? conn_tcp(c->host, c->port) :
	    conn_tcp(u->host, u->port);
	int64_t until = clock_ms() + CONN_TLS_PROBE_MS, left;
	struct pollfd pfd = { .events = POLLOUT };
	int open = 0;
	char b;

	if (p == NULL || p->err) {
		redisFree(p);
		return 0;
	}
	pfd.fd = p->fd;
	(void)fcntl(p->fd, F_SETFD, FD_CLOEXEC);
	while ((left = until - clock_ms()) > 0) {
		int rc = poll(&pfd, 1, (int)left);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			open = rc == 0;		/* silent until the end */
			break;
		}
		if (pfd.revents & (POLLERR | POLLHUP) ||
		    (pfd.events == POLLIN && recv(p->fd, &b, 1, 0) <= 0))
			break;
		pfd.events = POLLIN;	/* connected: now wait for a close */
	}
	redisFree(p);
	return open;
}

/* --- the I/O seam ---------------------------------------------------------- */

/*
 * Write as much of c's output as the transport takes.  Returns 1 when
 * all is written, 0 when it would block (c->wwant says on what), -1 on
 * failure with the reason in why.
 */
int
conn_send(struct conn *c, char *why, size_t whylen)
{
	while (c->outpos < c->outlen) {
		size_t n = 0;

		if (c->tls != NULL) {
			switch (tls_write(c->tls, c->out + c->outpos,
			    c->outlen - c->outpos, &n, why, whylen)) {
			case TLS_OK: break;
			case TLS_WANT_READ: c->wwant = POLLIN; return 0;
			case TLS_WANT_WRITE: c->wwant = POLLOUT; return 0;
			default: c->fail = CONN_FAIL_OTHER; return -1;
			}
		} else {
			ssize_t w = write(c->ctx->fd, c->out + c->outpos,
			    c->outlen - c->outpos);
			if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
				c->wwant = POLLOUT;
				return 0;
			}
			if (w < 0) {
				c->fail = fail_of(errno);
				snprintf(why, whylen, "%s", strerror(errno));
				return -1;
			}
			n = (size_t)w;
		}
		c->outpos += n;
	}
	/* Sent: no copy of a password stays behind. */
	explicit_bzero(c->out, c->outlen);
	c->outpos = c->outlen = 0;
	return 1;
}

/*
 * Read what the transport has for c and feed it to the reply parser.
 * Returns 1 if something was read, 0 if nothing was there, -1 on
 * failure (the server closed the connection, an error) with the reason
 * in why.  TLS reads on while OpenSSL holds decrypted data, which
 * poll() cannot see.
 */
int
conn_recv(struct conn *c, char *why, size_t whylen)
{
	char buf[16384];
	size_t n = 0;

	for (;;) {
		if (c->tls != NULL) {
			c->rwant = 0;
			switch (tls_read(c->tls, buf, sizeof(buf), &n, why, whylen)) {
			case TLS_OK: break;
			case TLS_WANT_READ: return 0;
			case TLS_WANT_WRITE: c->rwant = POLLOUT; return 0;
			default: c->fail = CONN_FAIL_OTHER; return -1;
			}
		} else {
			ssize_t r = read(c->ctx->fd, buf, sizeof(buf));
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return 0;
			if (r <= 0) {
				c->fail = r == 0 ? CONN_FAIL_CLOSED :
				    fail_of(errno);
				snprintf(why, whylen, "%s", r == 0 ?
				    "Server closed the connection" : strerror(errno));
				return -1;
			}
			n = (size_t)r;
		}
		if (redisReaderFeed(c->ctx->reader, buf, n) != REDIS_OK) {
			c->fail = CONN_FAIL_OTHER;
			snprintf(why, whylen, "%s", c->ctx->reader->errstr);
			return -1;
		}
		if (c->tls == NULL || !tls_pending(c->tls))
			return 1;
	}
}

/* The poll events c waits for while a request on it is outstanding. */
short
conn_events(const struct conn *c)
{
	if (c->handshake)
		return c->hwant;
	return (short)(POLLIN | c->rwant |
	    (c->outpos < c->outlen ? c->wwant : 0));
}

/*
 * Take c's TLS handshake a step further.  Returns 1 once established, 0
 * while it goes on (c->hwant says on what), -1 with the reason in why.
 * The TCP connect's own outcome is looked at first, so that a refused
 * connection is reported as such and not as a TLS error.
 */
int
conn_handshake(struct conn *c, char *why, size_t whylen)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (c->connecting) {
		if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e != 0) {
			c->fail = fail_of(e);
			snprintf(why, whylen, "%s", strerror(e));
			return -1;
		}
		c->connecting = 0;
	}
	switch (tls_handshake(c->tls, why, whylen)) {
	case TLS_OK:
		c->handshake = 0;
		return 1;
	case TLS_WANT_READ:
		c->hwant = POLLIN;
		return 0;
	case TLS_WANT_WRITE:
		c->hwant = POLLOUT;
		return 0;
	default:
		c->fail = CONN_FAIL_OTHER;
		return -1;
	}
}

/* Does OpenSSL hold decrypted data of c that poll() cannot see? */
int
conn_pending(const struct conn *c)
{
	return c->tls != NULL && !c->handshake && tls_pending(c->tls);
}
