/*
 * redlock - run a command while holding a named lock kept in Redis.
 *
 * main() is the table of contents: make the standard descriptors safe,
 * parse, connect, then the run form (acquire, spawn, supervise,
 * release; run.c) or a terminal verb (verbs.c), and the exit status
 * (exit.h lists them all).  A command that died of a signal makes
 * redlock die of it too, after releasing.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"
#include "exit.h"
#include "guard.h"
#include "lock.h"
#include "log.h"
#include "proto.h"
#include "quorum.h"
#include "respawn.h"
#include "run.h"
#include "sig.h"
#include "tls.h"
#include "verbs.h"

/* The Makefile passes its VERSION (see tools/version.sh), the one place
 * the version is named; a compile without it (a static analyzer's) says
 * so rather than a number that would go stale. */
#ifndef REDLOCK_VERSION
#define REDLOCK_VERSION "unknown"
#endif

static const char usage_text[] =
"Usage: redlock [OPTIONS] NAME COMMAND [ARG...]\n"
"       redlock [OPTIONS] NAME -c SHELL-COMMAND\n"
"       redlock run [OPTIONS] NAME COMMAND [ARG...]\n"
"       redlock acquire [OPTIONS] NAME\n"
"       redlock release [OPTIONS] NAME TOKEN\n"
"       redlock extend [OPTIONS] NAME TOKEN\n"
"       redlock status [OPTIONS] NAME\n"
"       redlock list [OPTIONS] [PATTERN]\n"
"       redlock break [OPTIONS] NAME\n"
"       redlock stop [OPTIONS] NAME\n"
"       redlock runs [OPTIONS] [PATTERN]\n"
"       redlock --help | --version\n"
"\n"
"Run a command while holding a named lock kept in Redis.\n"
"\n"
"Options:\n"
"  -u, --url URL                Redis server; repeat for a quorum of servers\n"
"  -t, --ttl DURATION           lock time-to-live, renewed every ttl/3 (30s)\n"
"  -n, --nonblock, --nb         fail at once if the lock is held\n"
"  -w, --wait, --timeout DURATION\n"
"                               give up after waiting this long; 0 is -n\n"
"  -E, --conflict-exit-code N   exit status when the lock is not obtained (1)\n"
"  -c, --command STRING         run STRING with /bin/sh -c\n"
"  -p, --prefix STRING          key prefix (\"redlock:\")\n"
"  -s, --shared                 a shared lock: any number of shared holders\n"
"  -x, -e, --exclusive          an exclusive lock (the default)\n"
"      --limit N                a shared lock of at most N holders (semaphore)\n"
"      --on-lost ACTION         when the lock is lost: term, kill or ignore (term)\n"
"      --kill-after DURATION    grace between SIGTERM and SIGKILL\n"
"      --min-hold DURATION      keep the lock at least this long after acquiring\n"
"      --max-time DURATION      stop the command after this long and exit 124\n"
"      --metrics-dir DIR        leave each run's outcome in DIR for node_exporter\n"
"      --record                 keep NAME's last run in Redis (status, runs)\n"
"      --skip-alert N           with --record: the Nth busy attempt in a row\n"
"                               exits 1 and names the holder\n"
"      --on-start CMD           run CMD with /bin/sh once the lock is held\n"
"      --on-exit CMD            run CMD with /bin/sh at the end, told the outcome\n"
"      --hook-timeout DURATION  kill a hook after this long (5s)\n"
"      --once-per PERIOD        at most one successful run per PERIOD of the\n"
"                               server's clock; else skip (the -E status)\n"
"      --lock-delay DURATION    after a lock was lost, no holder for this long\n"
"      --replace                ask the holders to stop; take NAME over first\n"
"      --respawn                standby: run again after each run until signalled\n"
"      --fair                   wait in a queue: waiters are granted in order\n"
"      --env                    acquire: print shell assignments, not the token\n"
"      --json                   status, list, runs: print JSON objects\n"
"      --prom                   runs: print Prometheus text\n"
"      --fence                  break: also remove the lock's fencing counter\n"
"      --tls                    TLS to the redis:// servers too (as rediss://)\n"
"      --cacert FILE            trust the CA certificates in FILE\n"
"      --cacertdir DIR          trust the CA certificates in DIR\n"
"      --cert FILE              client certificate (mutual TLS), with --key\n"
"      --key FILE               the private key of --cert\n"
"      --sni NAME               send and verify NAME instead of the URL's host\n"
"      --insecure               do not verify the servers' certificates\n"
"      --password-file FILE     read the password from the first line of FILE\n"
"      --label TEXT             record TEXT as what the holder runs\n"
"      --store-args             record the command's arguments, not its name only\n"
"  -v, --verbose                more diagnostics\n"
"  -q, --quiet                  no diagnostics but usage errors\n"
"  -h, --help                   print this help and exit\n"
"  -V, --version                print the version and exit\n"
"\n"
"DURATION is a number with an optional unit ms, s, m or h (bare: seconds).\n"
"URL is redis://[[user]:password@]host[:port][/db], rediss://... (TLS),\n"
"unix:///path[?db=N], or redis+sentinel://[[user]:password@]host[:port]\n"
"[,host[:port]...]/service[/db] (rediss+sentinel://: TLS).\n"
"Environment: REDLOCK_URL, REDLOCK_PASSWORD, REDISCLI_AUTH, REDLOCK_ and the\n"
"long name of each option with a value (REDLOCK_TTL=10m; REDLOCK_TLS=1),\n"
"REDLOCK_SENTINEL_PASSWORD, REDLOCK_SENTINEL_USER.\n"
"stop asks the holders of NAME to stop as on SIGTERM and waits for them.\n"
"runs prints the --record records of the NAMEs matching PATTERN, fleet-wide.\n"
"Exit status: the command's own; 1 (or -E) lock not obtained; 64 usage;\n"
"69 Redis unavailable; 70 internal error; 74 output not written;\n"
"75 lock lost; 124 --max-time;\n"
"126/127 command not executable / not found; 128+N signal N.\n";

/* --help, --version or a usage error: the status to exit with. */
static int
no_run(int rc, const char *err)
{
	if (rc == CONFIG_HELP || rc == CONFIG_VERSION) {
		/* Not to the /dev/null that sig_std_fds() put in place of a
		 * closed stdout. */
		if (sig_std_was_closed(STDOUT_FILENO))
			errno = EBADF;
		else {
			/* A closed pipe is 74, as for every output, not
			 * death by SIGPIPE (sig_init() has not run). */
			signal(SIGPIPE, SIG_IGN);
			fputs(rc == CONFIG_HELP ? usage_text :
			    "redlock " REDLOCK_VERSION "\n", stdout);
			if (fflush(stdout) == 0 && !ferror(stdout))
				return 0;
		}
		log_error("cannot write to stdout: %s", strerror(errno));
		return EXIT_IOERR;
	}
	log_usage("%s", err);
	return EXIT_USAGE;
}

/* Who we are to the servers (struct lock_meta) for the forms that take
 * the lock, in m; NULL for the verbs that take nothing. */
static const struct lock_meta *
holder_of(const struct config *cfg, struct lock_meta *m)
{
	if (cfg->verb == VERB_RUN)
		run_holder(cfg, m);
	else if (cfg->verb == VERB_ACQUIRE)
		verbs_holder(cfg, m);
	else
		return NULL;
	return m;
}

/* How the lock is taken and held: set once, with the lock.  release
 * and extend act on whatever hold their token has (a shared one is
 * found by asking), so -s or REDLOCK_LIMIT does not make them miss an
 * exclusive one. */
static struct lock_policy
policy_of(const struct config *cfg)
{
	int by_token = cfg->verb == VERB_RELEASE || cfg->verb == VERB_EXTEND;

	return (struct lock_policy){
		.held = getenv("REDLOCK_HELD"),
		.shared = cfg->shared && !by_token,
		.limit = cfg->limit, .delay = cfg->lock_delay,
		.standby = cfg->verb == VERB_RUN && cfg->respawn,
		.fair = cfg->fair,
	};
}

/* Does the key of cfg's NAME (the prefix and NAME) name the auxiliary
 * keys of another lock too?  Then say so, a usage error: the two
 * would share their fencing counter, holder record and queues. */
static int
key_shared(const struct config *cfg)
{
	size_t pl = strlen(cfg->prefix), nl = strlen(cfg->name);
	char *k;
	int shared;

	/* Only a key that starts with '{' can (proto_aux_shared()). */
	if ((pl > 0 ? cfg->prefix[0] : cfg->name[0]) != '{' ||
	    (k = malloc(pl + nl + 1)) == NULL)
		return 0;
	memcpy(k, cfg->prefix, pl);
	memcpy(k + pl, cfg->name, nl + 1);
	shared = proto_aux_shared(k, pl + nl);
	free(k);
	if (shared)
		log_usage("the key '%s%s' would share the auxiliary keys of "
		    "another lock (see redlock-protocol(7)): use a prefix "
		    "that does not start with '{', or another NAME",
		    cfg->prefix, cfg->name);
	return shared;
}

/* Connect to the servers lazily (conn.c; the one server of the forms
 * that take the lock at once, conn_start()), take the signals, set the
 * lock up once and do what was asked. */
static int
dispatch(const struct config *cfg, int *die_by)
{
	struct conn *conns = calloc((size_t)cfg->nurls, sizeof(*conns));
	struct lock lock = { 0 };
	struct lock_policy policy = policy_of(cfg);
	struct lock_meta meta;
	char err[512];
	int code, n = cfg->nurls;

	if (conns == NULL) {
		log_error("out of memory");
		return EXIT_INTERNAL;
	}
	if (cfg->name != NULL && key_shared(cfg)) {
		free(conns);
		return EXIT_USAGE;
	}
	for (int i = 0; i < cfg->nurls; i++) {
		conn_init(&conns[i], &cfg->urls[i], cfg->password);
		/* A node reached over TCP may be a cluster's: learn its
		 * nodes at connect, in case it fails over (cluster.c). */
		if (cfg->urls[i].kind == URL_TCP)
			cluster_watch(&conns[i]);
	}
	/* The forms that take the lock ask one server first of all: its
	 * connection opens now, to be accepted while the lock is set up. */
	if (n == 1 && (cfg->verb == VERB_RUN || cfg->verb == VERB_ACQUIRE))
		conn_start(&conns[0]);
	/* Signals are ours from here on, before anything can be held. */
	if (sig_init() < 0) {
		log_error("cannot set up signals: %s", strerror(errno));
		code = EXIT_INTERNAL;
	} else if (n > 1 && (n = quorum_distinct(conns, n, err, sizeof(err))) < 0) {
		/* A usage error, but one that --help cannot explain. */
		log_error("%s", err);
		code = EXIT_USAGE;
	} else if (cfg->shared && n > 1 &&
	    (cfg->verb == VERB_RUN || cfg->verb == VERB_ACQUIRE)) {
		/* Known once nodes of one Redis Cluster are one server; the
		 * verbs that take nothing find shared holders by token. */
		log_usage("-s and --limit (or REDLOCK_LIMIT) need "
		    "one server: a majority of several cannot bound the "
		    "number of holders");
		code = EXIT_USAGE;
	} else if (lock_init(&lock, conns, n, cfg->prefix,
	    cfg->name != NULL ? cfg->name : "", cfg->ttl) < 0) {
		log_error("out of memory");
		code = EXIT_INTERNAL;
	} else {
		lock_setup(&lock, &policy, holder_of(cfg, &meta));
		code = cfg->verb != VERB_RUN ? verbs_run(cfg, &lock, die_by) :
		    cfg->respawn ? respawn_run(cfg, &lock, die_by) :
		    run_command(cfg, &lock, cfg->replace, cfg->started,
		    &(struct grant){ .fence = 0 }, die_by);
	}
	lock_free(&lock);
	for (int i = 0; i < cfg->nurls; i++) {
		conn_close(&conns[i]);
		cluster_forget(&conns[i]);
	}
	free(conns);
	return code;
}

/*
 * No core dump and no same-user /proc/PID/mem or ptrace: the process
 * may hold a password (--password-file, $REDLOCK_PASSWORD) and a TLS
 * key.  The command is exec'd, which makes it an ordinary process
 * again.
 */
static void
keep_secrets(void)
{
	prctl(PR_SET_DUMPABLE, 0);
}

int
main(int argc, char **argv)
{
	struct config cfg;
	char err[512];
	int rc, code, die_by = 0;

	guard_exec_main(argc, argv);	/* returns unless we are a guard */
	keep_secrets();
	if (sig_std_fds() < 0)
		return EXIT_INTERNAL;
	rc = config_parse(&cfg, argc, argv, err, sizeof(err));
	if (rc != CONFIG_OK) {
		config_free(&cfg);
		return no_run(rc, err);
	}
	log_set_level(cfg.verbosity);
	if (!tls_wanted(&cfg.tls_opts) ||
	    (code = tls_init(&cfg.tls_opts)) == 0)
		code = dispatch(&cfg, &die_by);
	config_free(&cfg);
	if (fflush(stdout) != 0 && code == 0) {
		log_error("cannot write to stdout: %s", strerror(errno));
		code = EXIT_IOERR;
	}
	if (die_by != 0)
		sig_die_by(die_by < 0 ? -die_by : die_by, die_by < 0);
	return code;
}
