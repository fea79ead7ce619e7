/*
 * metrics.c - the textfile that node_exporter's textfile collector
 * reads: one file per lock in --metrics-dir, DIR/redlock_<NAME>~<id>.prom
 * (id: a hash of NAME, the key prefix and the servers, so that the same
 * NAME under another prefix or on other servers has a file and series
 * of its own), written when the command starts (redlock_running 1) and
 * at the end of every run-form invocation, whatever its outcome.
 *
 * Nothing here may block the run (redlock-monitoring(7), Metrics for
 * Prometheus): whoever can write DIR can put a FIFO or a device where a
 * file is expected, so every open is non-blocking and does not follow a
 * symbolic link, and a previous file that is not a regular file is
 * refused (one warning) and left alone.
 *
 * A scrape never sees half a file: each write goes to a temporary file
 * in DIR (a name that does not end in .prom, which the collector
 * skips) and is renamed over the old one.  The counters by outcome and
 * the times of the last start and success are carried over from the
 * previous file, read back leniently (a line that does not parse is
 * left out).  Writers of DIR on this host take turns under flock(2) on
 * the directory, so that two ends at once do not lose a count; a writer
 * that has waited patience_ms goes ahead without it.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "prom.h"
#include "sha1.h"
#include "tree.h"

/* A NAME up to this long and made of [A-Za-z0-9_.-] is the readable
 * part of its file name as it is; another is cut to METRICS_PART_MAX
 * bytes, the others as '_' (the hash after it keeps names apart). */
#define METRICS_PLAIN_MAX 100
#define METRICS_PART_MAX 48

/* Hex digits of the id in a file name: 64 bits keep apart the few
 * locks of one NAME that a host's jobs use, and stay short to read. */
#define METRICS_ID_HEX 16

/* The previous file is read up to this size: ours are about 3 KiB. */
#define METRICS_READ_MAX 65536

/* How long a writer sleeps between two tries of the directory lock. */
#define METRICS_LOCK_STEP_MS 2

/* The runs of NAME on this host whose command runs now, which the file
 * keeps on a comment line of its own (the collector skips comments):
 * redlock_running is 1 while one of them is left.  Each is a pid and
 * the process's start time (tree_start_time(), 0 where /proc says
 * none), so that a pid reused since is not taken for a run.  More than
 * a host runs of one lock at once (a shared lock's or a semaphore's)
 * are kept as this many: redlock_running stays 1 all the same. */
#define METRICS_RUNNERS_MAX 64
#define METRICS_RUNNERS_LINE "# redlock_running_pids"

/* The families, in the order of the file; every file has them all. */
enum {
	F_RUNNING, F_START, F_END, F_SUCCESS, F_DURATION, F_WAIT, F_EXIT,
	F_OUTCOME, F_RUNS, F_COUNT
};

static const struct prom_family families[F_COUNT] = {
	{ "redlock_running", "gauge",
	  "1 while redlock runs the command of lock NAME on this host" },
	{ "redlock_last_start_timestamp_seconds", "gauge",
	  "When the command of lock NAME last started on this host (0: never)" },
	{ "redlock_last_end_timestamp_seconds", "gauge",
	  "When the last redlock invocation for NAME ended on this host, "
	  "whatever its outcome" },
	{ "redlock_last_success_timestamp_seconds", "gauge",
	  "When the command of lock NAME last exited 0 on this host (0: never)" },
	{ "redlock_last_duration_seconds", "gauge",
	  "How long the command of lock NAME ran the last time it ran on "
	  "this host" },
	{ "redlock_last_wait_seconds", "gauge",
	  "How long the last invocation for NAME waited for the lock" },
	{ "redlock_last_exit_status", "gauge",
	  "The exit status of the last invocation for NAME, as its caller "
	  "saw it" },
	{ "redlock_last_outcome_info", "gauge",
	  "The outcome of the last invocation for NAME on this host" },
	{ "redlock_runs_total", "counter",
	  "redlock invocations for NAME on this host, by outcome" },
};

/* A run of NAME on this host whose command runs. */
struct runner {
	pid_t pid;
	unsigned long long since;
};

/* What a file says. */
struct state {
	int nrunners;
	struct runner runners[METRICS_RUNNERS_MAX];
	int outcome;		/* -1: none yet */
	int exit_status;
	int64_t start_ms, end_ms, success_ms, run_ms, wait_ms;
	unsigned long long runs[OUTCOME_COUNT];
};

/* Is c kept as it is in a file name? */
static int
plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* The readable part of NAME's file name into part (METRICS_PLAIN_MAX
 * + 1 bytes): NAME itself when it is short and made of [A-Za-z0-9_.-],
 * else its first METRICS_PART_MAX bytes with the others as '_'.
 * Returns 1 when NAME is such a plain name, else 0. */
static int
name_part(const char *name, char *part)
{
	size_t n = strlen(name), k;
	int plain = n <= METRICS_PLAIN_MAX && strspn(name,
	    "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;

	if (!plain)
		n = n < METRICS_PART_MAX ? n : METRICS_PART_MAX;
	for (k = 0; k < n; k++)
		part[k] = (char)(plain_byte((unsigned char)name[k]) ? name[k] : '_');
	part[k] = '\0';
	return plain;
}

/*
 * The file name of the lock NAME under prefix on servers (as
 * url_list_label() says them) into buf: "redlock_", name_part(), '~'
 * (which a plain NAME never holds), and METRICS_ID_HEX hex digits of
 * the SHA-1 of NAME, prefix and servers, each ended by a NUL, then
 * ".prom".  Returns 0, or -1 when buf is too small.
 */
static int
metrics_file_name(const char *name, const char *prefix, const char *servers,
    char *buf, size_t len)
{
	size_t n = strlen(name), pl = strlen(prefix), sl = strlen(servers);
	char part[METRICS_PLAIN_MAX + 1], sha[41], *all;

	if ((all = malloc(n + pl + sl + 3)) == NULL)
		return -1;
	memcpy(all, name, n + 1);
	memcpy(all + n + 1, prefix, pl + 1);
	memcpy(all + n + pl + 2, servers, sl + 1);
	sha1_hex(all, n + pl + sl + 3, sha);
	free(all);
	name_part(name, part);
	return (size_t)snprintf(buf, len, "redlock_%s~%.*s.prom", part,
	    METRICS_ID_HEX, sha) < len ? 0 : -1;
}

/*
 * The name that redlock 0.3 gave NAME's file, into buf: it was keyed by
 * NAME alone, "redlock_NAME.prom" for a plain NAME, else name_part(),
 * '~' and METRICS_ID_HEX hex digits of the SHA-1 of NAME.  Such a file
 * is removed when NAME's own is written (metrics_write()): left, its
 * series would stay in every scrape, as they were when that version
 * last wrote them, and keep an alert on them firing.  Returns 0, or -1
 * when buf is too small.
 */
static int
metrics_old_file_name(const char *name, char *buf, size_t len)
{
	char part[METRICS_PLAIN_MAX + 1], sha[41];
	int w;

	if (name_part(name, part))
		w = snprintf(buf, len, "redlock_%s.prom", part);
	else {
		sha1_hex(name, strlen(name), sha);
		w = snprintf(buf, len, "redlock_%s~%.*s.prom", part,
		    METRICS_ID_HEX, sha);
	}
	return (size_t)w < len ? 0 : -1;
}

/* The value at the end of line (after its last blank), in ms when
 * scale is 1000; -1 when it is not a sane number. */
static double
line_value(const char *line, double scale)
{
	const char *v = strrchr(line, ' ');
	char *end;
	double d;

	if (v == NULL)
		return -1;
	d = strtod(v + 1, &end);
	if (end == v + 1 || *end != '\0' || !(d >= 0) || d > 1e15)
		return -1;
	return d * scale + (scale > 1 ? 0.5 : 0);
}

/* The outcome word of a line whose labels start with outcome="...". */
static int
line_outcome(const char *line)
{
	const char *w = strstr(line, "{outcome=\""), *q;

	if (w == NULL)
		return -1;
	w += 10;
	q = strchr(w, '"');
	return q != NULL ? outcome_parse(w, (size_t)(q - w)) : -1;
}

/* Take what one line of a previous file says into s. */
static void
parse_line(const char *line, struct state *s)
{
	static int64_t *const none = NULL;
	int64_t *ms[F_COUNT] = { none, &s->start_ms, &s->end_ms,
	    &s->success_ms, &s->run_ms, &s->wait_ms, none, none, none };
	size_t n = strcspn(line, "{ ");
	int f, o;
	double v;

	for (f = 0; f < F_COUNT; f++)
		if (strlen(families[f].name) == n &&
		    strncmp(line, families[f].name, n) == 0)
			break;
	/* redlock_running is not read back: the runners line says it. */
	if (f == F_COUNT || f == F_RUNNING ||
	    (v = line_value(line, ms[f] ? 1000 : 1)) < 0)
		return;
	if (ms[f] != NULL)
		*ms[f] = (int64_t)v;
	else if (f == F_EXIT && v <= 255)
		s->exit_status = (int)v;
	else if ((o = line_outcome(line)) < 0)
		return;
	else if (f == F_OUTCOME && v > 0)
		s->outcome = o;
	else if (f == F_RUNS)
		s->runs[o] = (unsigned long long)v;
}

/* Take the runners line's "PID:SINCE" words (after its first blank)
 * into s. */
static void
parse_runners(const char *line, struct state *s)
{
	const char *p = line + strlen(METRICS_RUNNERS_LINE);
	char *end;

	while (*p == ' ' && s->nrunners < METRICS_RUNNERS_MAX) {
		struct runner r;

		r.pid = (pid_t)strtol(p + 1, &end, 10);
		if (end == p + 1 || *end != ':' || r.pid <= 0)
			return;
		p = end + 1;
		r.since = strtoull(p, &end, 10);
		if (end == p)
			return;
		p = end;
		s->runners[s->nrunners++] = r;
	}
}

/*
 * Read the previous file at path into s (left empty if there is none,
 * or it is a symbolic link, which the rename replaces).  Returns 0, or
 * -1 when something other than a regular file is there: a FIFO or a
 * device, which a blocking open or read would wait on forever.
 */
static int
read_previous(const char *path, struct state *s)
{
	char *buf, *line, *save = NULL;
	ssize_t n = 0, r;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	memset(s, 0, sizeof(*s));
	s->outcome = -1;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	if ((buf = malloc(METRICS_READ_MAX + 1)) == NULL) {
		close(fd);
		return 0;
	}
	while (n < METRICS_READ_MAX &&
	    (r = read(fd, buf + n, (size_t)(METRICS_READ_MAX - n))) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#')
			parse_line(line, s);
		else if (strncmp(line, METRICS_RUNNERS_LINE " ",
		    sizeof(METRICS_RUNNERS_LINE)) == 0)
			parse_runners(line, s);
	free(buf);
	return 0;
}

/* Is r a process that still runs? */
static int
runner_alive(const struct runner *r)
{
	if (kill(r->pid, 0) < 0 && errno != EPERM)
		return 0;
	return r->since == 0 || tree_start_time(r->pid) == r->since;
}

/* Keep in s the runners still alive but this process, and add this
 * process when it starts its command (add). */
static void
runners_update(struct state *s, int add)
{
	pid_t self = getpid();
	int n = 0;

	for (int i = 0; i < s->nrunners; i++)
		if (s->runners[i].pid != self && runner_alive(&s->runners[i]))
			s->runners[n++] = s->runners[i];
	if (add && n < METRICS_RUNNERS_MAX)
		s->runners[n++] = (struct runner){ self,
		    tree_start_time(self) };
	s->nrunners = n;
}

/* Apply event e to s.  Another run of NAME on this host that still runs
 * its command keeps redlock_running at 1: the end of this one, or a
 * busy or timed-out attempt beside it, does not hide it. */
static void
apply(struct state *s, const struct metrics_event *e)
{
	runners_update(s, e->outcome < 0);
	if (e->outcome < 0) {
		s->start_ms = e->start_ms;
		return;
	}
	s->outcome = e->outcome;
	s->exit_status = e->exit_status;
	s->end_ms = e->end_ms;
	s->wait_ms = e->wait_ms;
	s->runs[e->outcome]++;
	if (e->ran) {
		s->start_ms = e->start_ms;
		s->run_ms = e->run_ms;
	}
	if (e->outcome == OUTCOME_OK)
		s->success_ms = e->end_ms;
}

/* Whose file it is: its labels. */
struct owner {
	const char *name, *prefix, *servers;
};

/* The sample of family f with the owner's labels (outcome first, when
 * outcome >= 0): the line up to its value. */
static void
sample(struct prom_buf *b, int f, const struct owner *w, int outcome)
{
	prom_printf(b, "%s{", families[f].name);
	if (outcome >= 0) {
		prom_label(b, "outcome", outcome_word(outcome),
		    strlen(outcome_word(outcome)));
		prom_add(b, ",", 1);
	}
	prom_label(b, "name", w->name, strlen(w->name));
	prom_add(b, ",", 1);
	prom_label(b, "prefix", w->prefix, strlen(w->prefix));
	prom_add(b, ",", 1);
	prom_label(b, "servers", w->servers, strlen(w->servers));
	prom_add(b, "} ", 2);
}

/* The file's text for owner w in state s. */
static void
render(struct prom_buf *b, const struct owner *w, const struct state *s)
{
	const int64_t ms[F_COUNT] = { 0, s->start_ms, s->end_ms, s->success_ms,
	    s->run_ms, s->wait_ms, 0, 0, 0 };

	prom_add(b, METRICS_RUNNERS_LINE, strlen(METRICS_RUNNERS_LINE));
	for (int i = 0; i < s->nrunners; i++)
		prom_printf(b, " %d:%llu", (int)s->runners[i].pid,
		    s->runners[i].since);
	prom_add(b, "\n", 1);
	for (int f = 0; f < F_COUNT; f++) {
		prom_header(b, &families[f]);
		if (f == F_RUNS) {
			for (int o = 0; o < OUTCOME_COUNT; o++) {
				sample(b, f, w, o);
				prom_printf(b, "%llu\n", s->runs[o]);
			}
			continue;
		}
		if (f == F_OUTCOME && s->outcome < 0)
			continue;
		sample(b, f, w, f == F_OUTCOME ? s->outcome : -1);
		if (f == F_RUNNING || f == F_OUTCOME)
			prom_printf(b, "%d\n", f == F_RUNNING ?
			    s->nrunners > 0 : 1);
		else if (f == F_EXIT)
			prom_printf(b, "%d\n", s->exit_status);
		else {
			prom_seconds(b, ms[f]);
			prom_add(b, "\n", 1);
		}
	}
}

/* Take the directory's lock within patience_ms, or until redlock is to
 * end (see metrics_write()); returns its descriptor (locked, *locked 1,
 * or after the wait not, *locked 0), or -1 when DIR cannot be opened. */
static int
lock_dir(const char *dir, int64_t patience_ms, const struct metrics_intr *in,
    int *locked)
{
	int64_t until = clock_ms() + patience_ms;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	struct pollfd p = { .fd = in != NULL ? in->fd : -1, .events = POLLIN };

	*locked = 0;
	if (fd < 0)
		return -1;
	while (!(*locked = flock(fd, LOCK_EX | LOCK_NB) == 0) &&
	    errno == EWOULDBLOCK && clock_ms() < until)
		if (poll(&p, 1, METRICS_LOCK_STEP_MS) > 0 && in != NULL &&
		    in->ends() != 0)
			break;
	return fd;
}

/* Write the n bytes at p to fd; 0, or -1 with errno set. */
static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write the n bytes at p to a new temporary file next to path and
 * rename it over path.  Returns 0, or -1 with errno set. */
static int
replace(const char *path, const char *p, size_t n)
{
	size_t pl = strlen(path), slash = pl;
	char *tmp = malloc(pl + 16);
	int fd, bad, e;

	if (tmp == NULL)
		return -1;
	while (slash > 0 && path[slash - 1] != '/')
		slash--;
	/* "DIR/.redlock_x.prom.XXXXXX": hidden, and not a .prom file. */
	snprintf(tmp, pl + 16, "%.*s.%s.XXXXXX", (int)slash, path, path + slash);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		free(tmp);
		return -1;
	}
	/* node_exporter reads the file as a user of its own. */
	bad = write_all(fd, p, n) < 0 || fchmod(fd, 0644) < 0;
	e = errno;
	if (close(fd) < 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (!bad && rename(tmp, path) < 0) {
		bad = 1;
		e = errno;
	}
	if (bad)
		unlink(tmp);
	free(tmp);
	errno = e;
	return bad ? -1 : 0;
}

/*
 * Record event e in the file of c's lock in c->metrics_dir, waiting at
 * most patience_ms for the other writers of the directory, and no longer
 * once in (NULL: none) says that redlock is to end: its fd readable and
 * its ends() nonzero.  Returns 0,
 * or -1 with the reason in err (the caller warns: a metrics failure
 * changes nothing else).
 */
int
metrics_write(const struct config *c, const struct metrics_event *e,
    int64_t patience_ms, const struct metrics_intr *in, char *err,
    size_t errlen)
{
	char file[METRICS_PLAIN_MAX + METRICS_ID_HEX + 16], servers[4096];
	char *path = NULL;
	struct owner w = { c->name, c->prefix, servers };
	struct prom_buf b = { 0 };
	struct state s;
	int dfd, rc = -1, locked;

	if (url_list_label(c->urls, c->nurls, servers, sizeof(servers)) < 0 ||
	    metrics_file_name(c->name, c->prefix, servers, file,
	    sizeof(file)) < 0 ||
	    (path = malloc(strlen(c->metrics_dir) + sizeof(file) + 2)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(path);
		return -1;
	}
	sprintf(path, "%s/%s", c->metrics_dir, file);
	if ((dfd = lock_dir(c->metrics_dir, patience_ms, in, &locked)) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		free(path);
		return -1;
	}
	/* A start that finds other writers busy is left out rather than
	 * written beside them: it could undo their counts.  The end, which
	 * counts the run, goes ahead after its longer wait. */
	if (!locked && e->outcome < 0)
		rc = 0;
	else if (read_previous(path, &s) < 0)
		snprintf(err, errlen, "%s is not a regular file", file);
	else {
		apply(&s, e);
		render(&b, &w, &s);
		if (b.oom)
			snprintf(err, errlen, "out of memory");
		else if (replace(path, b.p, b.len) < 0)
			snprintf(err, errlen, "%s", strerror(errno));
		else
			rc = 0;
	}
	/* Best effort: a file that cannot go is left as it was. */
	if (rc == 0 && metrics_old_file_name(c->name, file, sizeof(file)) == 0)
		(void)unlinkat(dfd, file, 0);
	close(dfd);
	prom_free(&b);
	free(path);
	return rc;
}
