/*
 * tests/tools/rcli.c - the test suite's `redis-cli`: a small hiredis
 * client for the forms the tests use most, and the real redis-cli for
 * everything else.
 *
 * Why: Debian's redis-cli maps 17 shared libraries (OpenSSL, libstdc++,
 * libsystemd, jemalloc...) before it says a word, about 6 ms of CPU a
 * call, and the suite calls it tens of thousands of times (the helpers'
 * polling loops, the commands of the tests' jobs): about a third of the
 * suite's CPU time.  This one is linked like redlock and starts in a
 * fraction of that.  tests/helpers.bash puts it first on the tests' PATH
 * as `redis-cli`; REDLOCK_TEST_REAL_CLI=1 uses the real one everywhere.
 *
 * The contract: for the forms it handles, its output, its exit status
 * and what the server sees (one connection; AUTH, then SELECT, then the
 * command) are byte for byte those of redis-cli 7 with stdout not a
 * terminal (raw output): tests/rcli.bats compares the two.  Handled:
 *   [-s SOCKET | -h HOST -p PORT] [-n DB] [-a PW | --pass PW] [--user U]
 *   [--no-auth-warning] [--raw] COMMAND [ARG...]
 * with REDISCLI_AUTH as the password when no option gives one.  Anything
 * else (no command: commands from stdin; --tls, --cluster, --scan, -c,
 * -x, --eval, -r, -e, a terminal on stdout, a command that redis-cli
 * treats specially...) is handed to the real redis-cli: the first
 * `redis-cli` on PATH that is not this program, or REDLOCK_TEST_REDIS_CLI.
 *
 * Test tooling only: not built by `make`, not installed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

/* Where redis-cli 7 connects when neither -h nor -p nor -s says. */
#define RCLI_DEFAULT_HOST "127.0.0.1"
#define RCLI_DEFAULT_PORT 6379

/* What the command line asked for; NULL/0 where it said nothing. */
struct rcli_opts {
	const char *sock, *host, *user, *pass;
	int port, db, warn_pass, ncmd;
	char **cmd;
};

/* What redis-cli prints on stderr when a password is on its command line. */
static const char rcli_pass_warning[] =
	"Warning: Using a password with '-a' or '-u' option on the command "
	"line interface may not be safe.\n";

/*
 * rcli_real(argv): execs the real redis-cli with this program's own
 * arguments; never returns.  The real one is REDLOCK_TEST_REDIS_CLI if
 * set, else the first redis-cli on PATH; either only if it is not this
 * very file (same device and inode as /proc/self/exe), so that neither
 * can make it exec itself.
 */
static void
rcli_real(char **argv)
{
	const char *env = getenv("REDLOCK_TEST_REDIS_CLI");
	const char *path = getenv("PATH");
	struct stat self, st;
	char buf[PATH_MAX];

	if (stat("/proc/self/exe", &self) != 0)
		self.st_ino = 0;
	if (env != NULL && *env != '\0' && stat(env, &st) == 0 &&
	    !(st.st_ino == self.st_ino && st.st_dev == self.st_dev)) {
		execv(env, argv);
		fprintf(stderr, "rcli: cannot run %s: %s\n", env, strerror(errno));
		exit(127);
	}
	while (path != NULL && *path != '\0') {
		const char *end = strchrnul(path, ':');
		int n = snprintf(buf, sizeof buf, "%.*s/redis-cli", (int)(end - path), path);

		if (n > 0 && (size_t)n < sizeof buf && end != path &&
		    stat(buf, &st) == 0 && access(buf, X_OK) == 0 &&
		    !(st.st_ino == self.st_ino && st.st_dev == self.st_dev))
			execv(buf, argv);
		path = *end == ':' ? end + 1 : NULL;
	}
	fprintf(stderr, "rcli: no real redis-cli on PATH\n");
	exit(127);
}

/* rcli_number(s, out): s is a decimal number 0..INT_MAX; stores it. */
static int
rcli_number(const char *s, int *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > INT_MAX)
		return 0;
	*out = (int)v;
	return 1;
}

/*
 * rcli_value_opt(a, v, o): stores the value v of option a in o; returns 0
 * if a is not an option this shim handles, or v not a value it handles
 * for certain.
 */
static int
rcli_value_opt(const char *a, const char *v, struct rcli_opts *o)
{
	if (!strcmp(a, "-s")) {
		o->sock = v;
	} else if (!strcmp(a, "-h")) {
		o->host = v;
		return v[0] != '\0' && strchr(v, '%') == NULL;
	} else if (!strcmp(a, "-p")) {
		return rcli_number(v, &o->port) && o->port >= 1 && o->port <= 65535;
	} else if (!strcmp(a, "-n")) {
		return rcli_number(v, &o->db);
	} else if (!strcmp(a, "-a") || !strcmp(a, "--pass")) {
		o->pass = v;
		o->warn_pass |= 1;
	} else if (!strcmp(a, "--user")) {
		o->user = v;
	} else {
		return 0;
	}
	return 1;
}

/*
 * rcli_parse(argc, argv, o): fills o from the options this shim handles
 * and points o->cmd at the command; returns 0 for anything it does not
 * handle for certain (the caller then hands the line to redis-cli).
 * Like redis-cli, it reads options up to the first word that is not one.
 */
static int
rcli_parse(int argc, char **argv, struct rcli_opts *o)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--no-auth-warning"))
			o->warn_pass = -1;
		else if (!strcmp(argv[i], "--raw"))
			continue;
		else if (i + 1 < argc && rcli_value_opt(argv[i], argv[i + 1], o))
			i++;
		else
			return 0;
	}
	o->cmd = argv + i;
	o->ncmd = argc - i;
	return o->ncmd > 0;
}

/*
 * rcli_special(name): redis-cli treats the command itself (a loop, a
 * reconnection, its own help, its prompt's state...): not for this shim.
 */
static int
rcli_special(const char *name)
{
	static const char *const special[] = {
		"subscribe", "psubscribe", "ssubscribe", "monitor", "sync",
		"psync", "shutdown", "help", "?", "quit", "exit", "connect",
		"restart", "clear", "select", "auth", "hello", "multi", "exec",
		"discard", "reset", "debug", "script",
	};
	size_t i;

	for (i = 0; i < sizeof special / sizeof special[0]; i++)
		if (!strcasecmp(name, special[i]))
			return 1;
	return 0;
}

/*
 * rcli_print(r): writes reply r as redis-cli 7's raw output does:
 * strings, statuses and errors as they are (an error with a newline
 * after it), integers in decimal, nil as nothing, and an array's
 * elements one after the other with a newline between them.
 */
/* The recursion is as deep as the reply, which hiredis bounds. */
static void
rcli_print(const redisReply *r) // NOLINT(misc-no-recursion)
{
	size_t i;

	switch (r->type) {
	case REDIS_REPLY_ERROR:
		fwrite(r->str, 1, r->len, stdout);
		putchar('\n');
		break;
	case REDIS_REPLY_STATUS:
	case REDIS_REPLY_STRING:
		fwrite(r->str, 1, r->len, stdout);
		break;
	case REDIS_REPLY_INTEGER:
		printf("%lld", r->integer);
		break;
	case REDIS_REPLY_ARRAY:
		for (i = 0; i < r->elements; i++) {
			if (i > 0)
				putchar('\n');
			rcli_print(r->element[i]); // NOLINT(misc-no-recursion)
		}
		break;
	default: /* REDIS_REPLY_NIL */
		break;
	}
}

/*
 * rcli_connect(o): a connection to the server o names, or NULL after
 * redis-cli's message on stderr.
 */
static redisContext *
rcli_connect(const struct rcli_opts *o)
{
	const char *host = o->host != NULL ? o->host : RCLI_DEFAULT_HOST;
	int port = o->port != 0 ? o->port : RCLI_DEFAULT_PORT;
	redisContext *c;

	c = o->sock != NULL ? redisConnectUnix(o->sock) : redisConnect(host, port);
	if (c != NULL && c->err == 0)
		return c;
	fputs("Could not connect to Redis at ", stderr);
	if (o->sock != NULL)
		fprintf(stderr, "%s: ", o->sock);
	else
		fprintf(stderr, "%s:%d: ", host, port);
	fprintf(stderr, "%s\n", c != NULL ? c->errstr : "Out of memory");
	redisFree(c);
	return NULL;
}

/*
 * rcli_prelude(c, o): AUTH and SELECT as redis-cli sends them on
 * connecting.  A refusal is reported on stderr and the command is sent
 * all the same, as redis-cli does (a failed AUTH skips the SELECT).
 * Returns 0 when the connection itself failed.
 */
static int
rcli_prelude(redisContext *c, const struct rcli_opts *o)
{
	redisReply *r;
	int ok;

	if (o->pass != NULL) {
		r = o->user != NULL ? redisCommand(c, "AUTH %s %s", o->user, o->pass)
				    : redisCommand(c, "AUTH %s", o->pass);
		if (r == NULL)
			return 0;
		ok = r->type != REDIS_REPLY_ERROR;
		if (!ok)
			fprintf(stderr, "AUTH failed: %s\n", r->str);
		freeReplyObject(r);
		if (!ok)
			return 1;
	}
	if (o->db == 0)
		return 1;
	r = redisCommand(c, "SELECT %d", o->db);
	if (r == NULL)
		return 0;
	if (r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "SELECT %d failed: %s\n", o->db, r->str);
	freeReplyObject(r);
	return 1;
}

int
main(int argc, char **argv)
{
	struct rcli_opts o = {0};
	redisContext *c;
	redisReply *r = NULL;

	if (!rcli_parse(argc, argv, &o) || rcli_special(o.cmd[0]) ||
	    isatty(STDOUT_FILENO) || getenv("FAKETTY") != NULL)
		rcli_real(argv);
	if (o.warn_pass > 0)
		fputs(rcli_pass_warning, stderr);
	if (o.pass == NULL)
		o.pass = getenv("REDISCLI_AUTH");
	c = rcli_connect(&o);
	if (c == NULL)
		return 1;
	if (rcli_prelude(c, &o))
		r = redisCommandArgv(c, o.ncmd, (const char **)o.cmd, NULL);
	if (r == NULL) {
		fprintf(stderr, "Error: %s\n", c->errstr);
		redisFree(c);
		return 1;
	}
	rcli_print(r);
	putchar('\n');
	freeReplyObject(r);
	redisFree(c);
	/* As redis-cli: a reply that could not be written is not a failure. */
	return 0;
}
