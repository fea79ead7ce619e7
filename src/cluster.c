/*
 * cluster.c - speaking to a Redis Cluster through any of its nodes
 * (REDIS CLUSTER in redlock-protocol(7)).
 *
 * A URL may name any node.  A command for a hash slot that node does
 * not serve comes back as MOVED (the slot's owner, for good) or ASK
 * (the node the slot is migrating to, for this one command); a cluster
 * may also answer TRYAGAIN (a command on several keys while its slot's
 * keys are half moved) or CLUSTERDOWN.  cluster_follow() deals with all
 * four after each round of the routing layer (route_send(), route.c),
 * so every operation follows them without code of its own.  All of a lock's keys share one slot
 * (proto.c), so one connection per URL suffices: MOVED re-points it at
 * the slot's owner (conn_retarget()), keeping the URL's credentials and
 * database, and a cluster is one "server" of the quorum logic.
 *
 * What MOVED taught is kept in a small slot map per connection, which
 * cluster_route() consults before each command.  ASK is answered on a
 * connection of its own, opened for the one command, since it must not
 * move the slot's connection.
 *
 * The cluster's shape (its masters, for list; several URLs that are one
 * cluster) is topology.c's.
 */
#include "cluster.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "slot.h"

/* How many redirections in a row one command follows.  A command needs
 * at most two: MOVED to its slot's new owner, then ASK while that owner
 * moves the slot on (a node that left adds a third: back to the URL's node).
 * Five leave room for a map learnt while the slots were moving; more
 * would mean the nodes disagree about who serves the slot, which
 * following further does not mend, and every hop costs a connection. */
#define CLUSTER_MAX_HOPS 5

/* TRYAGAIN answers a command on several keys while their slot migrates
 * and the node asked does not have them all (a free lock's: until the
 * slot has moved, milliseconds to seconds); CLUSTERDOWN lasts until the
 * cluster heals or fails over (seconds, longer than an operation's
 * deadline: then the operation fails with 69).  Retries pause this
 * long, doubling, until the operation's deadline. */
#define CLUSTER_RETRY_FIRST_MS 10
#define CLUSTER_RETRY_MAX_MS 100

/* The bound on rounds of one cluster_follow(): every server's hops,
 * plus the retries, which the deadline ends first. */
#define CLUSTER_MAX_ROUNDS 64

/* Slots remembered per connection: a lock uses one slot; status of
 * several names or a long-lived process a few more. */
#define CLUSTER_MAP_SLOTS 16

/* The nodes of a cluster kept to fail over to when the one a
 * connection uses cannot be reached: any live node leads to the slot's
 * owner, so a few dozen, masters and replicas, find one whatever died. */
#define CLUSTER_MAX_NODES 64

/* Other URLs given for the same cluster: as many as -u may be. */
#define CLUSTER_MAX_SEEDS 64

struct cluster_slot {
	unsigned slot;
	int port;
	char host[256];
};

struct cluster_node {
	int port;
	char host[256];
};

/* Another URL of the cluster, with the password its connection uses. */
struct cluster_seed {
	const struct url *url;
	const char *password;
};

/*
 * What a connection knows of its cluster: the slot owners MOVED named
 * (oldest replaced first), the nodes the probe listed (topology.c) and
 * the URLs given for it (the first is the connection's own); `cursor`
 * walks the nodes, then the URLs, when a node cannot be reached.
 */
struct cluster_map {
	int n, next;
	struct cluster_slot e[CLUSTER_MAP_SLOTS];
	int nnodes, nseeds, cursor;
	struct cluster_node node[CLUSTER_MAX_NODES];
	struct cluster_seed seed[CLUSTER_MAX_SEEDS];
};

enum hop { HOP_NONE, HOP_MOVED, HOP_ASK, HOP_RETRY };

/* What to do next for one server's request. */
enum step { STEP_NONE, STEP_HERE, STEP_RETRY, STEP_ASK };

/* A redirection's target. */
struct hop_to {
	unsigned slot;
	int port;
	char host[256];
};

/* The host c connects to now (for a redirection or a topology that
 * names none: the answering node's own). */
const char *
cluster_conn_host(const struct conn *c)
{
	if (c->host[0] != '\0')
		return c->host;
	return c->url->kind == URL_TCP ? c->url->host : "localhost";
}

/* Is argument i of a the word w (any case)? */
static int
arg_is(const struct args *a, int i, const char *w)
{
	return i < a->argc && a->len[i] == strlen(w) &&
	    strncasecmp(a->argv[i], w, a->len[i]) == 0;
}

/* The hash slot of the command a (its first key), or -1 when it has no
 * key.  Knows the commands redlock sends with keys. */
static int
args_slot(const struct args *a)
{
	int k = -1;

	if (arg_is(a, 0, "EVALSHA") || arg_is(a, 0, "EVAL")) {
		if (a->argc > 3 && !arg_is(a, 2, "0"))
			k = 3;
	} else if (arg_is(a, 0, "BLPOP") || arg_is(a, 0, "DEL") ||
	    arg_is(a, 0, "HGETALL"))
		k = 1;
	return k < 0 || k >= a->argc ? -1 :
	    (int)slot_of(a->argv[k], a->len[k]);
}

static struct cluster_slot *
map_find(struct cluster_map *m, unsigned slot)
{
	for (int i = 0; m != NULL && i < m->n; i++)
		if (m->e[i].slot == slot)
			return &m->e[i];
	return NULL;
}

/* c's map, made if need be (NULL out of memory). */
static struct cluster_map *
map_of(struct conn *c)
{
	if (c->map == NULL)
		c->map = calloc(1, sizeof(*c->map));
	return c->map;
}

/* Remember that `to` serves its slot (out of memory: forget nothing,
 * learn nothing; the next MOVED teaches it again). */
static void
map_learn(struct conn *c, const struct hop_to *to)
{
	struct cluster_slot *e;

	if (map_of(c) == NULL)
		return;
	if ((e = map_find(c->map, to->slot)) == NULL) {
		if (c->map->n < CLUSTER_MAP_SLOTS)
			e = &c->map->e[c->map->n++];
		else {
			e = &c->map->e[c->map->next];
			c->map->next = (c->map->next + 1) % CLUSTER_MAP_SLOTS;
		}
	}
	e->slot = to->slot;
	e->port = to->port;
	snprintf(e->host, sizeof(e->host), "%s", to->host);
}

/*
 * Ask c's server whether it is a cluster node, and which nodes its
 * cluster has (the probe, conn.h), unless it is a Sentinel's master or
 * was asked before.  The probe goes with a connection's preamble, so an
 * open c is closed to be opened again by its next request.  Called for
 * every TCP URL before it connects (a cluster's node is reached over
 * TCP), and for the others when a holder starts renewing, so that a
 * unix socket is asked once per run that renews at all.
 */
void
cluster_watch(struct conn *c)
{
	if (c->url->kind == URL_SENTINEL || c->probe != CONN_PROBE_NO)
		return;
	c->probe = CONN_PROBE_WANTED;
	conn_close(c);
}

/* Keep node host:port of c's cluster, once (when there is room). */
void
cluster_add_node(struct conn *c, const char *host, int port)
{
	struct cluster_map *m = map_of(c);

	if (m == NULL || m->nnodes == CLUSTER_MAX_NODES ||
	    strlen(host) >= sizeof(m->node[0].host))
		return;
	for (int i = 0; i < m->nnodes; i++)
		if (m->node[i].port == port && strcmp(m->node[i].host, host) == 0)
			return;
	m->node[m->nnodes].port = port;
	snprintf(m->node[m->nnodes++].host, sizeof(m->node[0].host), "%s",
	    host);
}

/* URL u (password: its connection's) names another node of c's
 * cluster: keep it, after c's own URL.  Returns 0, or -1 out of memory
 * or room. */
int
cluster_add_seed(struct conn *c, const struct url *u, const char *password)
{
	struct cluster_map *m = map_of(c);

	if (m == NULL || m->nseeds + 2 > CLUSTER_MAX_SEEDS)
		return -1;
	if (m->nseeds == 0)
		m->seed[m->nseeds++] = (struct cluster_seed){ c->url,
		    c->password };
	m->seed[m->nseeds++] = (struct cluster_seed){ u, password };
	return 0;
}

/* Is c pointed at node host:port? */
static int
at_node(const struct conn *c, const char *host, int port)
{
	if (c->host[0] != '\0')
		return c->port == port && strcmp(c->host, host) == 0;
	return c->url->kind == URL_TCP && c->url->port == port &&
	    strcmp(c->url->host, host) == 0;
}

/*
 * The node c points at cannot be reached: point c at the next node of
 * its cluster that it knows (the probe's nodes, then the URLs given for
 * the cluster), any of which leads to the slot's owner.  Returns 0, or
 * -1 when c knows no other.
 */
static int
move_on(struct conn *c)
{
	struct cluster_map *m = c->map;
	int n = m != NULL ? m->nnodes + m->nseeds : 0;

	for (int tries = 0; tries < n; tries++) {
		int k = m->cursor++ % n;

		m->cursor %= n;
		if (k < m->nnodes) {
			if (at_node(c, m->node[k].host, m->node[k].port))
				continue;
			return conn_retarget(c, m->node[k].host,
			    m->node[k].port);
		}
		k -= m->nnodes;
		if (c->url == m->seed[k].url && c->host[0] == '\0')
			continue;
		conn_reseat(c, m->seed[k].url, m->seed[k].password);
		return 0;
	}
	return -1;
}

/* Free what c learnt of a cluster (after its last command). */
void
cluster_forget(struct conn *c)
{
	free(c->map);
	c->map = NULL;
}

/*
 * Before a command: point every connection that has learnt the owner of
 * a's slot at that owner, so that a known slot costs no redirection.
 */
void
cluster_route(struct conn *conns, int n, const struct args *a)
{
	int slot = -2;

	for (int i = 0; i < n; i++) {
		const struct cluster_slot *e;

		if (conns[i].map == NULL)
			continue;
		if (slot == -2)
			slot = args_slot(a);
		if (slot < 0)
			return;
		if ((e = map_find(conns[i].map, (unsigned)slot)) != NULL)
			(void)conn_retarget(&conns[i], e->host, e->port);
	}
}

/*
 * Read "MOVED slot host:port" or "ASK slot host:port" into to (an empty
 * host: the answering node's own); TRYAGAIN and CLUSTERDOWN are
 * HOP_RETRY.  Anything else is HOP_NONE.
 */
static enum hop
hop_of(const redisReply *p, struct hop_to *to)
{
	enum hop k;
	const char *s, *colon, *h;
	char *end;
	unsigned long slot;
	long port;
	size_t hl;

	switch (reply_error(p)) {
	case SERVER_TRYAGAIN:
	case SERVER_CLUSTERDOWN:
		return HOP_RETRY;
	case SERVER_MOVED:
		k = HOP_MOVED, s = p->str + strlen("MOVED ");
		break;
	case SERVER_ASK:
		k = HOP_ASK, s = p->str + strlen("ASK ");
		break;
	default:
		return HOP_NONE;
	}
	slot = strtoul(s, &end, 10);
	if (end == s || *end != ' ' || slot >= SLOT_COUNT ||
	    (colon = strrchr(end + 1, ':')) == NULL)
		return HOP_NONE;
	port = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
		return HOP_NONE;
	h = s + strcspn(s, " ") + 1;	/* after the slot */
	hl = (size_t)(colon - h);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
		h++, hl -= 2;	/* an IPv6 address in brackets */
	if (hl >= sizeof(to->host))
		return HOP_NONE;
	memcpy(to->host, h, hl);
	to->host[hl] = '\0';
	to->slot = (unsigned)slot;
	to->port = (int)port;
	return k;
}

/* Is p a redirection or a retry, which cluster_follow() acts on after
 * the round (so the server's answer is still to come)? */
int
cluster_hop(const redisReply *p)
{
	struct hop_to to;

	return hop_of(p, &to) != HOP_NONE;
}

/* Forget every slot that m says node host:port serves. */
static void
map_drop(struct cluster_map *m, const char *host, int port)
{
	for (int i = 0; m != NULL && i < m->n; i++)
		if (m->e[i].port == port && strcmp(m->e[i].host, host) == 0) {
			m->e[i--] = m->e[--m->n];
			m->next = 0;
		}
}

/*
 * A cluster node gave no reply: it may have died, failed over or left
 * the cluster, and any live node knows who serves the slot now.  Forget
 * the node, and point c at the next node it knows of the cluster (see
 * move_on()), or back at the URL's node after a redirection; send again
 * at once when the connection was refused (nothing was sent, so that is
 * safe), else leave it to the next command.  A server of which nothing
 * else is known is left as it is.
 */
static enum step
lost_node(struct conn *c, const struct conn_req *r, int *hops)
{
	if (r->reply != NULL || r->fail == CONN_FAIL_UNNEEDED)
		return STEP_NONE;
	if (c->host[0] != '\0')
		map_drop(c->map, c->host, c->port);
	if (move_on(c) < 0) {
		if (c->host[0] == '\0')
			return STEP_NONE;
		(void)conn_retarget(c, NULL, 0);
	}
	if (r->fail != CONN_FAIL_REFUSED ||
	    *hops >= CLUSTER_MAX_HOPS)
		return STEP_NONE;
	(*hops)++;
	return STEP_HERE;
}

/*
 * What to do after server c's reply r to a: send again where c now
 * points (after MOVED, learnt in the map; or see lost_node()), retry
 * after a pause (TRYAGAIN, unless a says it is the caller's;
 * CLUSTERDOWN), ask the node in `to` (ASK), or nothing.  *hops counts
 * the redirections followed.
 */
static enum step
plan(struct conn *c, const struct conn_req *r, const struct args *a,
    struct hop_to *to, int *hops)
{
	enum hop k;

	if (r->argc == 0)
		return STEP_NONE;
	k = hop_of(r->reply, to);
	if (k == HOP_RETRY && a->tryagain &&
	    reply_error(r->reply) == SERVER_TRYAGAIN)
		return STEP_NONE;	/* the caller's (struct args) */
	if (k == HOP_RETRY) {
		/* The bound is on redirections in a row: during a migration a
		 * command may go ASK, TRYAGAIN, ASK... until the deadline. */
		*hops = 0;
		return STEP_RETRY;
	}
	if (k == HOP_NONE)
		return lost_node(c, r, hops);
	if (*hops >= CLUSTER_MAX_HOPS)
		return STEP_NONE;
	(*hops)++;
	if (to->host[0] == '\0')
		snprintf(to->host, sizeof(to->host), "%s", cluster_conn_host(c));
	if (k == HOP_ASK)
		return STEP_ASK;
	map_learn(c, to);
	return conn_retarget(c, to->host, to->port) < 0 ? STEP_NONE : STEP_HERE;
}

/* r takes r2's outcome in place of its own. */
static void
take(struct conn_req *r, struct conn_req *r2)
{
	conn_req_clear(r, 1);
	r->reply = r2->reply;
	r2->reply = NULL;
	memcpy(r->err, r2->err, sizeof(r->err));
	r->reason = r2->reason;
	r->fail = r2->fail;
	r->timed_out = r2->timed_out;
}

/* Send body again on every connection whose step is STEP_HERE or
 * STEP_RETRY, where it points now.  Returns -1 when intr_fd became
 * readable, else 0. */
static int
send_here(struct conn *conns, int n, const enum step *step,
    struct args *body, struct conn_req *r, int64_t deadline, int intr_fd)
{
	struct conn_req r2[n];
	int rc;

	for (int i = 0; i < n; i++) {
		r2[i].argc = step[i] == STEP_HERE || step[i] == STEP_RETRY ?
		    body->argc : 0;
		r2[i].argv = body->argv;
		r2[i].argvlen = body->len;
	}
	rc = conn_exec(conns, r2, n, deadline, intr_fd);
	for (int i = 0; i < n; i++)
		if (r2[i].argc > 0)
			take(&r[i], &r2[i]);
	return rc < 0 ? -1 : 0;
}

/*
 * ASK: on a connection of its own to the node in to[i], send ASKING,
 * then body, for every server whose step is STEP_ASK.  The slot's own
 * connection and the map are left alone.  Returns -1 when intr_fd
 * became readable, else 0.
 */
static int
send_asking(const struct conn *conns, int n, const enum step *step,
    const struct hop_to *to, struct args *body, struct conn_req *r,
    int64_t deadline, int intr_fd)
{
	static const char *const asking[1] = { "ASKING" };
	struct conn tmp[n];
	struct conn_req q[n];
	int rc;

	memset(tmp, 0, sizeof(tmp));
	for (int i = 0; i < n; i++) {
		q[i].argc = 0;
		if (step[i] != STEP_ASK)
			continue;
		conn_init(&tmp[i], conns[i].url, conns[i].password);
		if (conn_retarget(&tmp[i], to[i].host, to[i].port) == 0) {
			q[i].argc = 1;
			q[i].argv = (const char **)asking;
			q[i].argvlen = NULL;
		}
	}
	rc = conn_exec(tmp, q, n, deadline, intr_fd);
	for (int i = 0; i < n; i++) {
		if (q[i].argc == 0)
			continue;
		if (rc >= 0 && q[i].reply != NULL &&
		    q[i].reply->type == REDIS_REPLY_STATUS) {
			conn_req_clear(&q[i], 1);
			q[i].argc = body->argc;
			q[i].argv = body->argv;
			q[i].argvlen = body->len;
			continue;
		}
		take(&r[i], &q[i]);	/* why ASKING failed */
		q[i].argc = 0;
	}
	if (rc >= 0)
		rc = conn_exec(tmp, q, n, deadline, intr_fd);
	for (int i = 0; i < n; i++) {
		if (q[i].argc > 0)
			take(&r[i], &q[i]);
		if (step[i] == STEP_ASK)
			conn_close(&tmp[i]);
	}
	return rc < 0 ? -1 : 0;
}

/* Pause ms before a retry, unless that would pass deadline (returns 1)
 * or intr_fd becomes readable (returns -1); else 0. */
static int
pause_retry(int64_t ms, int64_t deadline, int intr_fd)
{
	struct pollfd p = { .fd = intr_fd, .events = POLLIN };

	if (clock_ms() + ms >= deadline)
		return 1;
	return poll(&p, intr_fd >= 0 ? 1 : 0, (int)ms) > 0 ? -1 : 0;
}

/*
 * After a round of a on conns: follow the redirections in the replies
 * r[0..n) (see plan()) until none is left, CLUSTER_MAX_HOPS were
 * followed for a server, or deadline; r[i] then holds the last reply.
 * A request sent on carries the script's body: the node it lands on may
 * never have seen the script.  Returns -1 when intr_fd became readable,
 * else 0.
 */
int
cluster_follow(struct conn *conns, int n, const struct args *a,
    struct conn_req *r, int64_t deadline, int intr_fd)
{
	struct args body = *a;
	struct hop_to to[n];
	enum step step[n];
	int hops[n];
	int64_t pause = CLUSTER_RETRY_FIRST_MS;

	memset(hops, 0, sizeof(hops));
	for (int round = 0; round < CLUSTER_MAX_ROUNDS; round++) {
		int here = 0, retry = 0, asked = 0, rc;

		for (int i = 0; i < n; i++) {
			step[i] = plan(&conns[i], &r[i], a, &to[i], &hops[i]);
			here += step[i] == STEP_HERE;
			retry += step[i] == STEP_RETRY;
			asked += step[i] == STEP_ASK;
		}
		if (retry > 0 && (rc = pause_retry(pause, deadline,
		    intr_fd)) != 0) {
			if (rc < 0)
				return -1;
			for (int i = 0; i < n; i++)
				if (step[i] == STEP_RETRY)
					step[i] = STEP_NONE;
			retry = 0;
		}
		if (here + retry + asked == 0)
			return 0;
		if (round == 0)	/* reads the script's text: only when needed */
			args_as_eval(&body);
		if (retry > 0 && (pause *= 2) > CLUSTER_RETRY_MAX_MS)
			pause = CLUSTER_RETRY_MAX_MS;
		if (here + retry > 0 && send_here(conns, n, step, &body, r,
		    deadline, intr_fd) < 0)
			return -1;
		if (asked > 0 && send_asking(conns, n, step, to, &body, r,
		    deadline, intr_fd) < 0)
			return -1;
	}
	return 0;
}

