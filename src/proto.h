/* proto.h - what redlock says to a server: keys, scripts, arguments,
 * and how replies are read.  No I/O here. */
#ifndef REDLOCK_PROTO_H
#define REDLOCK_PROTO_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* A lock's keys on the server: see the layout at the top of proto.c. */
struct keys {
	char *key, *fence, *meta, *wake, *waiting;
	size_t keylen, fencelen, metalen, wakelen, waitinglen;
	/* Shared holders, waiting writers, stop requests. */
	char *holders, *hmeta, *xwait, *xwake, *stop, *stopped;
	size_t holderslen, hmetalen, xwaitlen, xwakelen, stoplen, stoppedlen;
	/* --once-per: when NAME last succeeded. */
	char *done;
	size_t donelen;
};

/* enum script, one entry a script that args_script() sends: made by
 * tools/luagen.sh from the files of src/lua/ (src/lua/README). */
#include "script_args.h"

/* What K holds while shared holders hold the lock (proto.c): a NUL
 * byte first, so that no token given in argv can equal it.
 *
 * The scripts (src/lua/, scripts.h) use the PROTO_..._MS numbers below
 * as {{PROTO_..._MS}}, which tools/luagen.sh fills from this file. */
#define PROTO_MARKER "\0shared"
#define PROTO_MARKER_LEN 7

/* How long a fencing counter outlives its seeding (or, on a quorum, the
 * last grant of its name): long enough that quorum servers' clocks agree
 * better than that, short enough that a name used once leaves nothing
 * behind a minute later, with ten seconds to spare for a server's lazy
 * expiry. */
#define PROTO_FENCE_LINGER_MS 50000

/* How long a wake list outlives its last push: a waiter that was
 * between two attempts still finds the push when it blocks again. */
#define PROTO_WAKE_LINGER_MS 10000

/* How long a waiter's place in the writers' queue, and its mark that a
 * release should wake it, last without a new attempt: well above the
 * longest sleep between two attempts (wait.c's poll interval plus
 * jitter and a round trip). */
#define PROTO_WAIT_MARK_MS 2000

/* How long readers have the lock to themselves after an exclusive
 * release while writers wait too (phase-fair: otherwise two writers
 * taking turns would keep every shared request out).  A reader woken by
 * the release needs a round trip; one in its pause between attempts
 * wakes within wait.c's poll interval and jitter (300 ms). */
#define PROTO_READERS_TURN_MS 500

/* How long a --replace claim stands without being asserted again: the
 * replacing redlock asserts it every round of its wait (at most
 * WAIT_POLL_MS and a jitter apart, or right after a hold it slept
 * through), so this is a few rounds, and a replacer that died holds
 * the others back no longer than this. */
#define PROTO_CLAIM_MS 2000

/* The format version of the holder's record, its thirteenth field
 * (holder_record(), src/lua/lib/holder_record.lua, doc/DESIGN.md "The
 * holder record"): fields are only added at the end, and readers take
 * the fields they know, so a record of any version is read by every
 * build; the number tells a record of this layout from an older
 * redlock's (no thirteenth field). */
#define PROTO_RECORD_VERSION 1

/* The longest vector: a script call with its keys, the holder's
 * metadata and the inherited tokens (REDLOCK_HELD) that fit. */
#define ARGS_MAX 64

/* The most numbers one vector holds (the shared acquire has ten). */
#define ARGS_NUMS 16

/* An argument vector: strings with lengths, built up one at a time.
 * Numbers are formatted into the vector's own buffers. */
struct args {
	int argc;
	const char *argv[ARGS_MAX];
	size_t len[ARGS_MAX];
	char num[ARGS_NUMS][24];
	int nums;
	int script;		/* the script run by argv, or -1 */
	int base;		/* argv[base + i] is the script's ARGV[i]
				 * (args_put()) */
	int tryagain;		/* a Redis Cluster's TRYAGAIN is the
				 * caller's, not retried (cluster.c) */
	int epoch_at;		/* argv[epoch_at] is sent as the Sentinel
				 * epoch of each connection's master
				 * (route.c); 0: no such argument */
};

int proto_keys(struct keys *k, const char *prefix, const char *name);
void proto_keys_free(struct keys *k);
char *proto_aux_key(const char *k, size_t n, const char *suffix, size_t *len);
int proto_aux_shared(const char *k, size_t n);
void args_add(struct args *a, const char *s, size_t n);
void args_str(struct args *a, const char *s);
void args_num(struct args *a, long long v);
void args_script(struct args *a, enum script s, const struct keys *k);
void args_script_keys(struct args *a, enum script s, const char *const *key,
    const size_t *len, int n);
void args_put(struct args *a, int pos, const char *s, size_t n);
void args_put_str(struct args *a, int pos, const char *s);
void args_put_num(struct args *a, int pos, long long v);
void args_as_eval(struct args *a);
/*
 * What a server's error reply says, for the code that acts on it
 * (reply_error()).  An error's first word is its code; the few that
 * have none (ERR ...) are told by their text, matched in proto.c and
 * nowhere else.
 */
enum server_error {
	SERVER_OK,		/* not an error reply (or none) */
	SERVER_OTHER,		/* any other code: LOADING, BUSY, ... */
	SERVER_NOSCRIPT,	/* the script is not known by its SHA-1 */
	SERVER_NOAUTH,		/* authentication required (NOAUTH, or the
				 * protocol error of a long command sent
				 * before AUTH) */
	SERVER_NOPERM,		/* an ACL forbids it */
	SERVER_WRONGTYPE,	/* a key holds another type */
	SERVER_MAXCLIENTS,	/* the server has all the clients it takes */
	SERVER_NOCLUSTER,	/* a Cluster command on a plain server */
	SERVER_ERR_PLAIN,	/* any other ERR: asking again will not
				 * change it (unknown command, ...) */
	SERVER_MOVED,		/* Cluster: the slot lives elsewhere */
	SERVER_ASK,		/* Cluster: ask that node, this once */
	SERVER_TRYAGAIN,	/* Cluster: the slot's keys are half moved */
	SERVER_CLUSTERDOWN,	/* Cluster: the slot is not served */
	SERVER_NOMASTER		/* Sentinel: no master of that name */
};

enum server_error reply_error(const redisReply *r);
int reply_noscript(const redisReply *r);
long long reply_int(const redisReply *r, size_t i);
const char *reply_str(const redisReply *r, size_t i);

#endif
