/*
 * conn.c - one connection per server, and conn_exec(), which sends one
 * command on each of several connections at once and collects the
 * replies with poll(2), so that N servers cost one round trip, not N.
 *
 * hiredis is the protocol codec only: redisFormatCommandArgv() makes
 * the bytes of a command, and the context's reader (redisReaderFeed(),
 * redisGetReplyFromReader()) parses replies.  The bytes themselves go
 * through the I/O seam below, io_send() and io_recv(): the socket for a
 * plain connection, OpenSSL (tls.c) for a TLS one; nothing else differs,
 * and hiredis's own I/O calls are never used.  Sockets are non-blocking:
 * output is queued and written when poll says the socket is ready.  A
 * connection that fails or times out is closed; the next conn_exec() on
 * it reconnects and sends AUTH and SELECT again.
 *
 * A connection belongs to one thread: the renewal thread has its own.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "sentinel.h"
#include "tls.h"

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
	tls_free(c->tls);
	c->tls = NULL;
	if (c->ctx != NULL)
		redisFree(c->ctx);
	if (c->out != NULL)	/* it may hold AUTH and its password */
		explicit_bzero(c->out, c->outcap);
	free(c->out);
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

/* Free the replies of n requests and mark them empty. */
void
conn_req_clear(struct conn_req *r, int n)
{
	for (int i = 0; i < n; i++) {
		if (r[i].reply != NULL)
			freeReplyObject(r[i].reply);
		r[i].reply = NULL;
		r[i].err[0] = '\0';
	}
}

/*
 * Queue one command on c's output.  Returns 0, or -1 out of memory.
 * Every copy of a command is wiped before it is freed, since AUTH's
 * holds a password (hence no realloc(), which would leave one behind).
 */
static int
conn_queue(struct conn *c, int argc, const char **argv, const size_t *len)
{
	char *cmd;
	long long n = redisFormatCommandArgv(&cmd, argc, argv, len);

	if (n < 0)
		return -1;
	if (c->outlen + (size_t)n > c->outcap) {
		size_t cap = (c->outlen + (size_t)n) * 2;
		char *o = malloc(cap);
		if (o == NULL) {
			explicit_bzero(cmd, (size_t)n);
			redisFreeCommand(cmd);
			return -1;
		}
		if (c->out != NULL) {
			memcpy(o, c->out, c->outlen);
			explicit_bzero(c->out, c->outcap);
			free(c->out);
		}
		c->out = o;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, cmd, (size_t)n);
	c->outlen += (size_t)n;
	explicit_bzero(cmd, (size_t)n);
	redisFreeCommand(cmd);
	c->wwant = POLLOUT;	/* nothing blocks the new output yet */
	return 0;
}

/*
 * Start connecting, with TLS if the URL says so, and queue AUTH and
 * SELECT.  Returns the number of replies that precede the caller's, or
 * -1 with the reason in err.  hiredis 0.14 cannot open its socket with
 * SOCK_CLOEXEC, so the flag is set here, before any child can be forked.
 */
static int
conn_open(struct conn *c, char *err, size_t errlen)
{
	const struct url *u = c->url;
	int pre = 0;

	if (c->host[0] != '\0')
		c->ctx = redisConnectNonBlock(c->host, c->port);
	else if (u->kind == URL_SENTINEL) {
		/* Ask the sentinels where the master is now; it comes back
		 * connected and authenticated (SPEC section 9). */
		if (sentinel_open(c, err, errlen) < 0)
			return -1;
	} else if (u->kind == URL_UNIX)
		c->ctx = redisConnectUnixNonBlock(u->path);
	else
		c->ctx = redisConnectNonBlock(u->host, u->port);
	if (c->ctx == NULL || c->ctx->err) {
		snprintf(err, errlen, "cannot connect to %s: %s", c->name,
		    c->ctx ? c->ctx->errstr : "out of memory");
		conn_close(c);
		return -1;
	}
	(void)fcntl(c->ctx->fd, F_SETFD, FD_CLOEXEC);
	if (u->tls && (u->kind == URL_TCP || c->host[0] != '\0')) {
		/* A redirection's node is checked against its own name. */
		const char *peer = c->host[0] != '\0' ? c->host : u->host;
		int k = snprintf(err, errlen, "cannot connect to %s: ", c->name);

		if ((size_t)k >= errlen)
			k = 0;
		c->tls = tls_new(c->ctx->fd, peer, err + k, errlen - (size_t)k);
		if (c->tls == NULL) {
			conn_close(c);
			return -1;
		}
		err[0] = '\0';
		c->handshake = c->connecting = 1;
		c->hwant = POLLOUT;
	}
	/* A master found through Sentinel comes authenticated. */
	if (c->password != NULL && u->kind != URL_SENTINEL) {
		/* AUTH [user] password */
		const char *av[3] = { "AUTH", u->user, c->password };
		int ac = 3;

		if (u->user == NULL) {
			av[1] = c->password;
			ac = 2;
		}
		if (conn_queue(c, ac, av, NULL) < 0)
			goto nomem;
		pre++;
	}
	if (u->db != 0) {
		char db[16];
		const char *av[2] = { "SELECT", db };
		snprintf(db, sizeof(db), "%d", u->db);
		if (conn_queue(c, 2, av, NULL) < 0)
			goto nomem;
		pre++;
	}
	return pre;
nomem:
	snprintf(err, errlen, "cannot connect to %s: out of memory", c->name);
	conn_close(c);
	return -1;
}

/* --- the I/O seam ---------------------------------------------------------- */

/*
 * Write as much of c's output as the transport takes.  Returns 1 when
 * all is written, 0 when it would block (c->wwant says on what), -1 on
 * failure with the reason in why.
 */
static int
io_send(struct conn *c, char *why, size_t whylen)
{
	while (c->outpos < c->outlen) {
		size_t n = 0;

		if (c->tls != NULL) {
			switch (tls_write(c->tls, c->out + c->outpos,
			    c->outlen - c->outpos, &n, why, whylen)) {
			case TLS_OK: break;
			case TLS_WANT_READ: c->wwant = POLLIN; return 0;
			case TLS_WANT_WRITE: c->wwant = POLLOUT; return 0;
			default: return -1;
			}
		} else {
			ssize_t w = write(c->ctx->fd, c->out + c->outpos,
			    c->outlen - c->outpos);
			if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
				c->wwant = POLLOUT;
				return 0;
			}
			if (w < 0) {
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
static int
io_recv(struct conn *c, char *why, size_t whylen)
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
			default: return -1;
			}
		} else {
			ssize_t r = read(c->ctx->fd, buf, sizeof(buf));
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return 0;
			if (r <= 0) {
				snprintf(why, whylen, "%s", r == 0 ?
				    "Server closed the connection" : strerror(errno));
				return -1;
			}
			n = (size_t)r;
		}
		if (redisReaderFeed(c->ctx->reader, buf, n) != REDIS_OK) {
			snprintf(why, whylen, "%s", c->ctx->reader->errstr);
			return -1;
		}
		if (c->tls == NULL || !tls_pending(c->tls))
			return 1;
	}
}

/* The poll events c waits for while a request on it is outstanding. */
static short
io_events(const struct conn *c)
{
	if (c->handshake)
		return c->hwant;
	return (short)(POLLIN | c->rwant |
	    (c->outpos < c->outlen ? c->wwant : 0));
}

/* --- one request on one connection ------------------------------------------- */

struct slot {
	int skip;	/* preamble replies still to read */
	int auth;	/* the first of them is AUTH's */
	int busy;	/* waiting for the reply */
	int fresh;	/* connecting: nothing read yet */
};

/* Fail the slot: say why in r->err, naming the server, and close. */
static void
slot_fail(struct conn *c, struct conn_req *r, struct slot *s,
    const char *why)
{
	/* A TLS server drops a client that does not speak TLS without a
	 * word, and a plain one does not answer a TLS handshake. */
	int plain_to_tls = s->fresh && c->tls == NULL &&
	    c->url->kind == URL_TCP && (strstr(why, "reset by peer") != NULL ||
	    strcmp(why, "Server closed the connection") == 0);
	int tls_to_plain = strcmp(why, "TLS handshake timed out") == 0;

	snprintf(r->err, sizeof(r->err), "%s%s: %s%s",
	    s->fresh ? "cannot connect to " : "", c->name, why,
	    plain_to_tls ? " (a TLS port? use rediss:// or --tls)" :
	    tls_to_plain ? " (not a TLS port?)" : "");
	conn_close(c);
	s->busy = 0;
}

/*
 * Does the error reply e end the slot?  Then say why.  AUTH's error
 * (the first preamble reply, with a password) is "authentication
 * failed", SELECT's is itself, and any reply that says we have not
 * authenticated is "authentication required": Redis answers NOAUTH,
 * except that it refuses a command of more than 10 arguments, or one
 * longer than 16 KiB such as EVAL and its script, from a client that has
 * not authenticated with a protocol error, before looking at the command
 * (networking.c, processMultibulkBuffer()).
 */
static int
reply_fatal(const struct conn *c, const struct slot *s, const char *e,
    char *why, size_t len)
{
	const char *text = e + strcspn(e, " ");

	if (s->skip > 0 && s->auth)
		snprintf(why, len, "authentication failed: %s", *text ? text + 1 : e);
	else if (strncmp(e, "NOAUTH", 6) == 0 ||
	    strstr(e, "Protocol error: unauthenticated") != NULL)
		snprintf(why, len, "authentication required%s", c->password ?
		    "" : " (no password given: see --password-file)");
	else if (s->skip > 0)
		snprintf(why, len, "%s", e);
	else
		return 0;
	return 1;
}

/*
 * Take one reply: a dropped one, the preamble's (AUTH, SELECT) or the
 * caller's.  Returns 0, or -1 after failing the slot (reply_fatal()).
 */
static int
slot_reply(struct conn *c, struct conn_req *r, struct slot *s,
    redisReply *p)
{
	char why[320];

	s->fresh = 0;
	if (c->discard > 0) {
		c->discard--;
		freeReplyObject(p);
		return 0;
	}
	if (p->type == REDIS_REPLY_ERROR &&
	    reply_fatal(c, s, p->str, why, sizeof(why))) {
		freeReplyObject(p);
		slot_fail(c, r, s, why);
		return -1;
	}
	if (s->skip > 0) {
		s->skip--;
		s->auth = 0;
		freeReplyObject(p);
		return 0;
	}
	r->reply = p;
	s->busy = 0;
	return 0;
}

/* Read what is there and take complete replies. */
static void
slot_read(struct conn *c, struct conn_req *r, struct slot *s)
{
	char why[256];
	void *reply;

	if (io_recv(c, why, sizeof(why)) < 0) {
		slot_fail(c, r, s, why);
		return;
	}
	while (s->busy) {
		if (redisGetReplyFromReader(c->ctx, &reply) != REDIS_OK) {
			slot_fail(c, r, s, c->ctx->errstr);
			return;
		}
		if (reply == NULL || slot_reply(c, r, s, reply) < 0)
			return;
	}
}

/*
 * Take a TLS handshake a step further.  Returns 1 once established, 0
 * while it goes on, -1 after failing the slot.  The TCP connect's own
 * outcome is looked at first, so that a refused connection is reported
 * as such and not as a TLS error.
 */
static int
slot_handshake(struct conn *c, struct conn_req *r, struct slot *s)
{
	char why[256];
	int e = 0;
	socklen_t len = sizeof(e);

	if (c->connecting) {
		if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e != 0) {
			slot_fail(c, r, s, strerror(e));
			return -1;
		}
		c->connecting = 0;
	}
	switch (tls_handshake(c->tls, why, sizeof(why))) {
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
		slot_fail(c, r, s, why);
		return -1;
	}
}

/* Act on poll's events ev for the busy slot s of c. */
static void
slot_ready(struct conn *c, struct conn_req *r, struct slot *s, short ev)
{
	char why[256];

	if (c->handshake && slot_handshake(c, r, s) <= 0)
		return;
	/* A TLS read may be waiting for a write and the other way round,
	 * so on TLS both are tried whatever the event. */
	if (c->outpos < c->outlen &&
	    (c->tls != NULL || (ev & (POLLOUT | POLLERR | POLLHUP))) &&
	    io_send(c, why, sizeof(why)) < 0) {
		slot_fail(c, r, s, why);
		return;
	}
	if (c->tls != NULL || (ev & (POLLIN | POLLERR | POLLHUP)))
		slot_read(c, r, s);
}

/* Has everything of s's request been sent? */
static int
slot_sent(const struct conn *c)
{
	return c->ctx != NULL && !c->handshake && c->outpos == c->outlen;
}

/* Queue r on c, connecting first if needed; sets up s. */
static void
slot_start(struct conn *c, struct conn_req *r, struct slot *s)
{
	memset(s, 0, sizeof(*s));
	r->reply = NULL;
	r->err[0] = '\0';
	r->timed_out = 0;
	if (r->argc == 0)
		return;
	if (c->ctx == NULL) {
		s->skip = conn_open(c, r->err, sizeof(r->err));
		if (s->skip < 0)
			return;
		s->auth = c->password != NULL && c->url->kind != URL_SENTINEL;
		s->fresh = 1;
	}
	if (conn_queue(c, r->argc, r->argv, r->argvlen) < 0) {
		slot_fail(c, r, s, "out of memory");
		return;
	}
	s->busy = 1;
}

/* The slots that are done with now that the replies in hand settled
 * the matter: a fully sent request's reply is dropped when it comes, so
 * the connection stays open for the next command. */
static void
slots_settle(struct conn *c, struct conn_req *r, struct slot *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (!s[i].busy || !slot_sent(&c[i]))
			continue;
		c[i].discard += s[i].skip + 1;
		s[i].busy = 0;
		snprintf(r[i].err, sizeof(r[i].err), "%s: no reply needed",
		    c[i].name);
	}
}

/* Close the connections still waiting at the deadline. */
static void
slots_expire(struct conn *c, struct conn_req *r, struct slot *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (!s[i].busy)
			continue;
		r[i].timed_out = 1;
		/* Sent means connected: the server is slow. */
		if (slot_sent(&c[i]))
			s[i].fresh = 0;
		slot_fail(&c[i], &r[i], &s[i], !s[i].fresh ? "no reply in time" :
		    c[i].handshake && !c[i].connecting ?
		    "TLS handshake timed out" : "Connection timed out");
	}
}

/*
 * Send r[i] on c[i] for every i with r[i].argc > 0, all at once, and
 * wait for the replies until deadline (a clock_ms() value).  Connects
 * where needed.  A reply, even an error reply, lands in r[i].reply;
 * otherwise r[i].err says why and the connection is closed.
 * If intr_fd >= 0 becomes readable, gives up at once (closing every
 * connection still waiting: its command may or may not have run) and
 * returns -1; otherwise returns the number of replies received.
 */
int
conn_exec(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd)
{
	return conn_exec_until(c, r, n, deadline, intr_fd, NULL, NULL);
}

/*
 * Fill pfd with what the busy slots wait for, and intr_fd last; idx
 * maps entries to slots (-1: intr_fd).  Returns the count; *now is set
 * when a TLS connection holds data that poll() cannot see.
 */
static int
slots_poll_set(struct conn *c, struct slot *s, int n, int intr_fd,
    struct pollfd *pfd, int *idx, int *now)
{
	int k = 0;

	*now = 0;
	for (int i = 0; i < n; i++) {
		if (!s[i].busy || c[i].ctx == NULL)
			continue;
		pfd[k].fd = c[i].ctx->fd;
		pfd[k].events = io_events(&c[i]);
		pfd[k].revents = 0;
		if (c[i].tls != NULL && !c[i].handshake && tls_pending(c[i].tls))
			*now = 1;
		idx[k++] = i;
	}
	if (intr_fd >= 0) {
		pfd[k].fd = intr_fd;
		pfd[k].events = POLLIN;
		pfd[k].revents = 0;
		idx[k++] = -1;
	}
	return k;
}

/*
 * As conn_exec(), but stop waiting for the rest once settled(r, n, arg)
 * says the replies in hand decide the matter; the connections still
 * waiting are closed and their requests marked timed out.
 */
int
conn_exec_until(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd, conn_settled_fn *settled, const void *arg)
{
	struct slot s[n > 0 ? n : 1];
	struct pollfd pfd[n + 1];
	int idx[n + 1], busy = 0, got = 0;

	for (int i = 0; i < n; i++) {
		slot_start(&c[i], &r[i], &s[i]);
		busy += s[i].busy;
	}
	while (busy > 0) {
		int64_t left = deadline - clock_ms();
		int k, rc, now;

		if (left <= 0)
			break;
		k = slots_poll_set(c, s, n, intr_fd, pfd, idx, &now);
		rc = poll(pfd, (nfds_t)k, now ? 0 : left > 1000 ? 1000 : (int)left);
		if (rc < 0 && errno != EINTR)
			break;
		if (intr_fd >= 0 && (pfd[k - 1].revents & POLLIN)) {
			for (int i = 0; i < n; i++)
				if (s[i].busy)
					slot_fail(&c[i], &r[i], &s[i],
					    "interrupted");
			return -1;
		}
		for (int j = 0; j < k; j++) {
			int i = idx[j];
			short ev = pfd[j].revents;

			if (i >= 0 && c[i].tls != NULL && !c[i].handshake &&
			    tls_pending(c[i].tls))
				ev |= POLLIN;
			if (i >= 0 && ev != 0 && s[i].busy)
				slot_ready(&c[i], &r[i], &s[i], ev);
		}
		busy = 0;
		for (int i = 0; i < n; i++)
			busy += s[i].busy;
		if (busy > 0 && settled != NULL && settled(r, n, arg)) {
			slots_settle(c, r, s, n);
			break;
		}
	}
	slots_expire(c, r, s, n);
	for (int i = 0; i < n; i++)
		got += r[i].reply != NULL;
	return got;
}
