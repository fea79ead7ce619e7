/*
 * status.c - what an operator sees: status of one lock, list of the
 * held ones (SCAN, never KEYS; on every master of a Redis Cluster).
 * Everything a holder recorded is printed escaped (print.c).
 */
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exit.h"
#include "fair.h"
#include "inspect.h"
#include "log.h"
#include "print.h"
#include "record.h"
#include "scan.h"
#include "topology.h"

/* "user@host pid N", escaped. */
static void
print_holder(const struct lock_meta *m)
{
	print_text(m->user, strlen(m->user));
	putchar('@');
	print_text(m->host, strlen(m->host));
	printf(" pid %ld", m->pid);
}

/* A holder's members of a JSON object, after a comma. */
static void
holder_json(const struct lock_view *v)
{
	char start[32];

	print_time(v->meta.start_ms, start, sizeof(start));
	printf("\"ttl_ms\":%lld,\"fence\":%lld,\"foreign\":%s",
	    v->pttl, v->fence, v->has_meta ? "false" : "true");
	if (v->type[0] != '\0')
		printf(",\"type\":\"%s\"", v->type);
	if (v->has_meta) {
		fputs(",\"host\":", stdout);
		print_json(v->meta.host, strlen(v->meta.host));
		printf(",\"pid\":%ld,\"user\":", v->meta.pid);
		print_json(v->meta.user, strlen(v->meta.user));
		fputs(",\"cmd\":", stdout);
		print_json(v->meta.cmd, strlen(v->meta.cmd));
		printf(",\"start\":\"%s\",\"start_ms\":%lld", start,
		    (long long)v->meta.start_ms);
	}
}

/* The waiters line, when some wait: "waiters: N (S standbys)". */
static void
waiters_text(const struct lock_sched *s)
{
	if (s->waiters == 0)
		return;
	printf("waiters: %d", s->waiters);
	if (s->standbys > 0)
		printf(" (%d standby%s)", s->standbys,
		    s->standbys == 1 ? "" : "s");
	putchar('\n');
}

/* What scheduling adds to a lock's JSON object: waiters and standbys
 * when some wait; lock_delay_ms and lock_delay_until of a free lock a
 * lost holder's --lock-delay holds back, claim_ms of one a --replace
 * claims. */
static void
sched_json(const struct lock_sched *s)
{
	char until[32];

	if (s->waiters > 0)
		printf(",\"waiters\":%d,\"standbys\":%d", s->waiters,
		    s->standbys);
	if (s->delay_ms > 0) {
		print_time(s->now_ms + s->delay_ms, until, sizeof(until));
		printf(",\"lock_delay_ms\":%lld,\"lock_delay_until\":\"%s\"",
		    s->delay_ms, until);
	}
	if (s->claim_ms > 0)
		printf(",\"claim_ms\":%lld", s->claim_ms);
}

/* The --fair queue's lines, when some wait: its members in order, who
 * and since when (on the server's clock). */
static void
queue_text(const struct fair_view *q)
{
	char since[32], ago[32];

	if (q->count == 0)
		return;
	printf("queue:   %d waiting (--fair)\n", q->count);
	for (int i = 0; i < q->n; i++) {
		const struct fair_entry *e = &q->e[i];
		print_time(e->since_ms, since, sizeof(since));
		duration_format(q->now_ms - e->since_ms, ago, sizeof(ago));
		printf("  %d. ", i + 1);
		print_text(e->user, strlen(e->user));
		putchar('@');
		print_text(e->host, strlen(e->host));
		printf(" pid %ld %s, waiting since %s (%s)\n", e->pid,
		    e->shared ? "shared" : "exclusive", since, ago);
	}
	if (q->n < q->count)
		printf("  ... and %d more\n", q->count - q->n);
}

/* The --fair queue as a JSON member, after a comma, when some wait. */
static void
queue_json(const struct fair_view *q)
{
	char since[32];

	if (q->count == 0)
		return;
	printf(",\"queued\":%d,\"queue\":[", q->count);
	for (int i = 0; i < q->n; i++) {
		const struct fair_entry *e = &q->e[i];
		print_time(e->since_ms, since, sizeof(since));
		printf("%s{\"position\":%d,\"shared\":%s,\"host\":",
		    i ? "," : "", i + 1, e->shared ? "true" : "false");
		print_json(e->host, strlen(e->host));
		printf(",\"pid\":%ld,\"user\":", e->pid);
		print_json(e->user, strlen(e->user));
		printf(",\"since\":\"%s\",\"since_ms\":%lld,"
		    "\"waiting_ms\":%lld}", since, e->since_ms,
		    q->now_ms - e->since_ms);
	}
	putchar(']');
}

/* The JSON object of a lock, without its closing brace. */
static void
status_json(const struct lock *l, const struct lock_view *v, int held,
    const struct lock_sched *s)
{
	fputs("{\"name\":", stdout);
	print_json(l->name, l->namelen);
	fputs(",\"key\":", stdout);
	print_json(l->k.key, l->k.keylen);
	printf(",\"held\":%s", held ? "true" : "false");
	if (v != NULL && v->shared) {
		printf(",\"shared\":true,\"ttl_ms\":%lld,\"count\":%d,"
		    "\"holders\":[", v->pttl, v->nholders);
		for (int i = 0; i < v->nholders; i++) {
			fputs(i ? ",{" : "{", stdout);
			holder_json(&v->holders[i]);
			putchar('}');
		}
		putchar(']');
	} else if (v != NULL) {
		putchar(',');
		holder_json(v);
	}
	sched_json(s);
}

/* A holder's lines of the text output. */
static void
holder_text(const struct lock_view *h)
{
	char ttl[32], start[32], ago[32];

	duration_format(h->pttl, ttl, sizeof(ttl));
	if (h->has_meta) {
		print_time(h->meta.start_ms, start, sizeof(start));
		duration_format(clock_wall_ms() - h->meta.start_ms, ago,
		    sizeof(ago));
		fputs("holder:  ", stdout);
		print_holder(&h->meta);
		fputs("\ncommand: ", stdout);
		print_text(h->meta.cmd, strlen(h->meta.cmd));
		printf("\nsince:   %s (%s ago)\n", start, ago);
	} else if (h->type[0] != '\0')
		printf("holder:  none: the key holds a %s, not a lock "
		    "(break removes it)\n", h->type);
	else
		fputs("holder:  unknown (taken by another client)\n", stdout);
	printf("ttl:     %s\n", h->pttl < 0 ? "none" : ttl);
	if (h->has_meta)
		printf("fence:   %lld\n", h->fence);
}

static void
status_text(const struct lock *l, const struct lock_view *h,
    const struct lock_sched *s)
{
	fputs("lock:    ", stdout);
	print_text(l->name, l->namelen);
	if (h == NULL) {
		/* Held back (SCHEDULING in redlock-scheduling(7)): in the words that the run
		 * form's refusals use too (inspect_hold_words()). */
		char w[128];

		printf("\nstate:   %s\n", inspect_hold_words(s, w,
		    sizeof(w))[0] != '\0' ? w : "free");
		waiters_text(s);
		return;
	}
	if (!h->shared) {
		fputs("\nstate:   held\n", stdout);
		holder_text(h);
		waiters_text(s);
		return;
	}
	printf("\nstate:   held shared by %d holder%s\n", h->nholders,
	    h->nholders == 1 ? "" : "s");
	for (int i = 0; i < h->nholders; i++)
		holder_text(&h->holders[i]);
	waiters_text(s);
}

/* What status --json says of each server of a quorum: with several
 * servers, ,"servers":[...] from their views v (list --json says the
 * same of each lock). */
static void
servers_json(const struct lock *l, const struct lock_view *v)
{
	if (l->n <= 1)
		return;
	fputs(",\"servers\":[", stdout);
	for (int i = 0; i < l->n; i++) {
		printf("%s{\"server\":", i ? "," : "");
		print_json(l->conns[i].name, strlen(l->conns[i].name));
		printf(",\"answered\":%s,\"held\":%s,\"ttl_ms\":%lld",
		    v[i].answered ? "true" : "false",
		    v[i].held ? "true" : "false", v[i].pttl);
		if (!v[i].answered && v[i].why[0] != '\0') {
			fputs(",\"error\":", stdout);
			print_json(v[i].why, strlen(v[i].why));
		}
		putchar('}');
	}
	putchar(']');
}

int
status_show(const struct config *c, const struct lock *l)
{
	struct lock_view v[l->n];
	struct lock_outcome o = { 0 };
	const struct lock_view *h;
	struct record rec;
	struct lock_sched sched;
	struct fair_view queue;
	int answered = inspect_lock(l, v, 0, &o);

	if (answered < l->quorum) {
		log_error("%s", o.err);
		inspect_views_free(v, l->n);
		return EXIT_UNAVAILABLE;
	}
	h = inspect_agreed(l, v);
	record_read(l, &rec);
	sched = inspect_sched(l, v);
	fair_view(l, &queue);
	sched.waiters += queue.count;	/* inspect.lua leaves them out */
	if (c->json) {
		status_json(l, h, h != NULL, &sched);
		queue_json(&queue);
		fputs(",\"record\":", stdout);
		record_json(&rec);
		servers_json(l, v);
		fputs("}\n", stdout);
	} else {
		status_text(l, h, &sched);
		queue_text(&queue);
		record_text(&rec);
		for (int i = 0; l->n > 1 && i < l->n; i++) {
			char ttl[32];
			duration_format(v[i].pttl, ttl, sizeof(ttl));
			fputs("server:  ", stdout);
			print_text(l->conns[i].name, strlen(l->conns[i].name));
			printf(" %s", !v[i].answered ? "no answer" : !v[i].held ? "free" :
			    h != NULL && strcmp(v[i].token, h->token) == 0 ?
			    ttl : "held by another token");
			if (!v[i].answered && v[i].why[0] != '\0') {
				fputs(": ", stdout);
				print_text(v[i].why, strlen(v[i].why));
			}
			putchar('\n');
		}
	}
	inspect_views_free(v, l->n);
	record_free(&rec);
	fair_view_free(&queue);
	return h != NULL ? 0 : 1;
}

/* A key found by SCAN, and the connection it was found on. */
struct found {
	char *key;
	size_t len;
	struct conn *src;
};

static int
found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->key, y->key, n);

	return d != 0 ? d : (x->len > y->len) - (x->len < y->len);
}

/* SCAN MATCH pattern: the prefix with its glob characters escaped. */
static char *
scan_match(const char *prefix, const char *pattern)
{
	size_t pl = strlen(prefix), ql = pattern ? strlen(pattern) : 1;
	char *m = malloc(2 * pl + ql + 1), *o = m;

	if (m == NULL)
		return NULL;
	for (const char *p = prefix; *p; p++) {
		if (strchr("*?[]\\", *p) != NULL)
			*o++ = '\\';
		*o++ = *p;
	}
	memcpy(o, pattern ? pattern : "*", ql + 1);
	return m;
}

/* What SCAN found on every server. */
struct scan {
	struct found *keys;
	size_t n, cap;
};

/* Keep key e (found on src) unless it is auxiliary (it holds a NUL
 * byte).  Returns -1 when out of memory. */
static int
scan_keep(void *arg, struct conn *src, const redisReply *e, char *err,
    size_t errlen)
{
	struct scan *sc = arg;
	struct found *f = sc->keys;

	if (memchr(e->str, '\0', e->len))
		return 0;
	if (sc->n == sc->cap) {
		size_t ncap = sc->cap ? sc->cap * 2 : 64;

		if ((f = realloc(sc->keys, ncap * sizeof(*f))) != NULL) {
			sc->keys = f;
			sc->cap = ncap;
		}
	}
	if (f == NULL || (sc->keys[sc->n].key = malloc(e->len + 1)) == NULL) {
		if (err[0] == '\0')
			snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(sc->keys[sc->n].key, e->str, e->len + 1);
	sc->keys[sc->n].len = e->len;
	sc->keys[sc->n++].src = src;
	return 0;
}

struct row {
	const char *name;
	size_t namelen;
	struct lock_view v;
	struct record rec;	/* list --json: the run record */
	struct fair_view queue;	/* --fair waiters */
	struct lock_view *servers;	/* list --json, several servers:
					 * each one's view, without holders */
};

static void
list_text(struct row *rows, size_t n)
{
	size_t w = 4;

	for (size_t i = 0; i < n; i++) {
		size_t tw = print_width(rows[i].name, rows[i].namelen);
		if (tw > w)
			w = tw > 60 ? 60 : tw;
	}
	for (size_t i = 0; i < n; i++) {
		const struct lock_view *v = &rows[i].v;
		size_t tw = print_width(rows[i].name, rows[i].namelen);
		char ttl[32];

		duration_format(v->pttl, ttl, sizeof(ttl));
		print_text(rows[i].name, rows[i].namelen);
		printf("%*s  %9s  ", (int)(w > tw ? w - tw : 0), "",
		    v->pttl < 0 ? "none" : ttl);
		if (v->shared)
			printf("(shared by %d holder%s)", v->nholders,
			    v->nholders == 1 ? "" : "s");
		else if (v->has_meta) {
			print_holder(&v->meta);
			fputs("  ", stdout);
			print_text(v->meta.cmd, strlen(v->meta.cmd));
		} else
			fputs("(foreign: no holder metadata)", stdout);
		if (v->sched.waiters > 0)
			printf("  [waiters: %d, standbys: %d]", v->sched.waiters,
			    v->sched.standbys);
		if (rows[i].queue.count > 0)
			printf("  [queue: %d]", rows[i].queue.count);
		putchar('\n');
	}
}

/*
 * The rows of list: every lock found (sc sorted, each name once) that a
 * quorum agrees is held.  With one server each name is read where SCAN
 * found it (a Redis Cluster's master), else on every server (following
 * redirections).  Returns how many rows, in rows; a lock that too few
 * servers answered for (a cluster node that says CLUSTERDOWN) is no
 * row, and *unread says why (it stays "" when every lock was read).
 */
static size_t
list_rows(const struct config *c, const struct lock *l, const struct scan *sc,
    struct row *rows, char *unread, size_t unreadlen)
{
	size_t nrows = 0, pl = strlen(c->prefix);
	struct lock_outcome o = { 0 };
	int answered;

	for (size_t i = 0; i < sc->n; i++) {
		const struct found *f = &sc->keys[i];
		struct conn *via = l->n == 1 ? f->src : l->conns;
		struct lock k;
		struct lock_view v[l->n];
		const struct lock_view *h;

		memset(v, 0, sizeof(v));
		if ((i > 0 && found_cmp(f, f - 1) == 0) || f->len < pl)
			continue;
		/* -1: not read (out of memory), and no reason to give */
		answered = lock_init(&k, via, l->n, c->prefix, f->key + pl,
		    l->ttl) == 0 ? inspect_lock(&k, v, 0, &o) : -1;
		if (answered >= 0 && answered < l->quorum && unread[0] == '\0')
			snprintf(unread, unreadlen, "%s", o.err);
		if (answered >= l->quorum &&
		    (h = inspect_agreed(&k, v)) != NULL) {
			rows[nrows].name = f->key + pl;
			rows[nrows].namelen = f->len - pl;
			if (c->json)
				record_read(&k, &rows[nrows].rec);
			if (c->json && l->n > 1 && (rows[nrows].servers =
			    malloc(sizeof(v))) != NULL) {
				memcpy(rows[nrows].servers, v, sizeof(v));
				for (int j = 0; j < l->n; j++)
					rows[nrows].servers[j].holders = NULL;
			}
			fair_view(&k, &rows[nrows].queue);
			rows[nrows].v = *h;
			/* inspect.lua leaves the --fair waiters out */
			rows[nrows].v.sched.waiters += rows[nrows].queue.count;
			nrows++;
			/* The row owns the holders now. */
			v[h - v].holders = NULL;
		}
		inspect_views_free(v, l->n);
		lock_free(&k);
	}
	return nrows;
}

int
status_list(const struct config *c, const struct lock *l)
{
	struct scan sc = { 0 };
	struct conn *nodes[l->n];
	struct row *rows = NULL;
	size_t nrows = 0, pl = strlen(c->prefix);
	char *m = scan_match(c->prefix, c->pattern);
	struct lock_outcome o = { 0 };
	int nnodes[l->n], code = 0;

	if (m == NULL)
		return EXIT_INTERNAL;
	if (scan_servers(l, &(struct scan_req){ .match = m,
	    .matchlen = strlen(m), .each = scan_keep, .arg = &sc,
	    .nodes = nodes, .nnodes = nnodes }, o.err, sizeof(o.err)) <
	    l->quorum) {
		log_error("%s", o.err);
		code = EXIT_UNAVAILABLE;
		goto out;
	}
	if (sc.n > 1)
		qsort(sc.keys, sc.n, sizeof(*sc.keys), found_cmp);
	o.err[0] = '\0';
	if ((rows = calloc(sc.n ? sc.n : 1, sizeof(*rows))) != NULL)
		nrows = list_rows(c, l, &sc, rows, o.err, sizeof(o.err));
	if (c->json) {
		for (size_t i = 0; i < nrows; i++) {
			struct lock t = { .name = rows[i].name,
			    .namelen = rows[i].namelen,
			    .k = { .key = (char *)rows[i].name - pl,
			    .keylen = rows[i].namelen + pl } };
			status_json(&t, &rows[i].v, 1, &rows[i].v.sched);
			queue_json(&rows[i].queue);
			fputs(",\"record\":", stdout);
			record_json(&rows[i].rec);
			if (rows[i].servers != NULL)
				servers_json(l, rows[i].servers);
			fputs("}\n", stdout);
		}
	} else
		list_text(rows, nrows);
	/* Every lock that could be read is listed; one that could not
	 * makes the list incomplete, which is no answer. */
	if (o.err[0] != '\0') {
		log_error("could not read every lock: %s", o.err);
		code = EXIT_UNAVAILABLE;
	}
out:
	for (size_t i = 0; i < nrows; i++) {
		free(rows[i].v.holders);
		free(rows[i].servers);
		record_free(&rows[i].rec);
		fair_view_free(&rows[i].queue);
	}
	free(m);
	for (int i = 0; i < l->n; i++)
		topology_masters_free(nodes[i], nnodes[i]);
	for (size_t i = 0; i < sc.n; i++)
		free(sc.keys[i].key);
	free(sc.keys);
	free(rows);
	return code;
}
