/*
 * proto.c - the lock protocol's vocabulary: key layout, Lua scripts,
 * argument vectors and reply decoding.  Nothing here does I/O.
 *
 * Keys (K = prefix + NAME, byte for byte):
 *   K               the lock.  Held exclusively, its value is the bare
 *                   token, so redis-py, redsync and node-redlock
 *                   interoperate with --prefix ''.  Held shared, it is
 *                   PROTO_MARKER ("\0shared") with PX = the latest
 *                   shared lease's end, so those clients see NAME taken
 *                   and an exclusive request waits
 *   base "\0fence"  the fencing counter; it expires PROTO_FENCE_LINGER_MS
 *                   after it was seeded, or, where a quorum may have
 *                   raised it (src/lua/bump.lua) and for shared holds,
 *                   that long after each grant (see below)
 *   base "\0holder" the exclusive holder's record (fence and metadata:
 *                   see src/lua/lib/holder_record.lua), a string
 *                   granted with K's first lease; renewals extend it past K's,
 *                   by at most the longer of a TTL and RECORD_SLACK_MS
 *                   (lock.c), and only when K's new lease would come
 *                   near its end (renew.c); with --lock-delay, by
 *                   exactly the delay at every renewal (src/lua/README)
 *   base "\0wake"   a list that releases push to, waiters BLPOP; it
 *                   lingers PROTO_WAKE_LINGER_MS
 *   base "\0waiting" the waiters between two attempts: a sorted set of
 *                   waiter ids (scores unused) that a busy attempt
 *                   which will wait joins, expiring a while after the
 *                   last one joined (longer than a waiter sleeps); a
 *                   waiter leaves it when granted or giving up.  An
 *                   exclusive release pushes a wake-up only while it
 *                   exists, so an uncontended release touches no list
 *   base "\0holders" shared holders: a sorted set of tokens scored by
 *                   their lease's end in the server's clock (ms), so a
 *                   holder that died stops counting when its lease ends
 *   base "\0hmeta"  shared holders' metadata: a hash of "TOKEN:field"
 *   base "\0xwait"  waiting exclusive requests: a sorted set of waiter
 *                   ids scored by when the entry lapses (server ms);
 *                   while it is not empty no shared request is granted
 *                   (writer preference)
 *   base "\0xwake"  a list that wakes exclusive waiters only
 *   base "\0stop"   tokens an operator asked to stop (redlock stop): a
 *                   set that the stop verb keeps, expiring soon after
 *                   the holders' leases; each holder is also marked
 *                   where its renewal looks: an exclusive holder's K
 *                   becomes token .. "\0stop" (its TTL kept: see
 *                   lib/unmark.lua), a shared holder's hmeta gets TOKEN:stop
 *   base "\0stopped" a list a stopped holder pushes to once released,
 *                   which redlock stop blocks on
 *   base "\0done"   --once-per: the server's ms at which NAME's last
 *                   successful run got the lock, written by the release
 *                   after that run (or by a re-entrant run's
 *                   src/lua/once_mark.lua) and living until the end of
 *                   that period (src/lua/lib/done_mark.lua)
 * where base puts them in K's Redis Cluster hash slot, for every NAME
 * (see aux_key()), so that every script runs on one node.  An
 * argv string cannot hold a NUL byte, so no NAME can collide with them.
 *
 * How NAME is held back while K is free (--lock-delay, --replace) is
 * told in src/lua/README.
 *
 * Shared holders and the exclusive holder never coexist: K is either a
 * token or the marker.  Exclusive scripts never read the shared keys on
 * their usual path, so an exclusive lock costs what it did before.
 * Waking: a release pushes one wake-up; a shared grant that leaves
 * room pushes one more, so k admissible waiters wake one after another
 * rather than all at once; a shared request turned away because a
 * writer waits passes the wake-up to the writers' list.
 *
 * What a run costs the server is counted in scripts, in the calls
 * they make and in their arguments: a script's call costs the server
 * about what a small command does, an argument about a third of that,
 * and running a script several times as much (callgrind on
 * redis-server; bench/results.md, G4 and G5).  So the usual exclusive
 * run is two scripts (SET NX, TIME, GET and SET of the counter, SET of
 * the record; GET, DEL, EXISTS of the waiters) with five arguments
 * between them, and a renewal is GET and PEXPIRE of K, plus PEXPIRE of
 * the record every few renewals.
 *
 * Fences strictly increase on a server although the counter expires or
 * goes back.  On one server every grant's fence is one above both the
 * counter and the server's clock in microseconds (src/lua/lib/fence.lua),
 * and is kept in the counter for PROTO_FENCE_LINGER_MS.  The clock
 * carries the fences over what the counter forgets: its expiry, a
 * restart without data, and a failover to a replica that never received
 * the last grants (a counter alone would give their fences again; a
 * Redis Cluster's or a plain URL's failover has no guard to reseed it).
 * The counter carries them over a clock set back within the linger.  On
 * a quorum a grant adds one to the counter, which a missing one seeds
 * from the clock: the bump after a grant leaves a majority's counters
 * equal, so that the next grant finds them so and needs no bump, and
 * one server that forgets is outvoted.  A bump can leave a counter
 * ahead of its own server's clock by as much as the servers' clocks
 * differ; such a counter must outlive its last grant by more than that,
 * so a quorum's counters linger PROTO_FENCE_LINGER_MS after each grant.
 * (A clock set back by more, or quorum servers whose clocks differ by
 * more than PROTO_FENCE_LINGER_MS, would break this; so would a promoted
 * replica whose clock is behind its old master's by more than the
 * failover took.)
 *
 * Scripts are sent as EVALSHA; a server that does not know one (new,
 * restarted, SCRIPT FLUSH) answers NOSCRIPT and gets the body once.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "scripts.h"
#include "slot.h"

/*
 * Build an auxiliary key of K: base + "\0" + suffix, in K's hash slot
 * whatever K is.  base is K itself when K has a hash tag (the suffix
 * does not move its slot); "{K}" when K has no '}' (the tag is exactly
 * K); else, for a K with a '}' but no tag ("deploy}v2"), "{T}K" with T
 * a short tag of K's slot (slot_tag()).  Returns a new buffer, or NULL
 * when out of memory.
 */
static char *
aux_key(const char *k, size_t n, const char *suffix, size_t *len)
{
	size_t sl = strlen(suffix), tl = 0;
	int tagged = slot_has_tag(k, n), wrap = !tagged && !memchr(k, '}', n);
	char tag[4] = "", *b, *p;

	if (!tagged && !wrap)
		tl = slot_tag(slot_of(k, n), tag);
	if ((b = p = malloc(n + sl + tl + 6)) == NULL)
		return NULL;
	if (wrap || tl > 0)
		*p++ = '{';
	memcpy(p, tag, tl);
	p += tl;
	if (tl > 0)
		*p++ = '}';
	memcpy(p, k, n);
	p += n;
	if (wrap)
		*p++ = '}';
	*p++ = '\0';
	memcpy(p, suffix, sl);
	p += sl;
	*len = (size_t)(p - b);
	return b;
}

/*
 * Would key K's auxiliary keys be another key's too (aux_key())?  Only a
 * K that starts with '{' and has a tag can: "{X}" is also the base of
 * X, and "{T}X" that of an X with a '}' but no tag whose slot's tag is
 * T.  With the default prefix no K starts with '{'.
 */
int
proto_aux_shared(const char *k, size_t n)
{
	const char *close, *rest;
	size_t tl, rl;
	char tag[4];

	if (n < 3 || k[0] != '{' || !slot_has_tag(k, n))
		return 0;
	close = memchr(k, '}', n);
	tl = (size_t)(close - k) - 1;
	rest = close + 1;
	rl = n - tl - 2;
	if (rl == 0)
		return 1;
	return memchr(rest, '}', rl) != NULL && !slot_has_tag(rest, rl) &&
	    slot_tag(slot_of(rest, rl), tag) == tl && memcmp(tag, k + 1, tl) == 0;
}

/* An auxiliary key of K named suffix, as aux_key() makes them, for the
 * modules that keep keys of their own beside a lock (record.c). */
char *
proto_aux_key(const char *k, size_t n, const char *suffix, size_t *len)
{
	return aux_key(k, n, suffix, len);
}

/* Fill k with the keys of NAME under prefix.  Returns 0, or -1 when out
 * of memory (free k with proto_keys_free() in either case). */
int
proto_keys(struct keys *k, const char *prefix, const char *name)
{
	size_t pl = strlen(prefix), nl = strlen(name);

	memset(k, 0, sizeof(*k));
	if ((k->key = malloc(pl + nl + 1)) == NULL)
		return -1;
	memcpy(k->key, prefix, pl);
	memcpy(k->key + pl, name, nl + 1);
	k->keylen = pl + nl;
	k->fence = aux_key(k->key, k->keylen, "fence", &k->fencelen);
	k->meta = aux_key(k->key, k->keylen, "holder", &k->metalen);
	k->waiting = aux_key(k->key, k->keylen, "waiting", &k->waitinglen);
	k->wake = aux_key(k->key, k->keylen, "wake", &k->wakelen);
	k->holders = aux_key(k->key, k->keylen, "holders", &k->holderslen);
	k->hmeta = aux_key(k->key, k->keylen, "hmeta", &k->hmetalen);
	k->xwait = aux_key(k->key, k->keylen, "xwait", &k->xwaitlen);
	k->xwake = aux_key(k->key, k->keylen, "xwake", &k->xwakelen);
	k->stop = aux_key(k->key, k->keylen, "stop", &k->stoplen);
	k->stopped = aux_key(k->key, k->keylen, "stopped", &k->stoppedlen);
	k->done = aux_key(k->key, k->keylen, "done", &k->donelen);
	return k->fence && k->meta && k->wake && k->waiting && k->holders &&
	    k->hmeta && k->xwait && k->xwake && k->stop && k->stopped &&
	    k->done ? 0 : -1;
}

void
proto_keys_free(struct keys *k)
{
	char *all[] = { k->key, k->fence, k->meta, k->wake, k->waiting,
	    k->holders,
	    k->hmeta, k->xwait, k->xwake, k->stop, k->stopped, k->done };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
	memset(k, 0, sizeof(*k));
}

void
args_add(struct args *a, const char *s, size_t n)
{
	if (a->argc < ARGS_MAX) {
		a->argv[a->argc] = s;
		a->len[a->argc++] = n;
	}
}

void
args_str(struct args *a, const char *s)
{
	args_add(a, s, strlen(s));
}

_Static_assert(sizeof(((struct args *)0)->num[0]) >= FMT_LL_SIZE,
    "struct args' numbers hold any long long");

void
args_num(struct args *a, long long v)
{
	char *b = a->num[a->nums++ % ARGS_NUMS];

	args_add(a, b, fmt_ll(b, v));
}

/*
 * Set the script's ARGV[pos] (pos: an ARG_SCRIPT_NAME of scripts.h) to
 * s, n bytes, after args_script().  Positions may be put in any order;
 * one skipped over is "" until put.  A position past ARGS_MAX is
 * dropped, as args_add() drops what does not fit.
 */
void
args_put(struct args *a, int pos, const char *s, size_t n)
{
	int i = a->base + pos;

	if (pos < 1 || i >= ARGS_MAX)
		return;
	while (a->argc < i)
		args_add(a, "", 0);
	a->argv[i] = s;
	a->len[i] = n;
	if (a->argc == i)
		a->argc++;
}

void
args_put_str(struct args *a, int pos, const char *s)
{
	args_put(a, pos, s, strlen(s));
}

void
args_put_num(struct args *a, int pos, long long v)
{
	char *b = a->num[a->nums++ % ARGS_NUMS];

	args_put(a, pos, b, fmt_ll(b, v));
}

/* The key that letter c names in args_script(), with its length. */
static const char *
key_by_letter(const struct keys *k, char c, size_t *len)
{
	switch (c) {
	case 'k': *len = k->keylen; return k->key;
	case 'f': *len = k->fencelen; return k->fence;
	case 'm': *len = k->metalen; return k->meta;
	case 'w': *len = k->wakelen; return k->wake;
	case 'a': *len = k->waitinglen; return k->waiting;
	case 'h': *len = k->holderslen; return k->holders;
	case 'H': *len = k->hmetalen; return k->hmeta;
	case 'q': *len = k->xwaitlen; return k->xwait;
	case 'x': *len = k->xwakelen; return k->xwake;
	case 's': *len = k->stoplen; return k->stop;
	case 'o': *len = k->donelen; return k->done;
	default: *len = k->stoppedlen; return k->stopped;
	}
}

/*
 * Start a fresh vector: EVALSHA of script s with the keys of k that it
 * takes, in the order of the script's KEYS (scripts.h: SCRIPT_KEYS_...,
 * the one place that says which keys a script has).
 */
void
args_script(struct args *a, enum script s, const struct keys *k)
{
	const char *order = script_table[s].keys;
	a->argc = a->nums = 0;
	a->script = (int)s;
	a->tryagain = 0;
	a->epoch_at = 0;
	args_str(a, "EVALSHA");
	args_add(a, script_table[s].sha1, 40);
	args_num(a, (long long)strlen(order));
	for (int i = 0; order[i] != '\0'; i++) {
		size_t len;
		const char *key = key_by_letter(k, order[i], &len);
		args_add(a, key, len);
	}
	a->base = a->argc - 1;
}

/*
 * Start a fresh vector for script s whose keys are not struct keys'
 * (its --@caller-keys line; a module's own, as fair.c's): EVALSHA with
 * the n keys key[i] of len[i] bytes, in the order of the script's KEYS.
 */
void
args_script_keys(struct args *a, enum script s, const char *const *key,
    const size_t *len, int n)
{
	args_script(a, s, &(struct keys){ 0 });
	a->argc = 2;
	a->nums = 0;
	args_num(a, n);
	for (int i = 0; i < n; i++)
		args_add(a, key[i], len[i]);
	a->base = a->argc - 1;
}

/* After NOSCRIPT: send the script's body instead of its name. */
void
args_as_eval(struct args *a)
{
	if (a->script < 0 || a->argc < 2)
		return;
	a->argv[0] = "EVAL";
	a->len[0] = 4;
	a->argv[1] = script_table[a->script].text;
	a->len[1] = strlen(script_table[a->script].text);
}

/*
 * What error reply r is (SERVER_OK when it is none).  Errors with a
 * code of their own are told by it; of Redis's plain "ERR" errors those
 * redlock acts on by their text (networking.c, cluster.c of Redis),
 * any other ERR being SERVER_ERR_PLAIN.
 */
enum server_error
reply_error(const redisReply *r)
{
	static const struct {
		const char *text;	/* how the error begins */
		enum server_error kind;
	} known[] = {
		{ "NOSCRIPT", SERVER_NOSCRIPT },
		{ "NOAUTH", SERVER_NOAUTH },
		{ "ERR Protocol error: unauthenticated", SERVER_NOAUTH },
		{ "NOPERM", SERVER_NOPERM },
		{ "WRONGTYPE", SERVER_WRONGTYPE },
		{ "ERR max number of clients", SERVER_MAXCLIENTS },
		{ "ERR This instance has cluster support disabled",
		    SERVER_NOCLUSTER },
		{ "MOVED ", SERVER_MOVED },
		{ "ASK ", SERVER_ASK },
		{ "TRYAGAIN", SERVER_TRYAGAIN },
		{ "CLUSTERDOWN", SERVER_CLUSTERDOWN },
		/* sentinel.c of Redis, SENTINEL MASTER of an unknown name */
		{ "ERR No such master with that name", SERVER_NOMASTER },
		{ "ERR ", SERVER_ERR_PLAIN },
	};

	if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL)
		return SERVER_OK;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strncmp(r->str, known[i].text, strlen(known[i].text)) == 0)
			return known[i].kind;
	return SERVER_OTHER;
}

/* Did the server not know the script by its name? */
int
reply_noscript(const redisReply *r)
{
	return reply_error(r) == SERVER_NOSCRIPT;
}

/* Element i of an array reply as an integer (0 if it is not one); a
 * plain integer reply is its own element 0. */
long long
reply_int(const redisReply *r, size_t i)
{
	if (r == NULL)
		return 0;
	if (r->type == REDIS_REPLY_INTEGER)
		return i == 0 ? r->integer : 0;
	if (r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return 0;
	r = r->element[i];
	return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

/* Element i of an array reply as a string ("" if it is not one). */
const char *
reply_str(const redisReply *r, size_t i)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements <= i)
		return "";
	r = r->element[i];
	return r->type == REDIS_REPLY_STRING ? r->str : "";
}
