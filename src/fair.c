/*
 * fair.c - a fair queue of waiters (--fair, redlock-scheduling(7)): its
 * keys and its one script, src/lua/fair.lua.  wait.c decides when to
 * call it.
 *
 * Keys, beside the lock's (proto.c), in K's hash slot:
 *   base "\0fair"       the queue: a sorted set of members ('x' or 's'
 *                       and a waiter id) scored by arrival, the
 *                       server's clock in microseconds (ties by member)
 *   base "\0fairlease"  the same members scored by when each lapses
 *                       (server ms): a member's place is a lease of its
 *                       own, FAIR_LEASE_MS from its last renewal
 *   base "\0fairmeta"   who waits: member -> host, pid, user, since
 *   base "\0fair\0" member  a member's own wake list: pushed when the
 *                       member may go (the members ahead left)
 * Each expires with the longest lease: an empty queue leaves nothing.
 *
 * The protocol: a waiter enters (and renews) at every round of its
 * wait, and only a member that may go (the head; a shared member with
 * only shared ones ahead, at most --limit) makes attempts.  Once it may
 * go it stays so as long as it renews (members only leave the part of
 * the queue ahead of it), so it attempts without asking again while
 * its lease is fresh.  It leaves when granted (without waiting for
 * the reply: fair_leave_granted()) or when it gives up; a waiter that
 * died, was stopped or cut off is pruned by the first script that reads
 * the queue after its lease lapsed.
 *
 * On a quorum, each server scores a new member by its own clock; the
 * waiter takes the median of the arrivals it got back and writes it to
 * every server, so that the servers order the queue alike.
 */
#include "fair.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "fmt.h"
#include "clock.h"
#include "hold.h"
#include "holder.h"
#include "quorum.h"
#include "scripts.h"

/*
 * How long a waiter's place outlives its last renewal: a waiter that is
 * killed, stopped or cut off holds the queue up this long at most, plus
 * the FAIR_RENEW_MS in which the next one looks again (the man page
 * states the sum, 2 s).  Six renewal intervals: a live waiter's place
 * survives a slow round trip or a busy machine.
 */
#define FAIR_LEASE_MS 1500

enum { FAIR_QUEUE, FAIR_LEASE, FAIR_META, FAIR_OWN };

/* Set f up to wait for l: its member name, keys and metadata.  Returns
 * 0, or -1 when out of memory (fair_end() frees what was made). */
int
fair_begin(const struct lock *l, struct fair_waiter *f)
{
	const char *sfx[3] = { "fair", "fairlease", "fairmeta" };
	uuid_t u;
	int n;

	memset(f, 0, sizeof(*f));
	uuid_generate_random(u);
	f->member[0] = l->policy.shared ? 's' : 'x';
	fmt_uuid(u, f->member + 1);
	for (int i = 0; i < 3; i++)
		if ((f->key[i] = proto_aux_key(l->k.key, l->k.keylen, sfx[i],
		    &f->len[i])) == NULL)
			return -1;
	f->len[FAIR_OWN] = f->len[FAIR_QUEUE] + 1 + strlen(f->member);
	if ((f->key[FAIR_OWN] = malloc(f->len[FAIR_OWN])) == NULL)
		return -1;
	memcpy(f->key[FAIR_OWN], f->key[FAIR_QUEUE], f->len[FAIR_QUEUE]);
	f->key[FAIR_OWN][f->len[FAIR_QUEUE]] = '\0';
	memcpy(f->key[FAIR_OWN] + f->len[FAIR_QUEUE] + 1, f->member,
	    strlen(f->member));
	n = snprintf(f->meta, sizeof(f->meta), "%s%c%ld%c%s", l->meta.host,
	    '\0', l->meta.pid, '\0', l->meta.user);
	f->metalen = n < 0 ? 0 : (size_t)n < sizeof(f->meta) ? (size_t)n :
	    sizeof(f->meta) - 1;
	f->renewed = -1;
	return 0;
}

void
fair_end(struct fair_waiter *f)
{
	for (int i = 0; i < 4; i++)
		free(f->key[i]);
	memset(f, 0, sizeof(*f));
}

/* a = fair.lua's call for op on l's queue as f. */
static void
fair_args(const struct lock *l, const struct fair_waiter *f, struct args *a,
    const char *op)
{
	const char *key[5] = { l->k.key, l->k.holders, f->key[FAIR_QUEUE],
	    f->key[FAIR_LEASE], f->key[FAIR_META] };
	size_t len[5] = { l->k.keylen, l->k.holderslen, f->len[FAIR_QUEUE],
	    f->len[FAIR_LEASE], f->len[FAIR_META] };
	int pos = ARG_FAIR_TOKENS;
	size_t tl;

	args_script_keys(a, SCRIPT_FAIR, key, len, 5);
	args_put_str(a, ARG_FAIR_OP, op);
	args_put_str(a, ARG_FAIR_MEMBER, f->member);
	if (f->arrival > 0)
		args_put_num(a, ARG_FAIR_ARRIVAL, f->arrival);
	else
		args_put_str(a, ARG_FAIR_ARRIVAL, "");
	args_put_num(a, ARG_FAIR_LEASE_MS, FAIR_LEASE_MS);
	args_put_num(a, ARG_FAIR_LIMIT, l->policy.limit);
	args_put(a, ARG_FAIR_META, f->meta, f->metalen);
	args_put_num(a, ARG_FAIR_WAKE_MS, FAIR_LEASE_MS);
	/* Re-entrance: a token we inherited that holds NAME goes first. */
	for (const char *p = l->policy.held, *t; op[0] == 'w' &&
	    (t = holder_next_token(&p, &tl)) != NULL;)
		if (tl == LOCK_TOKEN_LEN)
			args_put(a, pos++, t, tl);
}

static int
cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* One 'w' round: fills go, pos (sorted) and arrival (sorted) of the
 * servers that answered.  Returns how many did, or -1 on interruption. */
static int
enter_round(const struct lock *l, struct fair_waiter *f, int intr_fd,
    struct lock_outcome *o, int *go, long long *pos, long long *arr)
{
	struct conn_req r[l->n];
	struct args a;
	int rc, answered = 0;

	fair_args(l, f, &a, "w");
	rc = quorum_exec(l->conns, l->n, &a, r, &(struct quorum_how){
	    .deadline = clock_ms() + l->op_timeout, .intr_fd = intr_fd,
	    .err = o->err, .errlen = sizeof(o->err) });
	*go = 0;
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY ||
		    p->elements != NREPLY_FAIR) {
			if (p != NULL && p->type != REDIS_REPLY_ERROR)
				quorum_note(&l->conns[i], &r[i], o->err,
				    sizeof(o->err));
			continue;
		}
		*go += reply_int(p, REPLY_FAIR_GO) == 1;
		pos[answered] = reply_int(p, REPLY_FAIR_POS);
		arr[answered++] = strtoll(reply_str(p, REPLY_FAIR_ARRIVAL),
		    NULL, 10);
	}
	conn_req_clear(r, l->n);
	qsort(pos, (size_t)answered, sizeof(*pos), cmp_ll);
	qsort(arr, (size_t)answered, sizeof(*arr), cmp_ll);
	return rc < 0 ? -1 : answered;
}

/*
 * Enter the queue, or renew our place in it, on every server: f->go
 * (may we take NAME now?) and f->pos (our place) as a quorum sees them,
 * o->fair_pos too.  On several servers, a first arrival is agreed on
 * (their median) and written back at once.  Returns 1 go, 0 wait, -1
 * too few servers answered (o->err says why), -2 interrupted.
 */
int
fair_enter(const struct lock *l, struct fair_waiter *f, int intr_fd,
    struct lock_outcome *o)
{
	long long pos[l->n], arr[l->n];
	int go = 0, answered;
	int64_t sent = 0;

	for (int i = 0; i < l->n; i++)
		pos[i] = arr[i] = 0;
	o->err[0] = '\0';
	o->slow = 0;
	o->busy_pttl = -1;
	o->hold_ms = 0;
	for (int again = 0; again < 2; again++) {
		sent = clock_ms();
		if ((answered = enter_round(l, f, intr_fd, o, &go, pos,
		    arr)) < 0)
			return -2;
		if (answered < l->quorum)
			return -1;
		/* One server's clock is the order; several agree on one. */
		if (l->n == 1 || arr[answered / 2] <= 0 ||
		    arr[answered / 2] == f->arrival)
			break;
		f->arrival = arr[answered / 2];
	}
	f->go = go >= l->quorum;
	f->pos = (int)pos[l->quorum - 1];
	f->renewed = sent;
	o->fair_pos = f->pos;
	return f->go;
}

/* May f, which may go, make an attempt without renewing first, one that
 * may run up to ms from now?  Its place must surely outlast it. */
int
fair_fresh(const struct fair_waiter *f, int64_t ms)
{
	return f->go && f->renewed >= 0 &&
	    clock_ms() + ms - f->renewed < FAIR_LEASE_MS / 2;
}

/* Leave the queue (granted, or giving up): the members that may now go
 * are woken.  Best effort: a place not removed lapses. */
void
fair_leave(const struct lock *l, struct fair_waiter *f)
{
	struct conn_req r[l->n];
	struct args a;

	if (f->renewed < 0 && f->arrival == 0)
		return;
	fair_args(l, f, &a, "l");
	lock_round(l, &a, r, clock_ms() + l->op_timeout, NULL);
	conn_req_clear(r, l->n);
}

/*
 * Leave the queue once granted, without waiting for the replies: the
 * request is written on each server's connection and its reply is
 * dropped when the next request on it reads (conn.h's discard), so
 * that the command starts one round trip sooner.  The servers run it
 * at once, before the command has started, as fair_leave() would.
 * A connection that cannot take it now (closed, or with a request of
 * its own in flight) gets fair_leave()'s, which waits.  Best effort as
 * fair_leave() is: a leave that fails (a server that forgot the script
 * since our last renewal answers NOSCRIPT) leaves a place that lapses
 * within FAIR_LEASE_MS.
 */
void
fair_leave_granted(const struct lock *l, struct fair_waiter *f)
{
	struct args a;
	char why[256];

	if (f->renewed < 0 && f->arrival == 0)
		return;
	for (int i = 0; i < l->n; i++) {
		const struct conn *c = &l->conns[i];

		if (c->ctx == NULL || c->handshake || c->outpos < c->outlen) {
			fair_leave(l, f);
			return;
		}
	}
	fair_args(l, f, &a, "l");
	for (int i = 0; i < l->n; i++) {
		struct conn *c = &l->conns[i];

		if (conn_queue(c, a.argc, a.argv, a.len) < 0 ||
		    conn_send(c, why, sizeof(why)) < 0) {
			conn_close(c);
			continue;
		}
		c->discard++;
	}
}

/* One member of a view's reply (fair.lua's op 'v'): m, arrival, meta. */
static void
view_entry(struct fair_entry *e, const char *m, const char *meta,
    size_t len)
{
	const char *end = meta + len, *p = meta;
	const char *field[4] = { "", "", "", "" };

	e->shared = m[0] == 's';
	for (int i = 0; i < 4 && p <= end; i++) {
		field[i] = p;
		p += strnlen(p, (size_t)(end - p)) + 1;
	}
	snprintf(e->host, sizeof(e->host), "%s", field[0]);
	e->pid = strtol(field[1], NULL, 10);
	snprintf(e->user, sizeof(e->user), "%s", field[2]);
	e->since_ms = strtoll(field[3], NULL, 10);
}

/* v's entries from a view reply p (fair.lua's op 'v'); returns -1 when
 * out of memory. */
static int
view_reply(struct fair_view *v, const redisReply *p)
{
	free(v->e);
	v->count = (int)reply_int(p, 0);
	v->now_ms = reply_int(p, 1);
	v->n = 0;
	if ((v->e = calloc(FAIR_VIEW_MAX, sizeof(*v->e))) == NULL)
		return -1;
	for (size_t j = 2; j + 2 < p->elements && v->n < FAIR_VIEW_MAX;
	    j += 3) {
		const redisReply *m = p->element[j + 2];
		if (m->type == REDIS_REPLY_STRING)
			view_entry(&v->e[v->n++], reply_str(p, j), m->str,
			    m->len);
	}
	return 0;
}

/*
 * The queue of l as status shows it: the longest that a server that
 * answered keeps (a quorum's servers keep the same).  Returns how many
 * servers answered; free v with fair_view_free() in every case.
 */
int
fair_view(const struct lock *l, struct fair_view *v)
{
	struct conn_req r[l->n];
	struct fair_waiter f;
	struct args a;
	int answered = 0;

	memset(v, 0, sizeof(*v));
	if (fair_begin(l, &f) < 0) {
		fair_end(&f);
		return 0;
	}
	fair_args(l, &f, &a, "v");
	lock_round(l, &a, r, clock_ms() + l->op_timeout, NULL);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements < 2)
			continue;
		answered++;
		if (reply_int(p, 0) > v->count && view_reply(v, p) < 0)
			break;
	}
	conn_req_clear(r, l->n);
	fair_end(&f);
	return answered;
}

void
fair_view_free(struct fair_view *v)
{
	free(v->e);
	memset(v, 0, sizeof(*v));
}
