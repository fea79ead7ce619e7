/*
 * scan.c - SCAN for every key that matches a pattern on every server
 * of a lock, a Redis Cluster's on every one of its masters (list reads
 * the locks, runs the run records).  Each page waits at most
 * LEASE_VERB_TIMEOUT_MS; a server that fails a page counts as not
 * answering.
 */
#include "scan.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "lease.h"
#include "quorum.h"
#include "route.h"
#include "topology.h"

/* The most pages read from one server: a bound on the loop, far above
 * any keyspace SCAN COUNT 1000 walks. */
#define SCAN_MAX_PAGES 1000000

/* Every matching key on one server (or cluster node) c.  Returns 0 when
 * it answered every page, else -1 with the reason in err. */
static int
scan_one(struct conn *c, const struct scan_req *q, char *err, size_t errlen)
{
	char cursor[32] = "0";
	int pages = 0;

	do {
		const char *av[6] = { "SCAN", cursor, "MATCH", q->match,
		    "COUNT", "1000" };
		size_t len[6] = { 4, strlen(cursor), 5, q->matchlen, 5, 4 };
		struct conn_req r = { .argc = 6, .argv = av, .argvlen = len };
		const redisReply *p, *keys;
		int failed = 0;

		route_exec(c, &r, 1, clock_ms() + LEASE_VERB_TIMEOUT_MS, -1);
		p = r.reply;
		if (p == NULL || p->type != REDIS_REPLY_ARRAY ||
		    p->elements != 2 || p->element[1]->type != REDIS_REPLY_ARRAY) {
			quorum_note(c, &r, err, errlen);
			conn_req_clear(&r, 1);
			return -1;
		}
		snprintf(cursor, sizeof(cursor), "%s", p->element[0]->str);
		keys = p->element[1];
		for (size_t k = 0; k < keys->elements && !failed; k++)
			if (keys->element[k]->type == REDIS_REPLY_STRING)
				failed = q->each(q->arg, c, keys->element[k],
				    err, errlen) < 0;
		conn_req_clear(&r, 1);
		if (failed)
			return -1;
	} while (strcmp(cursor, "0") != 0 && ++pages < SCAN_MAX_PAGES);
	return 0;
}

/*
 * Scan every server of l as q says, a Redis Cluster's masters in its
 * place.  Returns how many servers answered every page (a cluster:
 * every master); err says why another did not.
 */
int
scan_servers(const struct lock *l, const struct scan_req *q, char *err,
    size_t errlen)
{
	int answered = 0;

	for (int i = 0; i < l->n; i++) {
		struct conn *nodes = NULL;
		int ok, k = route_masters(&l->conns[i], &nodes,
		    clock_ms() + LEASE_VERB_TIMEOUT_MS, err, errlen);

		ok = k == 0 ? scan_one(&l->conns[i], q, err, errlen) == 0 :
		    k > 0;
		for (int j = 0; j < k && ok; j++)
			ok = scan_one(&nodes[j], q, err, errlen) == 0;
		if (q->nodes != NULL) {
			q->nodes[i] = nodes;
			q->nnodes[i] = k > 0 ? k : 0;
		} else
			topology_masters_free(nodes, k > 0 ? k : 0);
		answered += ok;
	}
	return answered;
}
