/* conn.h - one connection to a server, and the transport under it;
 * exec.h drives several in parallel with poll(2) */
#ifndef REDLOCK_CONN_H
#define REDLOCK_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "url.h"

struct tls;

/* Why a request got no reply: for the code that acts on it (err says it
 * to the user). */
enum conn_fail {
	CONN_FAIL_NONE,		/* a reply came, or nothing was asked */
	CONN_FAIL_REFUSED,	/* nothing listens at the address: nothing
				 * was sent */
	CONN_FAIL_CLOSED,	/* the server closed or reset the connection */
	CONN_FAIL_TIMEOUT,	/* no answer by the deadline */
	CONN_FAIL_UNNEEDED,	/* given up on: the replies in hand settled
				 * the matter (conn_exec_until()) */
	CONN_FAIL_INTERRUPTED,	/* intr_fd became readable */
	CONN_FAIL_SERVER,	/* the server turned us away: authentication,
				 * SELECT, its client limit */
	CONN_FAIL_OTHER		/* TLS, a protocol error, out of memory... */
};

struct conn {
	const struct url *url;
	const char *password;	/* the URL's or the configuration's; not owned */
	char name[128];		/* for messages; never holds a password */
	/* Where to connect instead of the URL's address, when host[0] is
	 * not NUL: a Redis Cluster node a redirection named (cluster.c), or
	 * the master the sentinels named (sentinel.c).
	 * The URL's credentials and database still apply; with TLS, host
	 * is the name the server's certificate must match. */
	char host[256];
	int port;
	/* Sentinel: the configuration epoch of the master at host, as the
	 * sentinel that named it said (sentinel.c); it grows with every
	 * promotion, and goes to the failover guard (route.c). */
	long long epoch;
	struct cluster_map *map;	/* what cluster.c learnt: the slots
					 * redirections named, the cluster's
					 * nodes, the other URLs of it */
	int probe;		/* CONN_PROBE_*: ask a Redis Cluster node for
				 * its cluster's nodes at connect */
	enum conn_fail fail;	/* why the transport's last call failed */
	/* From here on, the state of one connection, zero when closed. */
	int routed;		/* Sentinel: host is the sentinels' answer for
				 * the next connect (route.c); each new
				 * connection asks them again */
	redisContext *ctx;	/* NULL while disconnected: the socket, and
				 * the reply parser (ctx->reader) */
	struct tls *tls;	/* TLS on ctx's socket, or NULL (plain) */
	int handshake;		/* TLS: not yet established */
	int connecting;		/* TLS: the TCP connect not yet confirmed */
	short hwant;		/* TLS: what the handshake waits for */
	short wwant;		/* what a blocked write waits for */
	short rwant;		/* TLS: POLLOUT if a read needs a write */
	char *out;		/* commands formatted but not yet written */
	size_t outpos, outlen, outcap;
	int discard;		/* replies still due to requests we gave up on */
	int early;		/* opened ahead of its first request
				 * (conn_start()): 1 + the preamble's
				 * replies due, until that request */
	int ahead;		/* replies due to commands queued ahead of the
				 * next request (conn_queue_ahead()) */
	redisReply *ahead_reply;	/* the last of them: conn_take_ahead() */
	redisReply *probe_reply;	/* the probe's, until topology.c
					 * takes it (conn_take_probe()) */
};

/* The probe: CLUSTER SHARDS queued after AUTH and SELECT on a new
 * connection, whose reply (a cluster's shards, or an error from a
 * server that is not a cluster node) is kept for topology.c.  Asked
 * once a connection until answered. */
enum {
	CONN_PROBE_NO,		/* never (the default; Sentinel) */
	CONN_PROBE_WANTED,	/* at the next connect */
	CONN_PROBE_SENT,	/* queued: the preamble's last reply */
	CONN_PROBE_DONE		/* answered */
};

void conn_init(struct conn *c, const struct url *u, const char *password);
void conn_close(struct conn *c);
int conn_retarget(struct conn *c, const char *host, int port);
int conn_queue_ahead(struct conn *c, int argc, const char **argv,
    const size_t *len);
redisReply *conn_take_ahead(struct conn *c);
redisReply *conn_take_probe(struct conn *c);
void conn_reseat(struct conn *c, const struct url *u, const char *password);

/* The transport under conn_exec() (exec.h): connect and queue the
 * preamble, queue a command, move bytes, step a TLS handshake.  Each
 * returns -1 with the reason in why and its kind in c->fail. */
int conn_tls_likely(const struct conn *c);
int conn_auths(const struct conn *c);
int conn_open(struct conn *c, char *err, size_t errlen);
void conn_start(struct conn *c);
int conn_queue(struct conn *c, int argc, const char **argv,
    const size_t *len);
int conn_send(struct conn *c, char *why, size_t whylen);
int conn_recv(struct conn *c, char *why, size_t whylen);
short conn_events(const struct conn *c);
int conn_handshake(struct conn *c, char *why, size_t whylen);
int conn_pending(const struct conn *c);

#endif
