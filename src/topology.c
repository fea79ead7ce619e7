/*
 * topology.c - the shape of a Redis Cluster, for the things that need
 * more than the one node a lock's slot lives on: the nodes to turn to
 * when that one dies (topology_learn(), from the probe that every lock
 * connection sends at connect: conn.h), several URLs that are one
 * cluster (topology_merge()), and list, which scans every master
 * (topology_masters()).  Redirections are cluster.c's.
 *
 * It sits under the routing layer (route.c), which calls it: its own
 * requests go to the address each connection has (conn_exec()), which
 * route.c has given it (a Sentinel's master is found before
 * topology_masters(): route_masters()).
 */
#include "topology.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "cluster.h"
#include "log.h"
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
 * Does a CLUSTER NODES text list URL u's address (host:port, the
 * address as the cluster gives it, or one that u's host name resolves
 * to)?  For a URL whose node did not answer: it may be a node that has
 * died.
 */
static int
lists_address(const char *nodes, const struct url *u)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	int found = 0;

	if (nodes == NULL || u->kind != URL_TCP)
		return 0;
	if (getaddrinfo(u->host, NULL, &hints, &res) != 0)
		res = NULL;
	for (const char *l = nodes; !found && l != NULL && *l != '\0';
	    l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *a = strchr(l, ' '), *at, *sp, *colon;
		char ip[256], name[256] = "";

		if (a == NULL || (at = strchr(++a, '@')) == NULL ||
		    (sp = strchr(a, ' ')) == NULL || at > sp ||
		    at - a >= (long)sizeof(ip))
			continue;
		snprintf(ip, sizeof(ip), "%.*s", (int)(at - a), a);
		if ((colon = strrchr(ip, ':')) == NULL ||
		    strtol(colon + 1, NULL, 10) != u->port)
			continue;
		ip[colon - ip] = '\0';
		if (at[strcspn(at, ", \n")] == ',') {	/* ip:port@cport,name */
			const char *h = at + strcspn(at, ",") + 1;

			snprintf(name, sizeof(name), "%.*s",
			    (int)strcspn(h, " \n"), h);
		}
		found = strcmp(ip, u->host) == 0 || strcmp(name, u->host) == 0;
		for (struct addrinfo *r = res; !found && r != NULL;
		    r = r->ai_next) {
			char h[INET6_ADDRSTRLEN];

			found = getnameinfo(r->ai_addr, r->ai_addrlen, h,
			    sizeof(h), NULL, 0, NI_NUMERICHOST) == 0 &&
			    strcmp(h, ip) == 0;
		}
	}
	if (res != NULL)
		freeaddrinfo(res);
	return found;
}

/* Are servers i and j nodes of one cluster, by what they said (their
 * node ids in nodes[], the CLUSTER NODES texts) or, for one that did
 * not answer, by its address in the other's? */
static int
one_cluster(const struct conn *conns, const struct conn_req *r,
    char (*id)[64], int i, int j)
{
	const char *ni = r[i].reply != NULL ? r[i].reply->str : NULL;
	const char *nj = r[j].reply != NULL ? r[j].reply->str : NULL;

	if (id[i][0] != '\0' && nj != NULL && knows(nj, id[i]))
		return 1;
	if (id[j][0] != '\0' && ni != NULL && knows(ni, id[j]))
		return 1;
	return (ni == NULL && lists_address(nj, conns[i].url)) ||
	    (nj == NULL && lists_address(ni, conns[j].url));
}

/* The URLs of each cluster in lead[]: lead[i] is the server whose
 * connection stands for server i's cluster (i itself when it is no
 * cluster node, or stands for its own): the first that answered. */
static void
group(const struct conn *conns, const struct conn_req *r, char (*id)[64],
    const struct conn_req *info, int n, int *lead)
{
	for (int i = 0; i < n; i++) {
		lead[i] = i;
		for (int j = 0; j < i && lead[i] == i; j++)
			if (one_cluster(conns, r, id, i, j))
				lead[i] = lead[j];
	}
	for (int i = 0; i < n; i++) {
		int l = lead[i], best = l;

		if (info[l].reply != NULL)
			continue;
		for (int k = l; k < n && best == l; k++)
			if (lead[k] == l && info[k].reply != NULL)
				best = k;
		for (int k = l; k < n; k++)
			if (lead[k] == l)
				lead[k] = best;
	}
}

/*
 * A Redis Cluster has only database 0: URLs that merged into one (each
 * with its group's lead, lead[i]) of which one names another are
 * refused, with why in err, rather than that database left out.
 * Returns 0, or -1.
 */
static int
cluster_db_given(const struct conn *conns, int n, const int *lead, char *err,
    size_t errlen)
{
	for (int i = 0; i < n; i++) {
		const struct conn *a = &conns[lead[i]], *b = &conns[i];

		if (a != b && (a->url->db != 0 || b->url->db != 0)) {
			snprintf(err, errlen, "%s and %s are nodes of one Redis "
			    "Cluster, which has only database 0, not %d",
			    a->name, b->name, a->url->db ? a->url->db : b->url->db);
			return -1;
		}
	}
	return 0;
}

/*
 * Several URLs that reach nodes of one Redis Cluster are one server of
 * the quorum, not several (a majority of its nodes is no majority of
 * independent servers): the first of them that answered stands for the
 * cluster, and the others are the nodes it turns to when that one
 * cannot be reached (cluster_add_seed()), as a cluster client's seed
 * nodes.  info[i] is server i's INFO server reply; only when one or more
 * are cluster nodes are those asked CLUSTER NODES (one round, until
 * deadline), and a server that did not answer belongs to a cluster that
 * lists its address.  Moves the servers that stand for themselves or a
 * cluster to the front of conns, in order, and returns their number.
 */
int
topology_merge(struct conn *conns, int n, const struct conn_req *info,
    int64_t deadline, char *err, size_t errlen)
{
	static const char *const av[2] = { "CLUSTER", "NODES" };
	struct conn_req r[n];
	char id[n][64];
	int lead[n], k = 0, out = 0;

	for (int i = 0; i < n; i++) {
		r[i].argc = in_cluster_mode(info[i].reply) ? 2 : 0;
		r[i].argv = (const char **)av;
		r[i].argvlen = NULL;
		k += r[i].argc > 0;
	}
	if (k == 0)
		return n;
	conn_exec(conns, r, n, deadline, -1);
	for (int i = 0; i < n; i++) {
		if (r[i].reply != NULL && r[i].reply->type != REDIS_REPLY_STRING)
			conn_req_clear(&r[i], 1);
		my_id(r[i].reply != NULL ? r[i].reply->str : NULL, id[i],
		    sizeof(id[i]));
	}
	group(conns, r, id, info, n, lead);
	conn_req_clear(r, n);
	if (cluster_db_given(conns, n, lead, err, errlen) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (lead[i] == i)
			continue;
		log_info("%s and %s are nodes of one Redis Cluster: one server "
		    "of the quorum", conns[lead[i]].name, conns[i].name);
		(void)cluster_add_seed(&conns[lead[i]], conns[i].url,
		    conns[i].password);
	}
	for (int i = 0; i < n; i++) {
		if (lead[i] == i && out == i) {
			out++;
			continue;
		}
		if (lead[i] == i)
			conns[out++] = conns[i];
		else {
			conn_close(&conns[i]);
			cluster_forget(&conns[i]);
		}
		memset(&conns[i], 0, sizeof(conns[i]));
	}
	return out;
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

/* The nodes of the shards that serve slots (only their masters: !all),
 * from CLUSTER SHARDS (Redis 7).  The port is the one for c's transport
 * (tls-port over TLS), else the other; the address the endpoint that
 * MOVED names. */
static void
from_shards(const struct conn *c, const redisReply *p, int all,
    struct nodes *ns)
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

			if (!all && !is_str(field(nd, "role"), "master"))
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
 * with its master first, then its replicas. */
static void
from_slots(const struct conn *c, const redisReply *p, int all,
    struct nodes *ns)
{
	for (size_t s = 0; p->type == REDIS_REPLY_ARRAY && s < p->elements;
	    s++) {
		const redisReply *e = p->element[s];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			continue;
		for (size_t i = 2; i < (all ? e->elements : 3); i++) {
			const redisReply *m = e->element[i];

			if (m->type == REDIS_REPLY_ARRAY && m->elements >= 2 &&
			    m->element[1]->type == REDIS_REPLY_INTEGER)
				nodes_add(ns, address(c, m->element[0]),
				    m->element[1]->integer);
		}
	}
}

/* Does error reply p say the server does not know that subcommand (a
 * Redis before 7 and CLUSTER SHARDS)? */
static int
unknown_subcommand(const redisReply *p)
{
	return p != NULL && p->type == REDIS_REPLY_ERROR &&
	    strcasestr(p->str, "unknown subcommand") != NULL;
}

/* Keep the nodes of c's cluster that reply p (CLUSTER SHARDS, or SLOTS
 * when slots) lists, masters and replicas, for failing over to. */
static void
learn_from(struct conn *c, const redisReply *p, int slots)
{
	struct nodes ns = { 0 };

	if (p == NULL || p->type != REDIS_REPLY_ARRAY)
		return;
	if (slots)
		from_slots(c, p, 1, &ns);
	else
		from_shards(c, p, 1, &ns);
	for (int i = 0; i < ns.n; i++)
		cluster_add_node(c, ns.v[i].host, ns.v[i].port);
	free(ns.v);
}

/*
 * After a round on conns: read the probes' replies (conn.h) that came,
 * and keep the nodes of each cluster (cluster.c turns to them when the
 * node a connection uses cannot be reached).  A server that is no
 * cluster node said so, which ends it.  A cluster that does not know
 * CLUSTER SHARDS (before Redis 7) is asked CLUSTER SLOTS, one round
 * until deadline.
 */
void
topology_learn(struct conn *conns, int n, int64_t deadline)
{
	static const char *const av[2] = { "CLUSTER", "SLOTS" };
	struct conn_req r[n];
	int again = 0;

	for (int i = 0; i < n; i++) {
		redisReply *p = conn_take_probe(&conns[i]);

		r[i].argc = unknown_subcommand(p) ? 2 : 0;
		r[i].argv = (const char **)av;
		r[i].argvlen = NULL;
		again += r[i].argc > 0;
		learn_from(&conns[i], p, 0);
		if (p != NULL)
			freeReplyObject(p);
	}
	if (again == 0)
		return;
	conn_exec(conns, r, n, deadline, -1);
	for (int i = 0; i < n; i++)
		learn_from(&conns[i], r[i].reply, 1);
	conn_req_clear(r, n);
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
	    reply_error(r.reply) != SERVER_NOCLUSTER) {
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
			from_shards(c, r.reply, 0, &ns);
		else
			from_slots(c, r.reply, 0, &ns);
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
