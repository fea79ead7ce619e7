/*
 * runs.c - `redlock runs [PATTERN]`: the run records (--record) of
 * every NAME under the prefix that matches PATTERN (a glob, as for
 * list), fleet-wide: SCAN on every server, every master of a Redis
 * Cluster.  As a table for people, one JSON object a line (--json), or
 * Prometheus text (--prom), so that one host can publish the whole
 * fleet's view (with node_exporter's textfile collector, say).
 */
#include "runs.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exit.h"
#include "lease.h"
#include "log.h"
#include "print.h"
#include "prom.h"
#include "quorum.h"
#include "record.h"
#include "route.h"
#include "scan.h"

/* SCAN MATCH for record keys: every key that ends in "\0record". */
static const char runs_match[] = "*\0record";
#define RUNS_MATCH_LEN (sizeof(runs_match) - 1)

/* The records found so far. */
struct runs {
	struct record *v;
	size_t n, cap;
	const struct config *cfg;
	char servers[4096];	/* --prom: the label, url_list_label() */
};

/* Is rec a record of a NAME under our prefix that PATTERN matches? */
static int
runs_wanted(const struct config *c, const struct record *rec)
{
	size_t pl = strlen(c->prefix);

	if (rec->name == NULL || rec->key == NULL ||
	    rec->keylen != pl + rec->namelen ||
	    memcmp(rec->key, c->prefix, pl) != 0 ||
	    memcmp(rec->key + pl, rec->name, rec->namelen) != 0 ||
	    strlen(rec->name) != rec->namelen)
		return 0;
	return c->pattern == NULL || fnmatch(c->pattern, rec->name, 0) == 0;
}

/* Keep rec (taking its strings), or the newer of it and the one with
 * its NAME (a quorum's servers each have one).  -1: out of memory. */
static int
runs_keep(struct runs *rs, struct record *rec)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct record *o = &rs->v[i];

		if (o->namelen != rec->namelen ||
		    memcmp(o->name, rec->name, rec->namelen) != 0)
			continue;
		if (rec->updated_ms > o->updated_ms) {
			record_free(o);
			*o = *rec;
		} else
			record_free(rec);
		return 0;
	}
	if (rs->n == rs->cap) {
		size_t ncap = rs->cap ? rs->cap * 2 : 32;
		struct record *v = realloc(rs->v, ncap * sizeof(*v));
		if (v == NULL)
			return -1;
		rs->v = v;
		rs->cap = ncap;
	}
	rs->v[rs->n++] = *rec;
	return 0;
}

/* scan_fn: read the record at key k on c and keep it if wanted;
 * -1 when c did not give it (CLUSTERDOWN, say). */
static int
runs_read(void *arg, struct conn *c, const redisReply *k, char *err,
    size_t errlen)
{
	struct runs *rs = arg;
	const char *av[2] = { "HGETALL", k->str };
	size_t len[2] = { 7, k->len };
	struct conn_req r = { .argc = 2, .argv = av, .argvlen = len };
	struct record rec;

	route_exec(c, &r, 1, clock_ms() + LEASE_VERB_TIMEOUT_MS, -1);
	if (r.reply == NULL || r.reply->type == REDIS_REPLY_ERROR) {
		quorum_note(c, &r, err, errlen);
		conn_req_clear(&r, 1);
		return -1;
	}
	if (record_parse(r.reply, &rec) && runs_wanted(rs->cfg, &rec)) {
		if (runs_keep(rs, &rec) < 0)
			record_free(&rec);
	} else
		record_free(&rec);
	conn_req_clear(&r, 1);
	return 0;
}

/* Every record on every server, a cluster's on every master.  Returns
 * how many servers answered every page. */
static int
runs_scan(struct runs *rs, const struct lock *l, char *err, size_t errlen)
{
	return scan_servers(l, &(struct scan_req){ .match = runs_match,
	    .matchlen = RUNS_MATCH_LEN, .each = runs_read, .arg = rs },
	    err, errlen);
}

static int
runs_cmp(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int d = memcmp(x->name, y->name, n);

	return d != 0 ? d : (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

/* The families of --prom: records, so "redlock_record_", apart from
 * the per-host textfiles' (metrics.c), which may sit beside them. */
enum {
	R_START, R_END, R_DURATION, R_WAIT, R_EXIT, R_SUCCESS, R_SKIPS,
	R_INFO, R_RUNS, R_COUNT
};

static const struct prom_family families[R_COUNT] = {
	{ "redlock_record_last_start_timestamp_seconds", "gauge",
	  "When the last recorded run of lock NAME started, on any host" },
	{ "redlock_record_last_end_timestamp_seconds", "gauge",
	  "When the last recorded run of lock NAME ended, on any host" },
	{ "redlock_record_last_duration_seconds", "gauge",
	  "How long the last recorded run of lock NAME took" },
	{ "redlock_record_last_wait_seconds", "gauge",
	  "How long the last recorded run of lock NAME waited for the lock" },
	{ "redlock_record_last_exit_status", "gauge",
	  "The exit status of the last recorded run of lock NAME" },
	{ "redlock_record_last_success_timestamp_seconds", "gauge",
	  "When a recorded run of lock NAME last ended ok, on any host "
	  "(0: none recorded)" },
	{ "redlock_record_skips", "gauge",
	  "Attempts that found lock NAME busy or timed out since its last "
	  "recorded run" },
	{ "redlock_record_last_run_info", "gauge",
	  "The outcome and host of the last recorded run of lock NAME" },
	{ "redlock_record_runs_total", "counter",
	  "Recorded invocations for lock NAME by outcome, while its record "
	  "lived" },
};

/* One sample line of family f for rec, up to its value: the labels of
 * the hosts' files (name, prefix, servers), so that a rule joins the
 * two on them, with an outcome (>= 0, or -2 for the info line's
 * recorded one) and host. */
static void
prom_sample(struct prom_buf *b, int f, const struct runs *rs,
    const struct record *rec, int outcome)
{
	prom_printf(b, "%s{", families[f].name);
	prom_label(b, "name", rec->name, rec->namelen);
	prom_add(b, ",", 1);
	prom_label(b, "prefix", rs->cfg->prefix, strlen(rs->cfg->prefix));
	prom_add(b, ",", 1);
	prom_label(b, "servers", rs->servers, strlen(rs->servers));
	if (outcome >= 0) {
		prom_add(b, ",", 1);
		prom_label(b, "outcome", outcome_word(outcome),
		    strlen(outcome_word(outcome)));
	} else if (outcome == -2) {
		prom_add(b, ",", 1);
		prom_label(b, "outcome", rec->outcome, strlen(rec->outcome));
		prom_add(b, ",", 1);
		prom_label(b, "host", rec->host, strlen(rec->host));
	}
	prom_add(b, "} ", 2);
}

/* Family f's lines for every record. */
static void
prom_family_lines(struct prom_buf *b, int f, const struct runs *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct record *rec = &rs->v[i];
		const int64_t ms[] = { rec->start_ms, rec->end_ms,
		    rec->duration_ms, rec->wait_ms, 0, rec->success_ms };

		if (f == R_RUNS) {
			for (int o = 0; o < OUTCOME_COUNT; o++) {
				prom_sample(b, f, rs, rec, o);
				prom_printf(b, "%lld\n", rec->runs[o]);
			}
			continue;
		}
		if (f == R_INFO && rec->outcome[0] == '\0')
			continue;
		prom_sample(b, f, rs, rec, f == R_INFO ? -2 : -1);
		if (f == R_EXIT || f == R_SKIPS || f == R_INFO)
			prom_printf(b, "%lld\n", f == R_EXIT ?
			    (long long)rec->exit_status : f == R_SKIPS ?
			    rec->skips : 1LL);
		else {
			prom_seconds(b, ms[f]);
			prom_add(b, "\n", 1);
		}
	}
}

/* --prom: the records as Prometheus text.  Returns 0, or -1. */
static int
runs_prom(struct runs *rs)
{
	struct prom_buf b = { 0 };
	int rc;

	if (url_list_label(rs->cfg->urls, rs->cfg->nurls, rs->servers,
	    sizeof(rs->servers)) < 0)
		return -1;
	for (int f = 0; f < R_COUNT; f++) {
		prom_header(&b, &families[f]);
		prom_family_lines(&b, f, rs);
	}
	rc = b.oom ? -1 : 0;
	if (b.len > 0)
		fwrite(b.p, 1, b.len, stdout);
	prom_free(&b);
	return rc;
}

/* --json: one object a line, as list --json's "record" member with the
 * NAME. */
static void
runs_json(const struct runs *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		fputs("{\"name\":", stdout);
		print_json(rs->v[i].name, rs->v[i].namelen);
		fputs(",\"record\":", stdout);
		record_json(&rs->v[i]);
		fputs("}\n", stdout);
	}
}

/* The table for people; everything a host recorded printed escaped. */
static void
runs_table(const struct runs *rs)
{
	int64_t now = clock_wall_ms();
	size_t w = 4;

	for (size_t i = 0; i < rs->n; i++) {
		size_t tw = print_width(rs->v[i].name, rs->v[i].namelen);
		if (tw > w)
			w = tw > 60 ? 60 : tw;
	}
	printf("%-*s  %-11s  %4s  %-8s  %-6s  %-8s  %5s  %s\n", (int)w, "NAME",
	    "LAST", "EXIT", "ENDED", "TOOK", "LAST OK", "SKIPS", "HOST");
	for (size_t i = 0; i < rs->n; i++) {
		const struct record *r = &rs->v[i];
		size_t tw = print_width(r->name, r->namelen);
		char ended[40] = "-", took[32] = "-", ok[40] = "-", host[512];
		char word[64], ago[32], code[16] = "-";

		if (r->outcome[0] != '\0') {
			record_ago(now - r->end_ms, ago, sizeof(ago));
			snprintf(ended, sizeof(ended), "%s ago", ago);
			record_ago(r->duration_ms, took, sizeof(took));
			snprintf(code, sizeof(code), "%d", r->exit_status);
		}
		if (r->success_ms > 0) {
			record_ago(now - r->success_ms, ago, sizeof(ago));
			snprintf(ok, sizeof(ok), "%s ago", ago);
		}
		print_text(r->name, r->namelen);
		printf("%*s  %-11s  %4s  %-8s  %-6s  %-8s  %5lld  %s\n",
		    (int)(w > tw ? w - tw : 0), "",
		    r->outcome[0] ? print_escape(r->outcome, word, sizeof(word)) : "-",
		    code, ended, took, ok, r->skips,
		    print_escape(r->host, host, sizeof(host)));
	}
}

/* runs [PATTERN]: see the top.  Exit status 0, or 69 when too few
 * servers answered. */
int
runs_show(const struct config *c, const struct lock *l)
{
	struct runs rs = { .cfg = c };
	char err[384] = "";
	int code = 0;

	if (runs_scan(&rs, l, err, sizeof(err)) < l->quorum) {
		log_error("%s", err[0] ? err : "no quorum of servers");
		code = EXIT_UNAVAILABLE;
	} else {
		if (rs.n > 1)
			qsort(rs.v, rs.n, sizeof(*rs.v), runs_cmp);
		if (c->prom)
			code = runs_prom(&rs) < 0 ? EXIT_INTERNAL : 0;
		else if (c->json)
			runs_json(&rs);
		else
			runs_table(&rs);
	}
	for (size_t i = 0; i < rs.n; i++)
		record_free(&rs.v[i]);
	free(rs.v);
	return code;
}
