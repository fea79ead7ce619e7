/*
 * tree.c - every process the command started, wherever it went.
 *
 * A process group is not enough: timeout(1), setsid, `set -m` scripts
 * and daemons leave it.  redlock is the subreaper of the command's
 * tree (PR_SET_CHILD_SUBREAPER), so while it lives every such process
 * descends from it: its parent chain in /proc leads back to redlock.
 * Once redlock is gone that chain is cut, so the guard also finds them
 * by the REDLOCK_TOKEN they inherited (tree_signal_marked()).
 */
#include "tree.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A bound on the processes looked at in one scan of /proc. */
#define TREE_MAX 65536

struct proc {
	pid_t pid, ppid, pgrp;
};

/* The fields of /proc/PID/stat from the 3rd (the state: "S ppid pgrp
 * ..."), read into buf of len bytes: the 2nd, the command's name, may
 * hold anything but ends at the last ')'.  NULL when it cannot be read. */
static const char *
stat_fields(const char *pid, char *buf, size_t len)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		return NULL;
	return p + 2;
}

/* The parent and process group of pid from /proc/pid/stat; returns the
 * parent, or -1. */
static pid_t
parent_of(const char *pid, pid_t *pgrp)
{
	char buf[512], *end;
	const char *f = stat_fields(pid, buf, sizeof(buf));
	pid_t ppid;

	if (f == NULL)
		return -1;
	ppid = (pid_t)strtol(f + 2, &end, 10);
	*pgrp = (pid_t)strtol(end, NULL, 10);
	return ppid;
}

/* Read every process's parent into *out; returns the count, or -1. */
static int
scan(struct proc **out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc *v;
	int n = 0, cap = 1024;

	if (d == NULL || (v = malloc(sizeof(*v) * (size_t)cap)) == NULL) {
		if (d != NULL)
			closedir(d);
		return -1;
	}
	while ((e = readdir(d)) != NULL && n < TREE_MAX) {
		pid_t pp, pg = 0;

		if (!isdigit((unsigned char)e->d_name[0]) ||
		    (pp = parent_of(e->d_name, &pg)) < 0)
			continue;
		if (n == cap) {
			struct proc *w = realloc(v, sizeof(*v) * (size_t)(cap *= 2));
			if (w == NULL)
				break;
			v = w;
		}
		v[n].pid = (pid_t)strtol(e->d_name, NULL, 10);
		v[n].pgrp = pg;
		v[n++].ppid = pp;
	}
	closedir(d);
	*out = v;
	return n;
}

static int
by_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Index of pid in v[0..n) sorted by pid, or -1. */
static int
find(const struct proc *v, int n, pid_t pid)
{
	struct proc key = { .pid = pid };
	const struct proc *f = bsearch(&key, v, (size_t)n, sizeof(*v), by_pid);

	return f != NULL ? (int)(f - v) : -1;
}

/*
 * Is v[i] below root and not below except?  state[] memoises: 0 not
 * known yet, 1 below root, 2 not.  The walk up is bounded by n steps
 * (pid reuse cannot make a cycle in one scan, but be safe).
 */
static int
below(const struct proc *v, int n, char *state, int i, pid_t root,
    pid_t except)
{
	int path[64], depth = 0, verdict = 2;

	for (int j = i, steps = 0; steps <= n; steps++) {
		if (state[j] != 0) {
			verdict = (unsigned char)state[j];
			break;
		}
		if (v[j].pid == except)
			break;
		if (depth < 64)
			path[depth++] = j;
		if (v[j].ppid == root) {
			verdict = 1;
			break;
		}
		if ((j = find(v, n, v[j].ppid)) < 0)
			break;
	}
	for (int k = 0; k < depth; k++)
		state[path[k]] = (char)verdict;
	return verdict == 1;
}

/*
 * Send sig to every descendant of root except the subtree of `except`
 * (the guard) and the members of process group `sent_pgrp` (0: none),
 * which the caller has signalled already: a process must not get one
 * signal twice, or a shell's trap runs twice.  Returns how many
 * processes it was sent to, or -1 when /proc could not be read.
 */
int
tree_signal(pid_t root, pid_t except, pid_t sent_pgrp, int sig)
{
	struct proc *v;
	int n = scan(&v), sent = 0;
	char *state;

	if (n < 0)
		return -1;
	if ((state = calloc((size_t)n + 1, 1)) == NULL) {
		free(v);
		return -1;
	}
	qsort(v, (size_t)n, sizeof(*v), by_pid);
	for (int i = 0; i < n; i++)
		if (below(v, n, state, i, root, except) &&
		    (sent_pgrp == 0 || v[i].pgrp != sent_pgrp) &&
		    kill(v[i].pid, sig) == 0)
			sent++;
	free(state);
	free(v);
	return sent;
}

/* Does /proc/pid/environ hold the string mark ("NAME=value")? */
static int
has_mark(const char *pid, const char *mark)
{
	char path[64], buf[8192];
	size_t ml = strlen(mark), have = 0;
	ssize_t n;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	while (!found && (n = read(fd, buf + have, sizeof(buf) - have - 1)) > 0) {
		char *s = buf, *end = buf + have + (size_t)n;

		*end = '\0';
		for (char *z; (z = memchr(s, '\0', (size_t)(end - s))) != NULL;
		    s = z + 1)
			if ((size_t)(z - s) == ml && memcmp(s, mark, ml) == 0)
				found = 1;
		/* Keep an unfinished entry for the next read. */
		have = (size_t)(end - s);
		if (have >= sizeof(buf) / 2)
			have = 0;
		memmove(buf, s, have);
	}
	close(fd);
	return found;
}

/* Send sig to every process whose environment holds mark, except
 * ourselves.  Returns how many. */
int
tree_signal_marked(const char *mark, int sig)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();
	int sent = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		pid_t pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = (pid_t)strtol(e->d_name, NULL, 10);
		if (pid != self && has_mark(e->d_name, mark) &&
		    kill(pid, sig) == 0)
			sent++;
	}
	closedir(d);
	return sent;
}

/* When pid started, in clock ticks since boot (the 22nd field of
 * /proc/pid/stat), or 0 when that cannot be read: with the pid, it
 * names a process that a later one reusing the pid is not. */
unsigned long long
tree_start_time(pid_t pid)
{
	char id[16], buf[512];
	const char *f;

	snprintf(id, sizeof(id), "%d", (int)pid);
	f = stat_fields(id, buf, sizeof(buf));
	for (int field = 3; field < 22 && f != NULL; field++)
		if ((f = strchr(f, ' ')) != NULL)
			f++;
	return f != NULL ? strtoull(f, NULL, 10) : 0;
}
