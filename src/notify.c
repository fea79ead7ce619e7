/*
 * notify.c - the run form's account to systemd.  When NOTIFY_SOCKET
 * names a unix datagram socket (a path, or '@' for the abstract
 * namespace), redlock sends the sd_notify messages a Type=notify
 * service sends: STATUS= while it waits, naming the holder;
 * EXTEND_TIMEOUT_USEC= so that a wait is not cut short by the unit's
 * start timeout (before READY=1 only); READY=1 and the command's
 * STATUS= once the lock is held and the command started; STOPPING=1 once, when redlock is about to
 * end (before the release of its last run).  READY=1 and STOPPING=1 are
 * the service's start and end, each sent once (sd_notify(3)): a
 * --respawn standby's later rounds send only STATUS=, and its pause
 * between rounds says what it waits for; STOPPING=1 between rounds would
 * have systemd stop the unit.  Without NOTIFY_SOCKET every function here
 * returns at once.
 *
 * The readiness systemd sees is redlock's: NOTIFY_SOCKET is taken out
 * of the environment, so the command (a Type=notify daemon, a nested
 * redlock) cannot send a READY=1, STOPPING=1 or MAINPID= of its own that
 * would contradict ours; under systemd's default NotifyAccess=main it
 * would be ignored anyway.
 */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "clock.h"
#include "inspect.h"
#include "log.h"
#include "print.h"

/* A waiter's message buys it this much time beyond the unit's start
 * timeout, and is sent again every NOTIFY_EXTEND_EVERY_MS: a third of
 * it, so that a late round or a lost datagram still leaves a margin. */
#define NOTIFY_EXTEND_MS 30000
#define NOTIFY_EXTEND_EVERY_MS 10000

/* How often a waiter asks the servers who holds the lock: a new holder
 * shows in the unit's status within this long, at the cost of one
 * round trip (only with NOTIFY_SOCKET set). */
#define NOTIFY_HOLDER_EVERY_MS 2000

/* The longest message; escaped names and commands are cut to fit. */
#define NOTIFY_MSG_MAX 2048

static struct {
	int fd;				/* -1: not speaking to systemd */
	struct sockaddr_un addr;
	socklen_t addrlen;
	int64_t extend_at, holder_at;	/* clock_ms() of the next ones */
	int ready, stopping;		/* READY=1, STOPPING=1 were sent */
	int warned;			/* a send failed, and we said so */
	char status[NOTIFY_MSG_MAX];	/* the last STATUS= sent */
	char holder[NOTIFY_MSG_MAX / 2];	/* holder_status()'s last */
} notify = { .fd = -1 };

/*
 * Take NOTIFY_SOCKET from the environment (the command does not inherit
 * it: see the top of this file) and open a socket to it.  An address
 * that is not a unix socket's (systemd's vsock:, a path too long) is
 * ignored, with a note under -v.
 */
void
notify_init(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	size_t n;

	if (s == NULL)
		return;
	n = strlen(s);
	if ((s[0] == '/' || s[0] == '@') && n >= 2 &&
	    n < sizeof(notify.addr.sun_path)) {
		notify.addr.sun_family = AF_UNIX;
		memcpy(notify.addr.sun_path, s, n);
		if (s[0] == '@')
			notify.addr.sun_path[0] = '\0';
		/* An abstract name is exactly its bytes; a path ends in NUL. */
		notify.addrlen = (socklen_t)(offsetof(struct sockaddr_un,
		    sun_path) + n + (s[0] == '/'));
		notify.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	if (notify.fd < 0)
		log_info("not notifying systemd: cannot use NOTIFY_SOCKET");
	unsetenv("NOTIFY_SOCKET");
}

/* Send one datagram of newline-separated assignments, never waiting: a
 * listener that does not read (its queue full) must not hold up the
 * run, its renewals or its signals.  The first failure is one warning;
 * the rest are dropped as quietly. */
static void
notify_send(const char *msg)
{
	if (sendto(notify.fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT,
	    (const struct sockaddr *)&notify.addr, notify.addrlen) >= 0 ||
	    notify.warned)
		return;
	notify.warned = 1;
	log_error("cannot notify systemd through NOTIFY_SOCKET: %s",
	    strerror(errno));
}

/* " user@host pid N since TIME" of a holder's record, escaped. */
static void
holder_words(const struct lock_meta *m, char *buf, size_t len)
{
	char user[sizeof(m->user) * 4], host[sizeof(m->host) * 4], since[32];

	print_time(m->start_ms, since, sizeof(since));
	snprintf(buf, len, " %s@%s pid %ld since %s",
	    print_escape(m->user, user, sizeof(user)),
	    print_escape(m->host, host, sizeof(host)), m->pid, since);
}

/* Who holds l, as the servers say (as `redlock status` asks them), in a
 * few words for the unit's status (len at least 128); for a free lock
 * held back, what holds it back, in status's words; "" when they do
 * not agree on a holder and hold nothing back. */
static void
holder_status(const struct lock *l, char *buf, size_t len)
{
	struct lock_view v[l->n];
	struct lock_outcome o = { 0 };
	const struct lock_view *h = NULL, *first;
	char why[128] = "";
	int n = 0;

	if (inspect_lock(l, v, 0, &o) >= l->quorum &&
	    (h = inspect_agreed(l, v)) == NULL) {
		struct lock_sched s = inspect_sched(l, v);

		inspect_hold_words(&s, why, sizeof(why));
	}
	first = h != NULL && h->shared && h->nholders > 0 ? &h->holders[0] : h;
	buf[0] = '\0';
	if (why[0] != '\0')
		snprintf(buf, len, ": %s", why);
	else if (h != NULL && h->shared)
		n = snprintf(buf, len, ": held shared by %d holder%s%s",
		    h->nholders, h->nholders == 1 ? "" : "s",
		    first != h && first->has_meta ? ", first" : "");
	else if (h != NULL)
		n = snprintf(buf, len, ": held by%s", h->has_meta ? "" :
		    " another client (no holder record)");
	if (first != NULL && first->has_meta)
		holder_words(&first->meta, buf + n, len - (size_t)n);
	inspect_views_free(v, l->n);
}

/*
 * One round of a wait (wait.c, through monitor.c), before it sleeps: res
 * is the attempt's result and o what it learned.  Says who holds the
 * lock when that may have changed, and extends the unit's start timeout
 * when the last extension is a third used.
 *
 * What the attempt learned words the status where it can: a failure's
 * o->err, a --fair waiter's o->fair_pos.  A busy lock's holder takes a
 * round of its own (holder_status(), at most every
 * NOTIFY_HOLDER_EVERY_MS): an attempt that finds NAME taken learns only
 * how long it stays so (o->busy_pttl, o->hold_ms), not who holds it or,
 * for a free NAME held back, whether a --lock-delay or a --replace
 * claim does; having every busy attempt of every waiter carry the
 * holder record back would cost them all for what only a waiter under
 * systemd reads.
 */
void
notify_waiting(const struct lock *l, enum lock_result res,
    const struct lock_outcome *o)
{
	char msg[NOTIFY_MSG_MAX], name[512], why[NOTIFY_MSG_MAX / 2];
	char err[sizeof(o->err) * 4];
	int64_t now;

	if (notify.fd < 0)
		return;
	now = clock_ms();
	if (res != LOCK_BUSY || now >= notify.holder_at || o->fair_pos > 0) {
		if (res == LOCK_BUSY && now >= notify.holder_at) {
			holder_status(l, notify.holder, sizeof(notify.holder));
			notify.holder_at = now + NOTIFY_HOLDER_EVERY_MS;
		}
		if (res == LOCK_BUSY && o->fair_pos > 0)
			/* --fair: the holder, and the place in the queue,
			 * which changes as the waiters ahead are served. */
			snprintf(why, sizeof(why), "%s%s position %d in the "
			    "queue", notify.holder, notify.holder[0] ? ";" : ":",
			    o->fair_pos);
		else if (res == LOCK_BUSY)
			snprintf(why, sizeof(why), "%s", notify.holder);
		else
			snprintf(why, sizeof(why), ": retrying: %s",
			    o->err[0] ? print_escape(o->err, err, sizeof(err)) :
			    "the servers did not answer");
		snprintf(msg, sizeof(msg), "STATUS=waiting for lock '%s'%s",
		    print_escape(l->name, name, sizeof(name)), why);
		if (strcmp(msg, notify.status) != 0) {
			notify_send(msg);
			memcpy(notify.status, msg, sizeof(msg));
		}
	}
	/* Only while the unit starts: once READY=1 is sent (a --respawn
	 * standby's later rounds) it would extend RuntimeMaxSec= instead. */
	if (!notify.ready && now >= notify.extend_at) {
		snprintf(msg, sizeof(msg), "EXTEND_TIMEOUT_USEC=%lld",
		    (long long)NOTIFY_EXTEND_MS * 1000);
		notify_send(msg);
		notify.extend_at = now + NOTIFY_EXTEND_EVERY_MS;
	}
}

/* The lock is held and its command started: the unit is ready (READY=1
 * the first time only: a standby's later rounds change the status). */
void
notify_running(const struct lock *l)
{
	char msg[NOTIFY_MSG_MAX], name[512], cmd[NOTIFY_MSG_MAX / 2];

	if (notify.fd < 0)
		return;
	snprintf(msg, sizeof(msg), "%sSTATUS=holding lock '%s'%s, "
	    "running %s", notify.ready ? "" : "READY=1\n",
	    print_escape(l->name, name, sizeof(name)),
	    l->policy.shared ? " shared" : "",
	    print_escape(l->meta.cmd, cmd, sizeof(cmd)));
	notify_send(msg);
	memcpy(notify.status, msg, sizeof(msg));
	notify.ready = 1;
}

/* A --respawn round ended with status code: the standby pauses for
 * pause_ms before it campaigns again. */
void
notify_pausing(const struct lock *l, int round, int code, int64_t pause_ms)
{
	char msg[NOTIFY_MSG_MAX], name[512];

	if (notify.fd < 0)
		return;
	snprintf(msg, sizeof(msg), "STATUS=standby for lock '%s': round %d "
	    "ended with status %d; campaigning again in %lld ms",
	    print_escape(l->name, name, sizeof(name)), round, code,
	    (long long)pause_ms);
	notify_send(msg);
	memcpy(notify.status, msg, sizeof(msg));
}

/* redlock is about to end, after a run that was READY=1: the unit is
 * stopping.  Sent once. */
void
notify_stopping(void)
{
	if (notify.fd >= 0 && notify.ready && !notify.stopping)
		notify_send("STOPPING=1");
	notify.stopping = 1;
}
