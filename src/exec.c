/*
 * exec.c - conn_exec(), which sends one command on each of several
 * connections at once and collects the replies with poll(2), so that N
 * servers cost one round trip, not N.  Each request is a slot: it
 * connects (conn_open(), with AUTH and SELECT queued before it), sends,
 * and reads the preamble's replies and then its own.  A connection that
 * fails or times out is closed; the next conn_exec() on it reconnects.
 */
#include "exec.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "clock.h"
#include "proto.h"

struct slot {
	int skip;	/* preamble replies still to read */
	int auth;	/* the first of them is AUTH's */
	int busy;	/* waiting for the reply */
	int fresh;	/* connecting: nothing read yet */
	int gated;	/* the request waits for the preamble's replies */
};

/* Fail the slot: its kind in r->fail, and why in r->err, naming the
 * server; close. */
static void
slot_fail(struct conn *c, struct conn_req *r, struct slot *s,
    enum conn_fail kind, const char *why)
{
	/* A TLS server drops a client that does not speak TLS without a
	 * word, but so does a proxy with nothing behind it: the hint only
	 * when the port keeps a silent connection open (conn_tls_likely()).
	 * A plain server does not answer a TLS handshake. */
	int plain_to_tls = s->fresh && c->tls == NULL &&
	    c->url->kind == URL_TCP && kind == CONN_FAIL_CLOSED &&
	    conn_tls_likely(c);
	int tls_to_plain = s->fresh && kind == CONN_FAIL_TIMEOUT &&
	    c->handshake && !c->connecting;
	int k = snprintf(r->err, sizeof(r->err), "%s%s: ",
	    s->fresh ? "cannot connect to " : "", c->name);

	r->reason = k > 0 && (size_t)k < sizeof(r->err) ? k : 0;
	snprintf(r->err + r->reason, sizeof(r->err) - (size_t)r->reason,
	    "%s%s", why, plain_to_tls ? " (a TLS port? use rediss:// or --tls)" :
	    tls_to_plain ? " (not a TLS port?)" : "");
	r->fail = kind;
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
reply_fatal(const struct conn *c, const struct slot *s, const redisReply *p,
    char *why, size_t len)
{
	const char *e = p->str, *text = e + strcspn(e, " ");

	/* A server that wants no password says so to AUTH, and serves us
	 * all the same: a password from the environment or a file that is
	 * meant for other servers of a quorum is no error here. */
	if (s->skip > 0 && s->auth &&
	    (strstr(e, "without any password configured") != NULL ||
	    strstr(e, "but no password is set") != NULL))
		return 0;
	if (s->skip > 0 && s->auth)
		snprintf(why, len, "authentication failed: %s%s", *text ? text + 1 : e,
		    c->password ? "" : " (no password given: see --password-file)");
	else if (reply_error(p) == SERVER_NOAUTH)
		snprintf(why, len, "authentication required%s", c->password ?
		    "" : c->url->of_sentinel ? " (no password given: see "
		    "REDLOCK_SENTINEL_PASSWORD)" :
		    " (no password given: see --password-file)");
	else if (s->skip > 0)
		snprintf(why, len, "%s", e);
	else
		return 0;
	return 1;
}

/* Queue r's command on c.  Returns 0, or -1 after failing the slot. */
static int
slot_queue(struct conn *c, struct conn_req *r, struct slot *s)
{
	if (conn_queue(c, r->argc, r->argv, r->argvlen) < 0) {
		slot_fail(c, r, s, CONN_FAIL_OTHER, "out of memory");
		return -1;
	}
	return 0;
}

/* The preamble's last reply came: a gated request goes now (queued;
 * slot_ready() writes it).  Returns 0, or -1 after failing the slot. */
static int
slot_preamble_done(struct conn *c, struct conn_req *r, struct slot *s)
{
	if (!s->gated)
		return 0;
	s->gated = 0;
	return slot_queue(c, r, s);
}

/*
 * Take one reply: a dropped one, the preamble's (AUTH, SELECT, the
 * probe), that of a command queued ahead (conn_queue_ahead()) or the
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
	/* A server at its maxclients says so and closes before it reads a
	 * command: that is the answer, not the probe's. */
	if (reply_error(p) == SERVER_MAXCLIENTS) {
		snprintf(why, sizeof(why), "%s", p->str);
		freeReplyObject(p);
		slot_fail(c, r, s, CONN_FAIL_SERVER, why);
		return -1;
	}
	if (s->skip == 1 && c->probe == CONN_PROBE_SENT) {
		/* The probe's, kept whatever it says (conn.h). */
		s->skip = 0;
		c->probe = CONN_PROBE_DONE;
		c->probe_reply = p;
		return slot_preamble_done(c, r, s);
	}
	if (p->type == REDIS_REPLY_ERROR &&
	    reply_fatal(c, s, p, why, sizeof(why))) {
		freeReplyObject(p);
		slot_fail(c, r, s, CONN_FAIL_SERVER, why);
		return -1;
	}
	if (s->skip > 0) {
		s->skip--;
		s->auth = 0;
		freeReplyObject(p);
		return s->skip == 0 ? slot_preamble_done(c, r, s) : 0;
	}
	if (c->ahead > 0) {
		c->ahead--;
		if (c->ahead_reply != NULL)
			freeReplyObject(c->ahead_reply);
		c->ahead_reply = p;
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

	if (conn_recv(c, why, sizeof(why)) < 0) {
		slot_fail(c, r, s, c->fail, why);
		return;
	}
	while (s->busy) {
		if (redisGetReplyFromReader(c->ctx, &reply) != REDIS_OK) {
			slot_fail(c, r, s, CONN_FAIL_OTHER, c->ctx->errstr);
			return;
		}
		if (reply == NULL || slot_reply(c, r, s, reply) < 0)
			return;
	}
}

/* Take a TLS handshake a step further: 1 done, 0 going on, -1 failed
 * (the slot with it). */
static int
slot_handshake(struct conn *c, struct conn_req *r, struct slot *s)
{
	char why[256];
	int rc = conn_handshake(c, why, sizeof(why));

	if (rc < 0)
		slot_fail(c, r, s, c->fail, why);
	return rc;
}

/* Has everything of s's request been sent? */
static int
slot_sent(const struct conn *c, const struct slot *s)
{
	return c->ctx != NULL && !c->handshake && !s->gated &&
	    c->outpos == c->outlen;
}

/* Write what is queued, as far as poll's events ev allow.  Returns 0,
 * or -1 after failing the slot. */
static int
slot_write(struct conn *c, struct conn_req *r, struct slot *s, short ev)
{
	char why[256];

	/* A TLS read may be waiting for a write and the other way round,
	 * so on TLS both are tried whatever the event. */
	if (c->outpos < c->outlen &&
	    (c->tls != NULL || (ev & (POLLOUT | POLLERR | POLLHUP))) &&
	    conn_send(c, why, sizeof(why)) < 0) {
		slot_fail(c, r, s, c->fail, why);
		return -1;
	}
	if (slot_sent(c, s))
		r->sent = 1;
	return 0;
}

/* Act on poll's events ev for the busy slot s of c. */
static void
slot_ready(struct conn *c, struct conn_req *r, struct slot *s, short ev)
{
	int gated = s->gated;

	if (c->handshake && slot_handshake(c, r, s) <= 0)
		return;
	if (slot_write(c, r, s, ev) < 0)
		return;
	if (c->tls != NULL || (ev & (POLLIN | POLLERR | POLLHUP)))
		slot_read(c, r, s);
	/* Let go just now by the preamble's replies: it goes at once. */
	if (gated && !s->gated && s->busy)
		slot_write(c, r, s, POLLOUT);
}

/* Queue r on c, connecting first if needed; sets up s. */
static void
slot_start(struct conn *c, struct conn_req *r, struct slot *s)
{
	memset(s, 0, sizeof(*s));
	r->reply = NULL;
	r->err[0] = '\0';
	r->reason = 0;
	r->fail = CONN_FAIL_NONE;
	r->timed_out = 0;
	r->sent = 0;
	if (r->argc == 0)
		return;
	if (c->ctx == NULL) {
		char why[256];

		s->fresh = 1;
		s->skip = conn_open(c, why, sizeof(why));
		if (s->skip < 0) {
			slot_fail(c, r, s, c->fail, why);
			return;
		}
		s->auth = conn_auths(c) && s->skip > 0;
	} else if (c->early > 0) {
		/* Opened ahead (conn_start()): as fresh as above. */
		s->fresh = 1;
		s->skip = c->early - 1;
		s->auth = conn_auths(c) && s->skip > 0;
		c->early = 0;
	}
	/* After AUTH or SELECT the request waits for their replies: sent
	 * with them, it would run as the default user, or in database 0,
	 * when they fail. */
	s->gated = s->skip > 0 && (conn_auths(c) || c->url->db != 0);
	if (!s->gated && slot_queue(c, r, s) < 0)
		return;
	s->busy = 1;
}

/* The slots that are done with now that the replies in hand settled
 * the matter: a fully sent request's reply is dropped when it comes, so
 * the connection stays open for the next command. */
static void
slots_settle(struct conn *c, struct conn_req *r, struct slot *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (!s[i].busy || !slot_sent(&c[i], &s[i]))
			continue;
		c[i].discard += s[i].skip + c[i].ahead + 1;
		c[i].ahead = 0;
		if (c[i].probe == CONN_PROBE_SENT)	/* dropped with it */
			c[i].probe = CONN_PROBE_WANTED;
		s[i].busy = 0;
		r[i].fail = CONN_FAIL_UNNEEDED;
		r[i].reason = (int)fmt_cat(r[i].err, sizeof(r[i].err),
		    c[i].name, ": ", (char *)NULL);
		fmt_cat(r[i].err + r[i].reason, sizeof(r[i].err) -
		    (size_t)r[i].reason, "no reply needed", (char *)NULL);
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
		if (slot_sent(&c[i], &s[i]))
			s[i].fresh = 0;
		slot_fail(&c[i], &r[i], &s[i], CONN_FAIL_TIMEOUT, !s[i].fresh ?
		    "no reply in time (the server is slow or far away)" :
		    c[i].handshake && !c[i].connecting ?
		    "TLS handshake timed out" : "Connection timed out");
	}
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

/* How many of n requests have a reply. */
int
conn_req_replies(const struct conn_req *r, int n)
{
	int got = 0;

	for (int i = 0; i < n; i++)
		got += r[i].reply != NULL;
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
	return conn_exec_until(c, r, n, deadline, intr_fd, NULL);
}

/* What conn_exec_meanwhile() asked for, until it is done. */
static conn_meanwhile_fn *meanwhile_fn;
static void *meanwhile_arg;

/*
 * Have fn(arg) called once, by the next conn_exec() that sends a
 * request, right after sending it: work that the caller would do after
 * the reply anyway is then done while the server answers (run.c starts
 * the guard during the first attempt).  fn NULL forgets it.  Not for
 * threads: set and used only while the main thread is the only one
 * (run.c's acquire phase, before the renewal thread exists).
 */
void
conn_exec_meanwhile(conn_meanwhile_fn *fn, void *arg)
{
	meanwhile_fn = fn;
	meanwhile_arg = arg;
}

/* Call what conn_exec_meanwhile() asked for, once. */
static void
meanwhile(void)
{
	conn_meanwhile_fn *fn = meanwhile_fn;

	meanwhile_fn = NULL;
	if (fn != NULL)
		fn(meanwhile_arg);
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
		pfd[k].events = conn_events(&c[i]);
		pfd[k].revents = 0;
		if (conn_pending(&c[i]))
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

/* While settled() has replies to judge, it is asked again at least this
 * often, so that it may decide by the time as well (quorum_distinct()
 * waits for the slowest server only so long after a majority). */
#define CONN_SETTLE_POLL_MS 5

/*
 * As conn_exec(), but stop waiting for the rest once settled(r, n)
 * says the replies in hand decide the matter; the connections still
 * waiting are closed and their requests marked timed out.
 */
int
conn_exec_until(struct conn *c, struct conn_req *r, int n, int64_t deadline,
    int intr_fd, conn_settled_fn *settled)
{
	struct slot s[n > 0 ? n : 1];
	struct pollfd pfd[n + 1];
	int idx[n + 1], busy = 0;

	for (int i = 0; i < n; i++) {
		slot_start(&c[i], &r[i], &s[i]);
		/* A plain connection writes at once: a first poll() would
		 * only say that it can (or, still connecting, that it
		 * cannot yet: then the write waits for it). */
		if (s[i].busy && c[i].tls == NULL)
			slot_ready(&c[i], &r[i], &s[i], POLLOUT);
		busy += s[i].busy;
	}
	if (busy > 0)
		meanwhile();
	while (busy > 0) {
		int64_t left = deadline - clock_ms();
		int k, rc, now;

		if (left <= 0)
			break;
		if (left > 1000)
			left = 1000;
		if (settled != NULL && left > CONN_SETTLE_POLL_MS &&
		    conn_req_replies(r, n) > 0)
			left = CONN_SETTLE_POLL_MS;
		k = slots_poll_set(c, s, n, intr_fd, pfd, idx, &now);
		rc = poll(pfd, (nfds_t)k, now ? 0 : (int)left);
		if (rc < 0 && errno != EINTR)
			break;
		if (intr_fd >= 0 && (pfd[k - 1].revents & POLLIN)) {
			for (int i = 0; i < n; i++)
				if (s[i].busy)
					slot_fail(&c[i], &r[i], &s[i],
					    CONN_FAIL_INTERRUPTED,
					    "interrupted");
			return -1;
		}
		for (int j = 0; j < k; j++) {
			int i = idx[j];
			short ev = pfd[j].revents;

			if (i >= 0 && conn_pending(&c[i]))
				ev |= POLLIN;
			if (i >= 0 && ev != 0 && s[i].busy)
				slot_ready(&c[i], &r[i], &s[i], ev);
		}
		busy = 0;
		for (int i = 0; i < n; i++)
			busy += s[i].busy;
		if (busy > 0 && settled != NULL && settled(r, n)) {
			slots_settle(c, r, s, n);
			break;
		}
	}
	slots_expire(c, r, s, n);
	return conn_req_replies(r, n);
}
