/*
 * metrics.c - the textfile that node_exporter's textfile collector
 * reads: one file per NAME in --metrics-dir, DIR/redlock_<NAME>.prom,
 * written when the command starts (redlock_running 1) and at the end
 * of every run-form invocation, whatever its outcome.
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

/* A NAME longer than this, or with other bytes than [A-Za-z0-9_.-],
 * is written as a readable part this long and a hash of the whole. */
#define METRICS_PLAIN_MAX 100
#define METRICS_PART_MAX 48

/* The previous file is read up to this size: ours are about 3 KiB. */
#define METRICS_READ_MAX 65536

/* How long a writer sleeps between two tries of the directory lock. */
#define METRICS_LOCK_STEP_MS 2

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

/* What a file says. */
struct state {
	int running;
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

/*
 * The file name of NAME into buf: "redlock_NAME.prom" when NAME is
 * short and made of [A-Za-z0-9_.-]; otherwise its first bytes with the
 * others as '_', then '~' (which a plain name never holds) and 16 hex
 * digits of NAME's SHA-1, so that two NAMEs never share a file.
 * Returns 0, or -1 when buf is too small.
 */
int
metrics_file_name(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name), k;
	char part[METRICS_PART_MAX + 1], sha[41];

	if (n <= METRICS_PLAIN_MAX && strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n)
		return (size_t)snprintf(buf, len, "redlock_%s.prom", name) < len ?
		    0 : -1;
	for (k = 0; k < METRICS_PART_MAX && name[k] != '\0'; k++)
		part[k] = (char)(plain_byte((unsigned char)name[k]) ? name[k] : '_');
	part[k] = '\0';
	sha1_hex(name, n, sha);
	return (size_t)snprintf(buf, len, "redlock_%s~%.16s.prom", part, sha) <
	    len ? 0 : -1;
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
	if (f == F_COUNT || (v = line_value(line, ms[f] ? 1000 : 1)) < 0)
		return;
	if (ms[f] != NULL)
		*ms[f] = (int64_t)v;
	else if (f == F_EXIT && v <= 255)
		s->exit_status = (int)v;
	else if (f == F_RUNNING)
		s->running = v > 0;
	else if ((o = line_outcome(line)) < 0)
		return;
	else if (f == F_OUTCOME && v > 0)
		s->outcome = o;
	else if (f == F_RUNS)
		s->runs[o] = (unsigned long long)v;
}

/* Read the previous file at path into s (left empty if there is none). */
static void
read_previous(const char *path, struct state *s)
{
	char *buf = malloc(METRICS_READ_MAX + 1), *line, *save = NULL;
	ssize_t n = 0, r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	memset(s, 0, sizeof(*s));
	s->outcome = -1;
	if (fd < 0 || buf == NULL) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return;
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
	free(buf);
}

/* Apply event e to s. */
static void
apply(struct state *s, const struct metrics_event *e)
{
	if (e->outcome < 0) {
		s->running = 1;
		s->start_ms = e->start_ms;
		return;
	}
	s->running = 0;
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

/* The sample of family f with NAME's label: the line up to its value. */
static void
sample(struct prom_buf *b, int f, const char *name, int outcome)
{
	prom_printf(b, "%s{", families[f].name);
	if (outcome >= 0) {
		prom_label(b, "outcome", outcome_word(outcome),
		    strlen(outcome_word(outcome)));
		prom_add(b, ",", 1);
	}
	prom_label(b, "name", name, strlen(name));
	prom_add(b, "} ", 2);
}

/* The file's text for NAME in state s. */
static void
render(struct prom_buf *b, const char *name, const struct state *s)
{
	const int64_t ms[F_COUNT] = { 0, s->start_ms, s->end_ms, s->success_ms,
	    s->run_ms, s->wait_ms, 0, 0, 0 };

	for (int f = 0; f < F_COUNT; f++) {
		prom_header(b, &families[f]);
		if (f == F_RUNS) {
			for (int o = 0; o < OUTCOME_COUNT; o++) {
				sample(b, f, name, o);
				prom_printf(b, "%llu\n", s->runs[o]);
			}
			continue;
		}
		if (f == F_OUTCOME && s->outcome < 0)
			continue;
		sample(b, f, name, f == F_OUTCOME ? s->outcome : -1);
		if (f == F_RUNNING || f == F_OUTCOME)
			prom_printf(b, "%d\n", f == F_RUNNING ? s->running : 1);
		else if (f == F_EXIT)
			prom_printf(b, "%d\n", s->exit_status);
		else {
			prom_seconds(b, ms[f]);
			prom_add(b, "\n", 1);
		}
	}
}

/* Take the directory's lock within patience_ms; returns its descriptor
 * (locked, *locked 1, or after the wait not, *locked 0), or -1 when DIR
 * cannot be opened. */
static int
lock_dir(const char *dir, int64_t patience_ms, int *locked)
{
	int64_t until = clock_ms() + patience_ms;
	struct timespec step = { 0, METRICS_LOCK_STEP_MS * 1000000L };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*locked = 0;
	if (fd < 0)
		return -1;
	while (!(*locked = flock(fd, LOCK_EX | LOCK_NB) == 0) &&
	    errno == EWOULDBLOCK && clock_ms() < until)
		nanosleep(&step, NULL);
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
 * Record event e in NAME's file in dir, waiting at most patience_ms
 * for the other writers of dir.  Returns 0, or -1 with the reason in
 * err (the caller warns: a metrics failure changes nothing else).
 */
int
metrics_write(const char *dir, const char *name,
    const struct metrics_event *e, int64_t patience_ms, char *err,
    size_t errlen)
{
	char file[METRICS_PLAIN_MAX + 16], *path;
	struct prom_buf b = { 0 };
	struct state s;
	int dfd, rc = -1, locked;

	if (metrics_file_name(name, file, sizeof(file)) < 0 ||
	    (path = malloc(strlen(dir) + sizeof(file) + 2)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sprintf(path, "%s/%s", dir, file);
	if ((dfd = lock_dir(dir, patience_ms, &locked)) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		free(path);
		return -1;
	}
	/* A start that finds other writers busy is left out rather than
	 * written beside them: it could undo their counts.  The end, which
	 * counts the run, goes ahead after its longer wait. */
	if (!locked && e->outcome < 0) {
		close(dfd);
		free(path);
		return 0;
	}
	read_previous(path, &s);
	apply(&s, e);
	render(&b, name, &s);
	if (b.oom)
		snprintf(err, errlen, "out of memory");
	else if (replace(path, b.p, b.len) < 0)
		snprintf(err, errlen, "%s", strerror(errno));
	else
		rc = 0;
	close(dfd);
	prom_free(&b);
	free(path);
	return rc;
}
