/*
 * lockfloor - the least a Redis lock around a command can ask of the
 * server, for the benchmarks to measure redlock against: one hiredis
 * connection, `SET key token NX PX 30000`, the command, then a
 * check-and-delete script by SHA (redis-py's Lock, without Python).
 *
 *   lockfloor run PORT KEY CAD-SHA [COMMAND [ARG...]]
 *	take, run COMMAND (if any, fork+exec+wait), release
 *   lockfloor hold PORT KEY EXTEND-SHA INTERVAL-MS COUNT
 *	take, then COUNT times: sleep INTERVAL-MS and extend with the
 *	script (check the token, PEXPIRE); then release with DEL
 *   lockfloor queue PORT KEY COMMAND [ARG...]
 *	take, waiting for it as cheaply as a Redis lock can: the attempt
 *	is a script that sets the key NX or else adds us to KEY's
 *	waiters; a waiter blocks on KEY's wake-up list (BLPOP, at most
 *	QUEUE_POLL_S) with its next attempt queued behind, so the
 *	server makes it the moment a release pushes; run COMMAND; release
 *	with a script that deletes the key and, when someone waits,
 *	pushes one wake-up.  No fence, no record, no guard: the floor
 *	under redlock's rows A to C (bench/run.sh, its "minimal Redis
 *	lock" column).
 *
 * CAD-SHA: `if GET(KEYS[1]) == ARGV[1] then return DEL(KEYS[1]) end
 * return 0`; EXTEND-SHA: the same with PEXPIRE KEYS[1] ARGV[2].  The
 * bench loads both; queue's scripts are sent by SHA, and by body when
 * the server does not have them yet.  Exit status 0, 1 when a reply was
 * not the expected one, 64 usage, 69 no connection.  Not installed; a
 * benchmark tool.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

static const char token[] = "lockfloor-token";

/* queue: a waiter blocks this long before it tries again anyway. */
#define QUEUE_POLL_S "0.3"

/* queue's scripts.  KEYS: the lock, its waiters (a set), its wake-up
 * list; ARGV: the token.  Their SHA-1s are `printf %s SCRIPT | sha1sum`:
 * a script edited without them is sent by body every time. */
static const char join_lua[] =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 30000) then "
    "redis.call('SREM', KEYS[2], ARGV[1]) return 1 end "
    "redis.call('SADD', KEYS[2], ARGV[1]) "
    "redis.call('PEXPIRE', KEYS[2], 60000) return 0";
static const char release_lua[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('DEL', KEYS[1]) "
    "if redis.call('EXISTS', KEYS[2]) == 1 then "
    "redis.call('RPUSH', KEYS[3], 1) redis.call('PEXPIRE', KEYS[3], 1000) "
    "end return 1";
static const char join_sha[] = "79c8b48f5f28cc8a177f79c6a33fe3021256bf05";
static const char release_sha[] = "464424c7a91604ff5b4af06a1c0458f134453ae1";

/* Send one command; 0 if the reply has the wanted type, else -1. */
static int
ask(redisContext *c, int type, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;
	int ok;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ok = r != NULL && r->type == type;
	if (r != NULL && r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "lockfloor: %s\n", r->str);
	freeReplyObject(r);
	return ok ? 0 : -1;
}

/* fork, exec argv, wait; the command's status does not matter here. */
static void
run_command(char **argv)
{
	pid_t p = fork();

	if (p == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (p > 0)
		waitpid(p, NULL, 0);
}

/* Queue script (sha, body) with the keys of lock key and our token
 * tok, by SHA; eval_reply() reads its reply. */
static void
eval_append(redisContext *c, const char *sha, const char *key,
    const char *tok)
{
	redisAppendCommand(c, "EVALSHA %s 3 %s %s:waiters %s:wake %s", sha,
	    key, key, key, tok);
}

/* The reply of what eval_append() queued: an integer, or -1.  A server
 * without the script gets its body (and keeps it). */
static long long
eval_reply(redisContext *c, const char *body, const char *key,
    const char *tok)
{
	redisReply *r = NULL;
	long long v = -1;

	if (redisGetReply(c, (void **)&r) != REDIS_OK)
		return -1;
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
		freeReplyObject(r);
		r = redisCommand(c, "EVAL %s 3 %s %s:waiters %s:wake %s", body,
		    key, key, key, tok);
		if (r == NULL)
			return -1;
	}
	if (r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	else if (r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "lockfloor: %s\n", r->str);
	freeReplyObject(r);
	return v;
}

/* queue: take KEY (see the top), run argv, release. */
static int
queue(redisContext *c, const char *key, char **argv)
{
	char tok[32];
	void *blpop;
	long long got;

	snprintf(tok, sizeof(tok), "lockfloor-%ld", (long)getpid());
	eval_append(c, join_sha, key, tok);
	got = eval_reply(c, join_lua, key, tok);
	while (got == 0) {
		redisAppendCommand(c, "BLPOP %s:wake " QUEUE_POLL_S, key);
		eval_append(c, join_sha, key, tok);
		if (redisGetReply(c, &blpop) != REDIS_OK)
			return 1;
		freeReplyObject(blpop);
		got = eval_reply(c, join_lua, key, tok);
	}
	if (got != 1)
		return 1;
	run_command(argv);
	eval_append(c, release_sha, key, tok);
	return eval_reply(c, release_lua, key, tok) == 1 ? 0 : 1;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

int
main(int argc, char **argv)
{
	redisContext *c;
	const char *key;
	int rc = 0;

	if (argc < 5 || (strcmp(argv[1], "run") != 0 &&
	    strcmp(argv[1], "queue") != 0 &&
	    (strcmp(argv[1], "hold") != 0 || argc != 7))) {
		fprintf(stderr, "usage: lockfloor run PORT KEY CAD-SHA [COMMAND...]\n"
		    "       lockfloor hold PORT KEY EXTEND-SHA INTERVAL-MS COUNT\n"
		    "       lockfloor queue PORT KEY COMMAND [ARG...]\n");
		return 64;
	}
	key = argv[3];
	c = redisConnect("127.0.0.1", atoi(argv[2]));
	if (c == NULL || c->err)
		return 69;
	if (strcmp(argv[1], "queue") == 0) {
		rc = queue(c, key, argv + 4);
		redisFree(c);
		return rc;
	}
	if (ask(c, REDIS_REPLY_STATUS, "SET %s %s NX PX 30000", key, token) < 0)
		return 1;
	if (strcmp(argv[1], "run") == 0) {
		if (argc > 5)
			run_command(argv + 5);
		rc = ask(c, REDIS_REPLY_INTEGER, "EVALSHA %s 1 %s %s", argv[4],
		    key, token) < 0;
	} else {
		long every = atol(argv[5]), n = atol(argv[6]);

		for (long i = 0; i < n && rc == 0; i++) {
			sleep_ms(every);
			rc = ask(c, REDIS_REPLY_INTEGER, "EVALSHA %s 1 %s %s 30000",
			    argv[4], key, token) < 0;
		}
		if (ask(c, REDIS_REPLY_INTEGER, "DEL %s", key) < 0)
			rc = 1;
	}
	redisFree(c);
	return rc;
}
