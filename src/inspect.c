/*
 * inspect.c - reading and clearing a lock whoever holds it: what
 * status, list and break show and do.  One round on every server; the
 * view a quorum agrees on is the lock's.
 */
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hold.h"
#include "print.h"
#include "lease.h"
#include "quorum.h"
#include "scripts.h"

/* Apply one of the fields that scheduling adds to a view (src/lua/inspect.lua);
 * returns 0 when f is not one. */
static int
view_sched(struct lock_sched *s, const char *f, const char *val)
{
	if (strcmp(f, "waiters") == 0)
		s->waiters = (int)strtol(val, NULL, 10);
	else if (strcmp(f, "standbys") == 0)
		s->standbys = (int)strtol(val, NULL, 10);
	else if (strcmp(f, "delay") == 0)
		s->delay_ms = strtoll(val, NULL, 10);
	else if (strcmp(f, "now") == 0)
		s->now_ms = strtoll(val, NULL, 10);
	else if (strcmp(f, "claim") == 0)
		s->claim_ms = strtoll(val, NULL, 10);
	else
		return 0;
	return 1;
}

/* Apply one field of a holder's record to v. */
static void
view_field(struct lock_view *v, const char *f, const char *val)
{
	if (view_sched(&v->sched, f, val))
		return;
	v->has_meta = 1;
	if (strcmp(f, "host") == 0)
		snprintf(v->meta.host, sizeof(v->meta.host), "%s", val);
	else if (strcmp(f, "user") == 0)
		snprintf(v->meta.user, sizeof(v->meta.user), "%s", val);
	else if (strcmp(f, "cmd") == 0)
		snprintf(v->meta.cmd, sizeof(v->meta.cmd), "%s", val);
	else if (strcmp(f, "pid") == 0)
		v->meta.pid = strtol(val, NULL, 10);
	else if (strcmp(f, "start") == 0)
		v->meta.start_ms = strtoll(val, NULL, 10);
	else if (strcmp(f, "fence") == 0)
		v->fence = strtoll(val, NULL, 10);
}

/* Apply a record (HGETALL's reply) to v; with prefix (a shared
 * holder's token), only its "TOKEN:field" fields. */
static void
view_meta(struct lock_view *v, const redisReply *h, const char *prefix)
{
	size_t pl = prefix != NULL ? strlen(prefix) : 0;

	for (size_t i = 0; i + 1 < h->elements; i += 2) {
		const char *f = h->element[i]->str, *val = h->element[i + 1]->str;

		if (f == NULL || val == NULL)
			continue;
		if (prefix == NULL)
			view_field(v, f, val);
		else if (strncmp(f, prefix, pl) == 0 && f[pl] == ':')
			view_field(v, f + pl + 1, val);
	}
}

/* A shared lock's holders h ({token, pttl...}) and their metadata m
 * (HGETALL of hmeta; NULL: none) as src/lua/inspect.lua reads them:
 * every live holder into v->holders.  Returns 0, or -1 when out of
 * memory. */
static int
view_holders(struct lock_view *v, const redisReply *h, const redisReply *m)
{
	size_t n = h->type == REDIS_REPLY_ARRAY ? h->elements / 2 : 0;

	v->shared = 1;
	snprintf(v->token, sizeof(v->token), "(shared)");
	if (n == 0)
		return 0;
	if ((v->holders = calloc(n, sizeof(*v->holders))) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct lock_view *e = &v->holders[v->nholders++];

		e->answered = e->held = 1;
		snprintf(e->token, sizeof(e->token), "%s", reply_str(h, 2 * i));
		e->pttl = reply_int(h, 2 * i + 1);
		if (m != NULL && m->type == REDIS_REPLY_ARRAY)
			view_meta(e, m, e->token);
	}
	return 0;
}

/* Free what inspect_lock() allocated in v[0..n). */
void
inspect_views_free(struct lock_view *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].holders);
		v[i].holders = NULL;
		v[i].nholders = 0;
	}
}

/* Run a on server i alone (a Redis Cluster's node, following its
 * redirections), until deadline; r[i] gets its reply, which the caller
 * frees (conn_req_clear(r, l->n)). */
static void
one_round(const struct lock *l, int i, struct args *a, struct conn_req *r,
    int64_t deadline, struct lock_outcome *o)
{
	char skip[l->n];

	memset(skip, 1, sizeof(skip));
	skip[i] = 0;
	quorum_exec(l->conns, l->n, a, r, &(struct quorum_how){
	    .deadline = deadline, .intr_fd = -1, .skip = skip,
	    .err = o->err, .errlen = sizeof(o->err) });
}

/* Server i's view of a lock held shared, read key by key: its live
 * holders and their metadata. */
static void
view_shared_by_key(const struct lock *l, int i, struct lock_view *v,
    int64_t deadline, struct lock_outcome *o)
{
	struct conn_req r[l->n], rm[l->n];
	struct args a, m = { .script = -1 };

	args_script(&a, SCRIPT_INSPECT_HOLDERS, &l->k);
	one_round(l, i, &a, r, deadline, o);
	args_str(&m, "HGETALL");
	args_add(&m, l->k.hmeta, l->k.hmetalen);
	one_round(l, i, &m, rm, deadline, o);
	if (r[i].reply != NULL && r[i].reply->type == REDIS_REPLY_ARRAY)
		view_holders(v, r[i].reply, rm[i].reply);
	else
		view_holders(v, &(redisReply){ .type = REDIS_REPLY_ARRAY },
		    NULL);
	v->held = v->nholders > 0;
	conn_req_clear(r, l->n);
	conn_req_clear(rm, l->n);
}

/*
 * Server i answered TRYAGAIN: a Redis Cluster migrates the lock's slot
 * and its keys are not all on one node, where no script on several
 * keys runs.  Read the view key by key instead (src/lua/inspect_key.lua:
 * K, then the exclusive holder's record or the shared holders), each
 * where its key is; with remove, then delete each of the lock's keys
 * and wake a waiter.  What a waiter or a lock-delay adds to a view is
 * not read.
 */
static void
inspect_by_key(const struct lock *l, int i, struct lock_view *v, int remove,
    struct lock_outcome *o)
{
	const char *key[4] = { l->k.key, l->k.meta, l->k.holders, l->k.hmeta };
	size_t len[4] = { l->k.keylen, l->k.metalen, l->k.holderslen,
	    l->k.hmetalen };
	int64_t deadline = clock_ms() + LEASE_VERB_TIMEOUT_MS;
	struct conn_req r[l->n];
	struct args a;
	const redisReply *p;

	o->err[0] = '\0';
	args_script(&a, SCRIPT_INSPECT_KEY, &l->k);
	one_round(l, i, &a, r, deadline, o);
	p = quorum_array(&l->conns[i], &r[i], 0, o->err, sizeof(o->err));
	memset(v, 0, sizeof(*v));
	v->answered = p != NULL;
	if (p != NULL && p->elements == NREPLY_INSPECT_KEY) {
		v->held = 1;
		snprintf(v->token, sizeof(v->token), "%s",
		    reply_str(p, REPLY_INSPECT_KEY_TOKEN));
		v->pttl = reply_int(p, REPLY_INSPECT_KEY_PTTL);
	}
	conn_req_clear(r, l->n);
	if (v->held && strcmp(reply_str(p, REPLY_INSPECT_KEY_STOP), "type")
	    == 0) {
		/* Not a lock at all: a value of another type. */
		snprintf(v->type, sizeof(v->type), "%s", v->token);
		v->token[0] = '\0';
	} else if (v->held && memcmp(v->token, PROTO_MARKER, 1) == 0)
		view_shared_by_key(l, i, v, deadline, o);
	else if (v->held) {
		args_script(&a, SCRIPT_INSPECT_RECORD, &l->k);
		args_put_str(&a, ARG_INSPECT_RECORD_TOKEN, v->token);
		one_round(l, i, &a, r, deadline, o);
		if (r[i].reply != NULL && r[i].reply->type == REDIS_REPLY_ARRAY)
			view_meta(v, r[i].reply, NULL);
		conn_req_clear(r, l->n);
	}
	for (int k = 0; remove && k < 4; k++) {
		struct args d = { .script = -1 };

		args_str(&d, "DEL");
		args_add(&d, key[k], len[k]);
		one_round(l, i, &d, r, deadline, o);
		conn_req_clear(r, l->n);
	}
	if (remove) {
		args_script(&a, SCRIPT_WAKE_PUSH, &l->k);
		args_put_num(&a, ARG_WAKE_PUSH_LINGER, PROTO_WAKE_LINGER_MS);
		one_round(l, i, &a, r, deadline, o);
		conn_req_clear(r, l->n);
	}
}

/*
 * Fill v[i] with server i's view of the lock; with remove, delete it
 * too, whoever holds it (every shared holder).  Returns how many
 * servers answered.  Free v with inspect_views_free().
 */
int
inspect_lock(const struct lock *l, struct lock_view *v, int remove,
    struct lock_outcome *o)
{
	struct conn_req r[l->n];
	struct args a;
	int answered = 0;
	char split[l->n];

	memset(split, 0, sizeof(split));
	args_script(&a, SCRIPT_INSPECT, &l->k);
	args_put_str(&a, ARG_INSPECT_REMOVE, remove ? "1" : "0");
	args_put_num(&a, ARG_INSPECT_WAKE_LINGER, PROTO_WAKE_LINGER_MS);
	a.tryagain = 1;		/* see inspect_by_key() */
	o->err[0] = '\0';
	lock_round(l, &a, r, clock_ms() + LEASE_VERB_TIMEOUT_MS, o);
	for (int i = 0; i < l->n; i++) {
		const redisReply *fields, *p;

		memset(&v[i], 0, sizeof(v[i]));
		split[i] = (char)(reply_error(r[i].reply) == SERVER_TRYAGAIN);
		p = split[i] ? NULL : quorum_array(&l->conns[i], &r[i], 0,
		    o->err, sizeof(o->err));
		if (p == NULL) {
			quorum_why(&r[i], v[i].why, sizeof(v[i].why));
			continue;
		}
		v[i].answered = 1;
		answered++;
		/* A free lock that scheduling says something of: its fields
		 * alone. */
		if (p->elements == 1 && p->element[0]->type == REDIS_REPLY_ARRAY)
			view_meta(&v[i], p->element[0], NULL);
		if (p->elements < 3)
			continue;
		v[i].held = 1;
		snprintf(v[i].token, sizeof(v[i].token), "%s",
		    reply_str(p, REPLY_INSPECT_TOKEN));
		v[i].pttl = reply_int(p, REPLY_INSPECT_PTTL);
		fields = p->element[REPLY_INSPECT_FIELDS];
		if (p->elements >= 4 && fields->type == REDIS_REPLY_ARRAY)
			view_meta(&v[i], fields, NULL);
		if (p->elements == 4) {
			/* Not a lock at all: a value of another type. */
			snprintf(v[i].type, sizeof(v[i].type), "%s", v[i].token);
			v[i].token[0] = '\0';
		} else if (p->elements >= 5) {
			view_holders(&v[i], p->element[REPLY_INSPECT_HOLDERS],
			    p->element[REPLY_INSPECT_HMETA]);
			/* Every lease has ended: nobody holds it any more. */
			v[i].held = v[i].nholders > 0;
		}
		else if (fields->type == REDIS_REPLY_ARRAY)
			view_meta(&v[i], fields, NULL);
	}
	conn_req_clear(r, l->n);
	for (int i = 0; i < l->n; i++)
		if (split[i]) {
			inspect_by_key(l, i, &v[i], remove, o);
			answered += v[i].answered;
		}
	return answered;
}

/*
 * Delete the fencing counter on every server; the next grant seeds it
 * from the server clock, above any fence it gave before.  Returns how
 * many servers had one, or -1 if fewer than a quorum answered.
 */
int
inspect_forget_fence(const struct lock *l, struct lock_outcome *o)
{
	struct conn_req r[l->n];
	struct args a = { .script = -1 };
	int had = 0, answered = 0;

	args_str(&a, "DEL");
	args_add(&a, l->k.fence, l->k.fencelen);
	o->err[0] = '\0';
	lock_round(l, &a, r, clock_ms() + LEASE_VERB_TIMEOUT_MS, o);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_INTEGER)
			continue;
		answered++;
		had += p->integer > 0;
	}
	conn_req_clear(r, l->n);
	return answered < l->quorum ? -1 : had;
}

/*
 * The view that a quorum of servers agrees on, or NULL.  Among the
 * servers holding that token, the fence most of them record is the
 * grant's: a majority carries it (see src/lua/bump.lua), while a
 * server whose reply came too late to count may record its own.
 */
const struct lock_view *
inspect_agreed(const struct lock *l, const struct lock_view *v)
{
	const struct lock_view *best = NULL;
	int best_votes = 0;

	for (int i = 0; i < l->n; i++) {
		int same = 0, votes = 0;
		if (!v[i].held)
			continue;
		for (int j = 0; j < l->n; j++) {
			if (!v[j].held || strcmp(v[j].token, v[i].token) != 0)
				continue;
			same++;
			votes += v[j].fence == v[i].fence;
		}
		if (same >= l->quorum && votes > best_votes) {
			best = &v[i];
			best_votes = votes;
		}
	}
	return best;
}

/*
 * What scheduling adds to the lock's view, over the servers that
 * answered: the most waiters and standbys any of them counts, and the
 * longest hold of a free lock (a lock-delay or a claim) any of them
 * keeps, since a grant needs them all out of the way.
 */
struct lock_sched
inspect_sched(const struct lock *l, const struct lock_view *v)
{
	struct lock_sched s = { 0 };

	for (int i = 0; i < l->n; i++) {
		const struct lock_sched *t = &v[i].sched;

		if (t->waiters > s.waiters) {
			s.waiters = t->waiters;
			s.standbys = t->standbys;
		}
		if (t->delay_ms > s.delay_ms) {
			s.delay_ms = t->delay_ms;
			s.now_ms = t->now_ms;
		}
		if (t->claim_ms > s.claim_ms)
			s.claim_ms = t->claim_ms;
	}
	return s;
}

/*
 * Why a free lock is held back (SCHEDULING in redlock-scheduling(7)), in the words status
 * uses: "free, lock-delay until T (N left)" (T on the server's clock) or
 * "free, claimed by a --replace (N left)", into buf; "" when s holds
 * nothing back.  Returns buf.
 */
const char *
inspect_hold_words(const struct lock_sched *s, char *buf, size_t len)
{
	char until[32], left[32];

	buf[0] = '\0';
	if (s->delay_ms > 0) {
		print_time(s->now_ms + s->delay_ms, until, sizeof(until));
		duration_format(s->delay_ms, left, sizeof(left));
		snprintf(buf, len, "free, lock-delay until %s (%s left)", until,
		    left);
	} else if (s->claim_ms > 0) {
		duration_format(s->claim_ms, left, sizeof(left));
		snprintf(buf, len, "free, claimed by a --replace (%s left)",
		    left);
	}
	return buf;
}

/*
 * Is l free but held back?  Asks the servers, as status does, and puts
 * why in buf (inspect_hold_words()).  Returns 1 with the words, 0 when
 * the lock is held, the servers name no lock-delay or claim (a
 * failover's hold, or one that ended since) or too few answer.  For a
 * refusal that found no holder, or an alert that finds NAME free.
 */
int
inspect_held_back(const struct lock *l, char *buf, size_t len)
{
	struct lock_view v[l->n];
	struct lock_outcome io = { 0 };
	struct lock_sched s = { 0 };

	buf[0] = '\0';
	if (inspect_lock(l, v, 0, &io) >= l->quorum &&
	    inspect_agreed(l, v) == NULL)
		s = inspect_sched(l, v);
	inspect_views_free(v, l->n);
	return inspect_hold_words(&s, buf, len)[0] != '\0';
}
