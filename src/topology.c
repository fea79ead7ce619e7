/*
 * topology.c - the shape of a Redis Cluster, for the few things that
 * need more than the one node a lock's slot lives on: list scans every
 * master (topology_masters()), and several URLs must not be nodes of
 * one cluster (topology_distinct()).  Redirections are cluster.c's.
 */
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "slot.h"

/* The most masters topology_masters() takes: a master serves one slot
 * at least. */
#define TOPOLOGY_MAX_MASTERS SLOT_COUNT

/* The node id in a CLUSTER NODES line, when the line is the answering
 * node's own ("myself" among its flags): copied into id (or ""). */
static void
my_id(const char *nodes, char *id, size_t len)
{
	id[0] = '\0';
	for (const char *l = nodes; l != NULL && *l != '\0';
	    l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t idl = strcspn(l, " \n"), e = strcspn(l, "\n");
		const char *flags = l + idl + 1;

		if (l[idl] != ' ' || (flags = memchr(flags, ' ', e - idl - 1))
		    == NULL)
			continue;
		flags++;
		if (strncmp(flags, "myself", 6) == 0 ||
		    memmem(flags, strcspn(flags, " \n"), ",myself", 7) != NULL) {
			snprintf(id, len, "%.*s", (int)idl, l);
			return;
		}
	}
}

/* Does a CLUSTER NODES text list node id? */
static int
knows(const char *nodes, const char *id)
{
	size_t n = strlen(id);

	for (const char *l = nodes; n > 0 && l != NULL && *l != '\0';
	    l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, id, n) == 0 && l[n] == ' ')
			return 1;
	return 0;
}

/* Does an INFO server reply come from a node of a Redis Cluster? */
static int
in_cluster_mode(const redisReply *p)
{
	return p != NULL && p->type == REDIS_REPLY_STRING &&
	    strstr(p->str, "redis_mode:cluster") != NULL;
}

/*
 * Several URLs that reach nodes of one Redis Cluster are one deployment,
 * not a quorum: a majority of its nodes is no majority of independent
 * servers.  info[i] is server i's INFO server reply; only when two or
 * more are cluster nodes are those asked CLUSTER NODES (one round, until
 * deadline).  Returns 0, or -1 with the two URLs named in err.
 */
int
topology_distinct(struct conn *conns, int n, const struct conn_req *info,
    int64_t deadline, char *err, size_t errlen)
{
	static const char *const av[2] = { "CLUSTER", "NODES" };
	struct conn_req r[n];
	char id[n][64];
	int k = 0, rc = 0;

	for (int i = 0; i < n; i++) {
		r[i].argc = in_cluster_mode(info[i].reply) ? 2 : 0;
		r[i].argv = (const char **)av;
		r[i].argvlen = NULL;
		k += r[i].argc > 0;
	}
	if (k < 2)
		return 0;
	conn_exec(conns, r, n, deadline, -1);
	for (int i = 0; i < n; i++)
		my_id(r[i].reply != NULL && r[i].reply->type ==
		    REDIS_REPLY_STRING ? r[i].reply->str : NULL, id[i],
		    sizeof(id[i]));
	for (int i = 0; i < n && rc == 0; i++)
		for (int j = 0; j < i && rc == 0; j++) {
			if (id[i][0] == '\0' || id[j][0] == '\0' ||
			    r[j].reply == NULL || !knows(r[j].reply->str, id[i]))
				continue;
			snprintf(err, errlen, "%s and %s are nodes of the same "
			    "Redis Cluster: a cluster is one server of a quorum "
			    "(give one -u for it)", conns[j].name, conns[i].name);
			rc = -1;
		}
	conn_req_clear(r, n);
	return rc;
}

/* Node addresses, each once. */
struct nodes {
	int n, cap;
	struct node {
		int port;
		char host[256];
	} *v;
};

/* Add host:port unless it is there already (or does not fit). */
static void
nodes_add(struct nodes *ns, const char *host, long long port)
{
	struct node *v;

	if (strlen(host) >= sizeof(ns->v[0].host) || port < 1 || port > 65535)
		return;
	for (int i = 0; i < ns->n; i++)
		if (ns->v[i].port == port && strcmp(ns->v[i].host, host) == 0)
			return;
	if (ns->n == ns->cap) {
		int cap = ns->cap ? ns->cap * 2 : 8;
		if (cap > TOPOLOGY_MAX_MASTERS ||
		    (v = realloc(ns->v, (size_t)cap * sizeof(*v))) == NULL)
			return;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n].port = (int)port;
	snprintf(ns->v[ns->n++].host, sizeof(ns->v[0].host), "%s", host);
}

/* The value of field name in a RESP2 array of field, value pairs. */
static const redisReply *
field(const redisReply *p, const char *name)
{
	if (p == NULL || p->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < p->elements; i += 2)
		if (p->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(p->element[i]->str, name) == 0)
			return p->element[i + 1];
	return NULL;
}

/* Does a topology reply give a node's name or address here (not empty,
 * not "?", which say it is unknown)? */
static int
known(const redisReply *h)
{
	return h != NULL && h->type == REDIS_REPLY_STRING && h->len > 0 &&
	    strcmp(h->str, "?") != 0;
}

/* A node's address as a topology reply gives it, or the answering
 * node's host when the reply does not know it. */
static const char *
address(const struct conn *c, const redisReply *h)
{
	return known(h) ? h->str : cluster_conn_host(c);
}

static int
is_str(const redisReply *p, const char *s)
{
	return p != NULL && p->type == REDIS_REPLY_STRING &&
	    strcmp(p->str, s) == 0;
}

/* The masters of the shards that serve slots, from CLUSTER SHARDS
 * (Redis 7).  The port is the one for c's transport (tls-port over TLS),
 * else the other; the address the endpoint that MOVED names. */
static void
from_shards(const struct conn *c, const redisReply *p, struct nodes *ns)
{
	for (size_t s = 0; p->type == REDIS_REPLY_ARRAY && s < p->elements;
	    s++) {
		const redisReply *slots = field(p->element[s], "slots");
		const redisReply *nodes = field(p->element[s], "nodes");

		if (slots == NULL || slots->type != REDIS_REPLY_ARRAY ||
		    slots->elements == 0 || nodes == NULL ||
		    nodes->type != REDIS_REPLY_ARRAY)
			continue;
		for (size_t i = 0; i < nodes->elements; i++) {
			const redisReply *nd = nodes->element[i], *port, *h;

			if (!is_str(field(nd, "role"), "master"))
				continue;
			port = field(nd, c->url->tls ? "tls-port" : "port");
			if (port == NULL || port->type != REDIS_REPLY_INTEGER ||
			    port->integer == 0)
				port = field(nd, c->url->tls ? "port" : "tls-port");
			h = field(nd, "endpoint");
			if (!known(h))
				h = field(nd, "ip");
			if (port != NULL && port->type == REDIS_REPLY_INTEGER)
				nodes_add(ns, address(c, h), port->integer);
		}
	}
}

/* The same from CLUSTER SLOTS (before Redis 7): each range of slots
 * with its master first. */
static void
from_slots(const struct conn *c, const redisReply *p, struct nodes *ns)
{
	for (size_t s = 0; p->type == REDIS_REPLY_ARRAY && s < p->elements;
	    s++) {
		const redisReply *e = p->element[s], *m;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			continue;
		m = e->element[2];
		if (m->type == REDIS_REPLY_ARRAY && m->elements >= 2 &&
		    m->element[1]->type == REDIS_REPLY_INTEGER)
			nodes_add(ns, address(c, m->element[0]),
			    m->element[1]->integer);
	}
}

/*
 * The masters of the Redis Cluster that c reaches, as new connections
 * with c's URL's credentials (*out; free them with
 * topology_masters_free()).  Asks CLUSTER SHARDS, or CLUSTER SLOTS where
 * that is unknown, until deadline.  Returns how many masters, 0 when c
 * is no cluster node (or cannot tell: then c itself is all there is to
 * scan), or -1 with the reason in err when c did not answer.
 */
int
topology_masters(struct conn *c, struct conn **out, int64_t deadline,
    char *err, size_t errlen)
{
	static const char *const shards[2] = { "CLUSTER", "SHARDS" };
	static const char *const slots[2] = { "CLUSTER", "SLOTS" };
	struct conn_req r = { .argc = 2, .argv = (const char **)shards };
	struct nodes ns = { 0 };

	*out = NULL;
	conn_exec(c, &r, 1, deadline, -1);
	if (r.reply != NULL && r.reply->type == REDIS_REPLY_ERROR &&
	    strstr(r.reply->str, "cluster support disabled") == NULL) {
		conn_req_clear(&r, 1);
		r.argv = (const char **)slots;
		conn_exec(c, &r, 1, deadline, -1);
	}
	if (r.reply == NULL) {
		snprintf(err, errlen, "%s", r.err);
		return -1;
	}
	if (r.reply->type != REDIS_REPLY_ERROR) {
		if (r.argv == (const char **)shards)
			from_shards(c, r.reply, &ns);
		else
			from_slots(c, r.reply, &ns);
	}
	conn_req_clear(&r, 1);
	if (ns.n > 0 && (*out = calloc((size_t)ns.n, sizeof(**out))) != NULL)
		for (int i = 0; i < ns.n; i++) {
			conn_init(&(*out)[i], c->url, c->password);
			(void)conn_retarget(&(*out)[i], ns.v[i].host,
			    ns.v[i].port);
		}
	free(ns.v);
	return *out != NULL ? ns.n : 0;
}

/* Close and free what topology_masters() gave. */
void
topology_masters_free(struct conn *m, int n)
{
	for (int i = 0; m != NULL && i < n; i++)
		conn_close(&m[i]);
	free(m);
}
