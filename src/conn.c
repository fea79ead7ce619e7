/*
 * conn.c - one hiredis context per server, and conn_exec(), which sends
 * one command on each of several connections at once and collects the
 * replies with poll(2), so that N servers cost one round trip, not N.
 *
 * Contexts are non-blocking: hiredis queues output, and we call
 * redisBufferWrite()/redisBufferRead() only when poll says the socket is
 * ready.  A connection that fails or times out is closed; the next
 * conn_exec() on it reconnects and sends AUTH and SELECT again.
 *
 * A context belongs to one thread: the renewal thread has its own.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "sentinel.h"

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
	if (c->ctx != NULL)
		redisFree(c->ctx);
	c->ctx = NULL;
	c->discard = 0;
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
 * Start connecting and queue AUTH and SELECT.  Returns the number of
 * replies that precede the caller's, or -1 with the reason in err.
 * hiredis 0.14 cannot open its socket with SOCK_CLOEXEC, so the flag is
 * set here, before any child can be forked.
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
	if (c->ctx == NULL) {
		snprintf(err, errlen, "cannot connect to %s: out of memory",
		    c->name);
		return -1;
	}
	if (c->ctx->err) {
		snprintf(err, errlen, "cannot connect to %s: %s", c->name,
		    c->ctx->errstr);
		conn_close(c);
		return -1;
	}
	(void)fcntl(c->ctx->fd, F_SETFD, FD_CLOEXEC);
	if (c->password != NULL && u->kind != URL_SENTINEL) {
		/* AUTH [user] password */
		const char *av[3] = { "AUTH", u->user, c->password };
		int ac = 3;

		if (u->user == NULL) {
			av[1] = c->password;
			ac = 2;
		}
		redisAppendCommandArgv(c->ctx, ac, av, NULL);
		pre++;
	}
	if (u->db != 0) {
		char db[16];
		const char *av[2] = { "SELECT", db };
		snprintf(db, sizeof(db), "%d", u->db);
		redisAppendCommandArgv(c->ctx, 2, av, NULL);
		pre++;
	}
	return pre;
}

struct slot {
	int skip;	/* preamble replies still to read */
	int wdone;	/* all output written */
	int busy;	/* waiting for the reply */
	int fresh;	/* connecting: nothing read yet */
};

static void
slot_fail(struct conn *c, struct conn_req *r, struct slot *s,
    const char *why)
{
	snprintf(r->err, sizeof(r->err), "%s%s: %s",
	    s->fresh ? "cannot connect to " : "", c->name, why);
	conn_close(c);
	s->busy = 0;
}

/* Read what is there and take complete replies. */
static void
slot_read(struct conn *c, struct conn_req *r, struct slot *s)
{
	void *reply;

	if (redisBufferRead(c->ctx) != REDIS_OK) {
		slot_fail(c, r, s, c->ctx->errstr);
		return;
	}
	while (s->busy) {
		if (redisGetReplyFromReader(c->ctx, &reply) != REDIS_OK) {
			slot_fail(c, r, s, c->ctx->errstr);
			return;
		}
		if (reply == NULL)
			return;
		s->fresh = 0;
		if (c->discard > 0) {
			c->discard--;
			freeReplyObject(reply);
			continue;
		}
		if (s->skip > 0) {
			redisReply *p = reply;
			s->skip--;
			if (p->type == REDIS_REPLY_ERROR) {
				char why[160];
				snprintf(why, sizeof(why), "%s",
				    strncmp(p->str, "WRONGPASS", 9) == 0 ||
				    strstr(p->str, "assword") != NULL ||
				    strstr(p->str, "AUTH") != NULL ?
				    "authentication refused" : p->str);
				freeReplyObject(p);
				slot_fail(c, r, s, why);
				return;
			}
			freeReplyObject(p);
			continue;
		}
		r->reply = reply;
		s->busy = 0;
	}
}

/* Queue r[i] on c[i] for every request with argc > 0, connecting
 * where needed.  Returns how many are under way. */
static int
exec_start(struct conn *c, struct conn_req *r, struct slot *s, int n)
{
	int busy = 0;

	for (int i = 0; i < n; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		r[i].reply = NULL;
		r[i].err[0] = '\0';
		r[i].timed_out = 0;
		if (r[i].argc == 0)
			continue;
		if (c[i].ctx == NULL) {
			s[i].skip = conn_open(&c[i], r[i].err, sizeof(r[i].err));
			if (s[i].skip < 0)
				continue;
			s[i].fresh = 1;
		}
		if (redisAppendCommandArgv(c[i].ctx, r[i].argc, r[i].argv,
		    r[i].argvlen) != REDIS_OK) {
			slot_fail(&c[i], &r[i], &s[i], "out of memory");
			continue;
		}
		s[i].busy = 1;
		busy++;
	}
	return busy;
}

/* Close what is still waiting at the deadline (a connection that wrote
 * its request is slow, one that did not is not up).  Returns how many
 * replies came. */
static int
exec_finish(struct conn *c, struct conn_req *r, struct slot *s, int n)
{
	int got = 0;

	for (int i = 0; i < n; i++) {
		if (s[i].busy) {
			/* Written means connected: the server is slow. */
			r[i].timed_out = 1;
			if (s[i].wdone)
				s[i].fresh = 0;
			slot_fail(&c[i], &r[i], &s[i], s[i].fresh ?
			    "Connection timed out" : "no reply in time");
		}
		if (r[i].reply != NULL)
			got++;
	}
	return got;
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
	int idx[n + 1], busy;

	busy = exec_start(c, r, s, n);
	while (busy > 0) {
		int64_t left = deadline - clock_ms();
		int k = 0, rc;

		if (left <= 0)
			break;
		for (int i = 0; i < n; i++) {
			if (!s[i].busy || c[i].ctx == NULL)
				continue;
			pfd[k].fd = c[i].ctx->fd;
			pfd[k].events = POLLIN | (s[i].wdone ? 0 : POLLOUT);
			idx[k++] = i;
		}
		if (intr_fd >= 0) {
			pfd[k].fd = intr_fd;
			pfd[k].events = POLLIN;
			idx[k++] = -1;
		}
		rc = poll(pfd, (nfds_t)k, left > 1000 ? 1000 : (int)left);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
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

			if (i < 0 || ev == 0)
				continue;
			if (!s[i].wdone && (ev & (POLLOUT | POLLERR | POLLHUP))) {
				if (redisBufferWrite(c[i].ctx, &s[i].wdone) != REDIS_OK) {
					slot_fail(&c[i], &r[i], &s[i],
					    c[i].ctx->errstr);
					continue;
				}
			}
			if (ev & (POLLIN | POLLERR | POLLHUP))
				slot_read(&c[i], &r[i], &s[i]);
		}
		busy = 0;
		for (int i = 0; i < n; i++)
			busy += s[i].busy;
		if (busy > 0 && settled != NULL && settled(r, n, arg)) {
			/* The others' replies are not needed now; a fully sent
			 * request's reply is dropped when it comes, so the
			 * connection stays open for the next command. */
			for (int i = 0; i < n; i++) {
				if (!s[i].busy || !s[i].wdone)
					continue;
				c[i].discard += s[i].skip + 1;
				s[i].busy = 0;
				snprintf(r[i].err, sizeof(r[i].err), "%s: no reply needed",
				    c[i].name);
			}
			break;
		}
	}
	return exec_finish(c, r, s, n);
}
