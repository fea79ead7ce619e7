/*
 * renew.c - the renewal thread.  While the command runs it owns the
 * lock's connections (one a server: a holder never needs a second
 * connection, so a server near maxclients cannot take a running lock
 * away), and extends the lease every ttl/3.  It never decides anything
 * about the command: it publishes when the last successful renewal was
 * sent, whether the lock is definitely lost, and whether a renewal
 * brought an operator's request to stop (redlock stop), and main acts
 * on that.
 *
 * The lease is provably ours until the send time of the last renewal a
 * quorum confirmed, plus ttl, minus drift; a late reply never moves it
 * further.  Failed renewals are retried, reconnecting, with per-command
 * timeouts well under ttl/3, until main stops the thread.
 */
#include "renew.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cluster.h"
#include "guard.h"
#include "hold.h"
#include "lease.h"
#include "log.h"
#include "sig.h"

struct renew {
	const struct lock *lock;
	char token[LOCK_TOKEN_LEN + 1];	/* the grant's */
	pthread_t thread;
	pthread_mutex_t mu;
	int stop_fd[2];		/* main writes to [1] to stop the thread */
	int notify_fd;		/* main's self-pipe: SIG_EVENT on loss */
	int guard_fd;		/* the guard's pipe, or -1 */
	int64_t sent;		/* guarded by mu */
	int lost;		/* guarded by mu */
	int stop;		/* guarded by mu: redlock stop asked us */
	char why[384];		/* guarded by mu */
};

/* Sleep until clock_ms() reaches t or main asks us to stop (returns 1).
 * The request is looked at even when t has passed: a round that takes
 * longer than the renewal interval (a quorum's short TTL, a server
 * that does not answer) must not keep main waiting for ever. */
static int
sleep_until(struct renew *r, int64_t t)
{
	for (;;) {
		int64_t left = t - clock_ms();
		struct pollfd p = { .fd = r->stop_fd[0], .events = POLLIN };

		if (poll(&p, 1, left <= 0 ? 0 : left > 1000 ? 1000 :
		    (int)left) > 0)
			return 1;
		if (left <= 0)
			return 0;
	}
}

/* Publish a renewal that carried a request to stop, once. */
static void
renew_asked_to_stop(struct renew *r)
{
	int first;

	pthread_mutex_lock(&r->mu);
	first = !r->stop;
	r->stop = 1;
	pthread_mutex_unlock(&r->mu);
	if (first) {
		unsigned char event = SIG_EVENT;
		(void)!write(r->notify_fd, &event, 1);
	}
}

/* Publish a failure: the reason, and whether the lock is gone. */
static void
renew_failed(struct renew *r, int lost, const char *why)
{
	pthread_mutex_lock(&r->mu);
	r->lost = lost;
	snprintf(r->why, sizeof(r->why), "%s", why);
	pthread_mutex_unlock(&r->mu);
	if (lost) {
		unsigned char event = SIG_EVENT;
		(void)!write(r->notify_fd, &event, 1);
	}
}

static void *
renew_main(void *arg)
{
	struct renew *r = arg;
	const struct lock *l = r->lock;
	int64_t every = lease_renew_every(l->ttl), next, timeout, retry;
	int64_t record_end;
	int failing = 0;

	timeout = lease_op_timeout(l->n, l->ttl);
	retry = lease_renew_retry(l->ttl);
	pthread_mutex_lock(&r->mu);
	next = r->sent + every;
	record_end = r->sent + l->ttl;	/* a grant's record lives one TTL */
	pthread_mutex_unlock(&r->mu);
	while (!sleep_until(r, next)) {
		struct lock_outcome o = { 0 };
		int64_t sent = clock_ms();
		/* The record must outlive the lease this renewal may give,
		 * which ends at the latest ttl after its reply; with
		 * --lock-delay by exactly the delay, so every renewal sets
		 * it (proto.c). */
		int64_t record_ms = l->policy.delay > 0 ||
		    sent + timeout + l->ttl >= record_end ? lock_record_ms(l) : 0;
		int lost, ok = lock_renew(l, r->token, sent + timeout,
		    record_ms, &lost, &o);

		if (ok >= l->quorum) {
			if (record_ms > 0)
				record_end = sent + record_ms;
			pthread_mutex_lock(&r->mu);
			r->sent = sent;
			pthread_mutex_unlock(&r->mu);
			guard_lease(r->guard_fd, lock_lease_end(l, sent));
			if (o.stop)
				renew_asked_to_stop(r);
			if (failing)
				log_info("renewed lock again");
			failing = 0;
			next = sent + every;
			continue;
		}
		renew_failed(r, lost, o.err);
		if (lost)
			break;
		if (failing++ == 1)
			log_error("cannot renew the lock (retrying): %s", o.err);
		/* The first retry is immediate: a connection the server closed
		 * while idle (timeout, CLIENT KILL) just needs reopening. */
		next = clock_ms() + (failing > 1 ? retry + clock_jitter(retry / 4) : 0);
	}
	return NULL;
}

/*
 * Start renewing grant g of l, whose last grant or renewal was sent at
 * g->sent_at,
 * telling each new lease end to the guard on guard_fd (-1: none).  The
 * thread uses l's connections until renew_stop(); it blocks every
 * signal, so that handlers run in the main thread.  Returns NULL on
 * failure (errno set).
 */
struct renew *
renew_start(const struct lock *l, const struct grant *g, int notify_fd,
    int guard_fd)
{
	struct renew *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int rc;

	if (r == NULL)
		return NULL;
	/* A holder that renews learns its cluster's nodes, to fail over
	 * to if the node it uses dies (cluster.c). */
	for (int i = 0; i < l->n; i++)
		cluster_watch(&l->conns[i]);
	r->lock = l;
	memcpy(r->token, g->token, sizeof(r->token));
	r->notify_fd = notify_fd;
	r->guard_fd = guard_fd;
	r->sent = g->sent_at;
	if (pipe2(r->stop_fd, O_CLOEXEC) < 0) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->thread, NULL, renew_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		close(r->stop_fd[0]);
		close(r->stop_fd[1]);
		pthread_mutex_destroy(&r->mu);
		free(r);
		errno = rc;
		return NULL;
	}
	return r;
}

/* When the lease ends for sure, from the last confirmed send. */
int64_t
renew_lease_end(struct renew *r)
{
	int64_t sent;

	pthread_mutex_lock(&r->mu);
	sent = r->sent;
	pthread_mutex_unlock(&r->mu);
	return lock_lease_end(r->lock, sent);
}

/* Has a renewal found the lock gone?  Copies the last failure's reason. */
int
renew_lost(struct renew *r, char *why, size_t len)
{
	int lost;

	pthread_mutex_lock(&r->mu);
	lost = r->lost;
	snprintf(why, len, "%s", r->why);
	pthread_mutex_unlock(&r->mu);
	return lost;
}

/* Has a renewal brought a request to stop (redlock stop)? */
int
renew_stop_asked(struct renew *r)
{
	int stop;

	pthread_mutex_lock(&r->mu);
	stop = r->stop;
	pthread_mutex_unlock(&r->mu);
	return stop;
}

/* Stop the thread, wait for it, and free everything; the connections
 * are the caller's again.  Returns when the last confirmed renewal was
 * sent (0 for NULL). */
int64_t
renew_stop(struct renew *r)
{
	int64_t sent;

	if (r == NULL)
		return 0;
	(void)!write(r->stop_fd[1], "", 1);
	pthread_join(r->thread, NULL);
	sent = r->sent;
	close(r->stop_fd[0]);
	close(r->stop_fd[1]);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return sent;
}
