/*
 * record.c - --record: NAME's last run kept in Redis, so that every
 * host (and `redlock status`, `list --json`, `redlock runs`) sees how
 * the fleet's runs went.  Opt-in: without --record a run sends nothing
 * of this.  With it, a run costs one more script call, after the
 * release, and an attempt that found NAME busy or timed out one call
 * too; renewals nothing.
 *
 * The record is a hash at base "\0record" (proto_aux_key(): in K's
 * Redis Cluster hash slot, and no NAME can make that key), expiring
 * RECORD_LINGER_MS after its last write.  Its fields:
 *
 *   name, key          NAME and K, so that `runs` can list records
 *   host pid user      who ran last (never the token)
 *   outcome exit_status start_ms end_ms duration_ms wait_ms fence
 *                      the last run (times: the server's clock, ms;
 *                      the start is the end less the duration, which
 *                      the host measures, so that hosts whose clocks
 *                      differ agree)
 *   success_ms success_host   the last run whose outcome was ok
 *   skips              attempts that found NAME busy or timed out since
 *                      the last run (--skip-alert counts these)
 *   skip_ms skip_host  the last of them (server ms)
 *   runs_<outcome>     invocations by outcome while the record lived
 *   updated_ms         the last write (server ms)
 */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "hold.h"
#include "print.h"
#include "quorum.h"
#include "scripts.h"

/* How long a record outlives its last write: five weeks, so that a
 * monthly job's record is still there at its next run, and a NAME
 * given up leaves nothing behind a while later. */
#define RECORD_LINGER_MS (35LL * 24 * 3600 * 1000)

/* The record's key for lock key K (keylen bytes): malloc'd, or NULL. */
char *
record_key(const char *key, size_t keylen, size_t *len)
{
	return proto_aux_key(key, keylen, "record", len);
}

/*
 * Run record.lua with the arguments in a on every server (route.c
 * sends its body where a server does not know it, and the body's
 * answer is the one kept: a NOPERM, not the NOSCRIPT before it).
 * Fills r[0..l->n).  Returns how many servers answered with something
 * other than an error.
 */
static int
record_exec(const struct lock *l, struct args *a, struct conn_req *r, char *err,
    size_t errlen)
{
	int ok = 0;

	quorum_exec(l->conns, l->n, a, r, &(struct quorum_how){
	    .deadline = clock_ms() + l->op_timeout, .intr_fd = -1, .err = err,
	    .errlen = errlen });
	for (int i = 0; i < l->n; i++)
		ok += r[i].reply != NULL && r[i].reply->type != REDIS_REPLY_ERROR;
	if (ok == 0 && err[0] == '\0')
		for (int i = 0; i < l->n && err[0] == '\0'; i++)
			quorum_note(&l->conns[i], &r[i], err, errlen);
	return ok;
}

/* Start a's vector: EVALSHA, the keys, and the ARGV every call has.
 * Returns -1 when out of memory (*rk is then NULL). */
static int
record_args(const struct lock *l, struct args *a, char **rk, enum outcome o)
{
	size_t rl;

	if ((*rk = record_key(l->k.key, l->k.keylen, &rl)) == NULL)
		return -1;
	const char *key[NKEYS_RECORD] = { *rk, l->k.key, l->k.meta,
	    l->k.holders, l->k.hmeta };
	const size_t len[NKEYS_RECORD] = { rl, l->k.keylen, l->k.metalen,
	    l->k.holderslen, l->k.hmetalen };

	args_script_keys(a, SCRIPT_RECORD, key, len, NKEYS_RECORD);
	args_put_num(a, ARG_RECORD_LINGER, RECORD_LINGER_MS);
	args_put(a, ARG_RECORD_NAME, l->name, l->namelen);
	args_put(a, ARG_RECORD_KEY, l->k.key, l->k.keylen);
	args_put_str(a, ARG_RECORD_HOST, l->meta.host);
	args_put_str(a, ARG_RECORD_OUTCOME, outcome_word(o));
	return 0;
}

/*
 * Keep run as NAME's last run (the holder's metadata in l->meta, the
 * fence in run->fence).  Returns 0, or -1 with the reason in err.
 */
int
record_run(const struct lock *l, const struct record_run *run, char *err,
    size_t errlen)
{
	struct conn_req r[l->n];
	struct args a;
	char *rk;
	int ok;

	err[0] = '\0';
	if (record_args(l, &a, &rk, run->outcome) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	args_put_num(&a, ARG_RECORD_PID, l->meta.pid);
	args_put_str(&a, ARG_RECORD_USER, l->meta.user);
	args_put_num(&a, ARG_RECORD_EXIT_STATUS, run->exit_status);
	args_put_num(&a, ARG_RECORD_DURATION, run->run_ms);
	args_put_num(&a, ARG_RECORD_WAIT, run->wait_ms);
	args_put_num(&a, ARG_RECORD_FENCE, run->fence);
	ok = record_exec(l, &a, r, err, errlen);
	conn_req_clear(r, l->n);
	free(rk);
	return ok > 0 ? 0 : -1;
}

/* Take the holder's fields from a skip's reply p into h. */
static void
holder_of(const redisReply *p, struct record_holder *h)
{
	memset(h, 0, sizeof(*h));
	h->state = (int)reply_int(p, REPLY_RECORD_STATE);
	if (p->elements <= REPLY_RECORD_START ||
	    (h->state != 1 && h->state != 3))
		return;
	if (p->elements > REPLY_RECORD_COUNT)
		h->count = reply_int(p, REPLY_RECORD_COUNT);
	snprintf(h->host, sizeof(h->host), "%s", reply_str(p, REPLY_RECORD_HOST));
	h->pid = strtol(reply_str(p, REPLY_RECORD_PID), NULL, 10);
	snprintf(h->user, sizeof(h->user), "%s", reply_str(p, REPLY_RECORD_USER));
	h->start_ms = strtoll(reply_str(p, REPLY_RECORD_START), NULL, 10);
}

/*
 * Count an attempt that found NAME busy (o: busy or timeout).  Returns
 * the attempts in a row so far (the most any server counted), with
 * who holds NAME in *h; or -1 with the reason in err.
 */
long long
record_skip(const struct lock *l, enum outcome o, struct record_holder *h,
    char *err, size_t errlen)
{
	struct conn_req r[l->n];
	struct args a;
	long long n = -1;
	char *rk;

	err[0] = '\0';
	memset(h, 0, sizeof(*h));
	if (record_args(l, &a, &rk, o) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	record_exec(l, &a, r, err, errlen);
	for (int i = 0; i < l->n; i++) {
		const redisReply *p = r[i].reply;

		if (p == NULL || p->type != REDIS_REPLY_ARRAY ||
		    reply_int(p, REPLY_RECORD_SKIPS) <= n)
			continue;
		n = reply_int(p, REPLY_RECORD_SKIPS);
		holder_of(p, h);
	}
	conn_req_clear(r, l->n);
	free(rk);
	return n;
}

/* A field's value: a string or an integer reply, as text, into buf. */
static const char *
field_text(const redisReply *v, char *buf, size_t len)
{
	if (v->type == REDIS_REPLY_INTEGER)
		snprintf(buf, len, "%lld", v->integer);
	else if (v->type == REDIS_REPLY_STRING)
		snprintf(buf, len, "%.*s", (int)(v->len < len ? v->len : len - 1),
		    v->str);
	else
		buf[0] = '\0';
	return buf;
}

/* Take one field f = v of a record into rec. */
static void
record_field(struct record *rec, const redisReply *f, const redisReply *v)
{
	struct { const char *name; int64_t *ms; } times[] = {
		{ "start_ms", &rec->start_ms }, { "end_ms", &rec->end_ms },
		{ "duration_ms", &rec->duration_ms }, { "wait_ms", &rec->wait_ms },
		{ "success_ms", &rec->success_ms },
		{ "updated_ms", &rec->updated_ms },
	};
	char t[32];
	int o;

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		if (strcmp(f->str, times[i].name) == 0)
			*times[i].ms = strtoll(field_text(v, t, sizeof(t)), NULL, 10);
	if (strcmp(f->str, "host") == 0)
		field_text(v, rec->host, sizeof(rec->host));
	else if (strcmp(f->str, "user") == 0)
		field_text(v, rec->user, sizeof(rec->user));
	else if (strcmp(f->str, "outcome") == 0)
		field_text(v, rec->outcome, sizeof(rec->outcome));
	else if (strcmp(f->str, "success_host") == 0)
		field_text(v, rec->success_host, sizeof(rec->success_host));
	else if (strcmp(f->str, "pid") == 0)
		rec->pid = strtol(field_text(v, t, sizeof(t)), NULL, 10);
	else if (strcmp(f->str, "exit_status") == 0)
		rec->exit_status = (int)strtol(field_text(v, t, sizeof(t)), NULL, 10);
	else if (strcmp(f->str, "fence") == 0)
		rec->fence = strtoll(field_text(v, t, sizeof(t)), NULL, 10);
	else if (strcmp(f->str, "skips") == 0)
		rec->skips = strtoll(field_text(v, t, sizeof(t)), NULL, 10);
	else if (strncmp(f->str, "runs_", 5) == 0 &&
	    (o = outcome_parse(f->str + 5, f->len - 5)) >= 0)
		rec->runs[o] = strtoll(field_text(v, t, sizeof(t)), NULL, 10);
}

/* A copy of the n bytes at s with a NUL, or NULL. */
static char *
dup_bytes(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/*
 * Read an HGETALL reply (a redisReply) into rec, which is cleared
 * first.  Returns 1 when it is a record, else 0 (rec->found is 0).
 */
int
record_parse(const void *reply, struct record *rec)
{
	const redisReply *p = reply;

	memset(rec, 0, sizeof(*rec));
	if (p == NULL || p->type != REDIS_REPLY_ARRAY || p->elements < 2)
		return 0;
	for (size_t i = 0; i + 1 < p->elements; i += 2) {
		const redisReply *f = p->element[i], *v = p->element[i + 1];

		if (f->type != REDIS_REPLY_STRING)
			continue;
		if (strcmp(f->str, "name") == 0 && v->type == REDIS_REPLY_STRING &&
		    rec->name == NULL) {
			rec->name = dup_bytes(v->str, v->len);
			rec->namelen = v->len;
		} else if (strcmp(f->str, "key") == 0 &&
		    v->type == REDIS_REPLY_STRING && rec->key == NULL) {
			rec->key = dup_bytes(v->str, v->len);
			rec->keylen = v->len;
		} else
			record_field(rec, f, v);
	}
	rec->found = 1;
	return 1;
}

void
record_free(struct record *rec)
{
	free(rec->name);
	free(rec->key);
	rec->name = rec->key = NULL;
}

/*
 * Read NAME's record from every server into rec: the most recently
 * written one.  Returns 1 found, 0 none, -1 no server answered.
 */
int
record_read(const struct lock *l, struct record *rec)
{
	struct conn_req r[l->n];
	struct args a = { .script = -1 };
	size_t rl;
	char *rk = record_key(l->k.key, l->k.keylen, &rl);
	int answered = 0, best = -1;
	int64_t best_ms = 0;

	memset(rec, 0, sizeof(*rec));
	if (rk == NULL)
		return -1;
	args_str(&a, "HGETALL");
	args_add(&a, rk, rl);
	lock_round(l, &a, r, clock_ms() + l->op_timeout, NULL);
	for (int i = 0; i < l->n; i++) {
		struct record t;

		if (r[i].reply == NULL || r[i].reply->type != REDIS_REPLY_ARRAY)
			continue;
		answered++;
		if (record_parse(r[i].reply, &t) &&
		    (best < 0 || t.updated_ms > best_ms)) {
			best = i;
			best_ms = t.updated_ms;
		}
		record_free(&t);
	}
	if (best >= 0)
		record_parse(r[best].reply, rec);
	conn_req_clear(r, l->n);
	free(rk);
	return answered == 0 ? -1 : rec->found;
}

/* A time span for people, coarsely: "2.5s", "40s", "12m", "4h", "3d". */
void
record_ago(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms < 0 ? 0 : ms / 1000;

	if (ms >= 0 && ms < 10000)
		snprintf(buf, len, "%lld.%llds", (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	else if (s < 120)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm", (long long)(s / 60));
	else if (s < 172800)
		snprintf(buf, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

/*
 * The record as status prints it: "last run: ok on web-3 4h ago, took
 * 12m; 2 skips since", and the last success when the last run was not
 * one.  Everything a host recorded is printed escaped.
 */
void
record_text(const struct record *rec)
{
	int64_t now = clock_wall_ms();
	char ago[32], took[32];

	if (!rec->found)
		return;
	fputs("last run: ", stdout);
	if (rec->outcome[0] == '\0')
		fputs("none recorded", stdout);
	else {
		record_ago(now - rec->end_ms, ago, sizeof(ago));
		record_ago(rec->duration_ms, took, sizeof(took));
		print_text(rec->outcome, strlen(rec->outcome));
		if (strcmp(rec->outcome, "ok") != 0)
			printf(" (exit status %d)", rec->exit_status);
		fputs(" on ", stdout);
		print_text(rec->host, strlen(rec->host));
		printf(" %s ago, took %s", ago, took);
	}
	printf("; %lld skip%s since\n", rec->skips, rec->skips == 1 ? "" : "s");
	if (strcmp(rec->outcome, "ok") == 0)
		return;
	fputs("last ok:  ", stdout);
	if (rec->success_ms <= 0) {
		fputs("none recorded\n", stdout);
		return;
	}
	record_ago(now - rec->success_ms, ago, sizeof(ago));
	fputs("on ", stdout);
	print_text(rec->success_host, strlen(rec->success_host));
	printf(" %s ago\n", ago);
}

/* The record as a JSON object (null when there is none). */
void
record_json(const struct record *rec)
{
	if (!rec->found) {
		fputs("null", stdout);
		return;
	}
	fputs("{\"last_run\":", stdout);
	if (rec->outcome[0] == '\0')
		fputs("null", stdout);
	else {
		fputs("{\"outcome\":", stdout);
		print_json(rec->outcome, strlen(rec->outcome));
		printf(",\"exit_status\":%d,\"host\":", rec->exit_status);
		print_json(rec->host, strlen(rec->host));
		printf(",\"pid\":%ld,\"user\":", rec->pid);
		print_json(rec->user, strlen(rec->user));
		printf(",\"start_ms\":%lld,\"end_ms\":%lld,\"duration_ms\":%lld,"
		    "\"wait_ms\":%lld,\"fence\":%lld}", (long long)rec->start_ms,
		    (long long)rec->end_ms, (long long)rec->duration_ms,
		    (long long)rec->wait_ms, rec->fence);
	}
	fputs(",\"last_success\":", stdout);
	if (rec->success_ms <= 0)
		fputs("null", stdout);
	else {
		printf("{\"end_ms\":%lld,\"host\":", (long long)rec->success_ms);
		print_json(rec->success_host, strlen(rec->success_host));
		putchar('}');
	}
	printf(",\"skips_since\":%lld,\"runs\":{", rec->skips);
	for (int o = 0; o < OUTCOME_COUNT; o++)
		printf("%s\"%s\":%lld", o ? "," : "", outcome_word(o),
		    rec->runs[o]);
	printf("},\"updated_ms\":%lld}", (long long)rec->updated_ms);
}
