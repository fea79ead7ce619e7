/*
 * lockfloor - the least a Redis lock around a command can ask of the
 * server, for bench/fleet.sh to measure redlock against: one hiredis
 * connection, `SET key token NX PX 30000`, the command, then a
 * check-and-delete script by SHA (redis-py's Lock, without Python).
 *
 *   lockfloor run PORT KEY CAD-SHA [COMMAND [ARG...]]
 *	take, run COMMAND (if any, fork+exec+wait), release
 *   lockfloor hold PORT KEY EXTEND-SHA INTERVAL-MS COUNT
 *	take, then COUNT times: sleep INTERVAL-MS and extend with the
 *	script (check the token, PEXPIRE); then release with DEL
 *
 * CAD-SHA: `if GET(KEYS[1]) == ARGV[1] then return DEL(KEYS[1]) end
 * return 0`; EXTEND-SHA: the same with PEXPIRE KEYS[1] ARGV[2].  The
 * bench loads both.  Exit status 0, 1 when a reply was not the expected
 * one, 64 usage, 69 no connection.  Not installed; a benchmark tool.
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
	    (strcmp(argv[1], "hold") != 0 || argc != 7))) {
		fprintf(stderr, "usage: lockfloor run PORT KEY CAD-SHA [COMMAND...]\n"
		    "       lockfloor hold PORT KEY EXTEND-SHA INTERVAL-MS COUNT\n");
		return 64;
	}
	key = argv[3];
	c = redisConnect("127.0.0.1", atoi(argv[2]));
	if (c == NULL || c->err)
		return 69;
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
