/*
 * verbs.c - taking and clearing locks by hand (the verbs in redlock(1)):
 * acquire, release, extend, break.  stdout carries the answer (a token
 * or assignments); diagnostics go to stderr through log.c.  status and
 * list are in status.c, stop in stop.c.
 */
#include "verbs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exit.h"
#include "hold.h"
#include "holder.h"
#include "inspect.h"
#include "log.h"
#include "print.h"
#include "refused.h"
#include "runs.h"
#include "sig.h"
#include "status.h"
#include "stop.h"
#include "wait.h"

/* Why what was printed on stdout did not get out, or 0: stdout was
 * closed when we started (what we wrote went nowhere), or the flush
 * failed (full, a closed pipe). */
static int
stdout_failed(void)
{
	if (sig_std_was_closed(STDOUT_FILENO))
		return EBADF;
	if (fflush(stdout) != 0 || ferror(stdout))
		return errno != 0 ? errno : EIO;
	return 0;
}

/* Print what acquire promises on stdout, of grant g; returns 0, or -1
 * when it could not be written (stdout closed, full, or a closed
 * pipe). */
static int
acquire_output(const struct config *c, const struct lock *l,
    const struct grant *g)
{
	if (sig_std_was_closed(STDOUT_FILENO))
		return -1;
	if (!c->env)
		printf("%s\n", g->token);
	else {
		fputs("REDLOCK_NAME=", stdout);
		print_shell(l->name);
		fputs("\nREDLOCK_KEY=", stdout);
		print_shell(l->k.key);
		printf("\nREDLOCK_TOKEN=%s\nREDLOCK_FENCE=%lld\n", g->token,
		    g->fence);
		puts("export REDLOCK_NAME REDLOCK_KEY REDLOCK_TOKEN REDLOCK_FENCE");
	}
	return stdout_failed() == 0 ? 0 : -1;
}

/* The holder that acquire records (lock_setup()): the shell (or
 * script) that ran us. */
void
verbs_holder(const struct config *c, struct lock_meta *m)
{
	holder_meta(m, (long)getppid());
	if (c->label != NULL)
		holder_command(m, c->label, NULL, NULL, 0);
	else
		snprintf(m->cmd, sizeof(m->cmd), "(acquire)");
}

/* acquire: take the lock and hand its token over; a token that cannot
 * be handed over would hold the lock for nobody, so it is released. */
static int
verb_acquire(const struct config *c, const struct lock *l, int *die_by)
{
	struct lock_outcome o = { 0 };
	struct grant g = { .fence = 0 };
	enum lock_result res;
	int others;

	res = wait_acquire(l, &(struct wait_req){ .wait = c->wait,
	    .since = c->started, .claim = c->replace, .intr_fd = sig_fd() },
	    &g, &o);
	if (res != LOCK_HELD && res != LOCK_REENTRANT)
		return refused_report(c, l, res, &o, die_by);
	if (acquire_output(c, l, &g) == 0) {
		log_info("acquired lock '%s'%s (fence %lld)%s", c->name,
		    l->policy.shared ? " shared" : "", g.fence,
		    res == LOCK_REENTRANT ? ", held by a parent redlock" : "");
		return 0;
	}
	if (res == LOCK_HELD && lock_release(l, &(struct release){
	    .token = g.token }, &others, &o) >= l->quorum)
		log_error("cannot write the token of lock '%s' to stdout; "
		    "released it", c->name);
	else if (res == LOCK_HELD)
		log_error("cannot write the token of lock '%s' to stdout, nor "
		    "release it (%s): it stays held until its TTL runs out",
		    c->name, o.err[0] ? o.err : "not held any more");
	else
		log_error("cannot write the token of lock '%s' to stdout; the "
		    "lock stays with the enclosing redlock", c->name);
	return EXIT_IOERR;
}

/* Say who holds the lock now, after release or extend was refused. */
static void
say_holder(const struct config *c, const struct lock *l, const char *verb)
{
	struct lock_view v[l->n];
	struct lock_outcome o = { 0 };
	char user[128], host[512];
	int held = 0, shared = 0;

	inspect_lock(l, v, 0, &o);
	for (int i = 0; i < l->n; i++) {
		if (!v[i].held)
			continue;
		held = 1;
		if (v[i].shared && shared < v[i].nholders)
			shared = v[i].nholders;
		if (v[i].has_meta) {
			log_error("cannot %s lock '%s': it is held by %s@%s pid %ld "
			    "(fence %lld), not by this token", verb, c->name,
			    print_escape(v[i].meta.user, user, sizeof(user)),
			    print_escape(v[i].meta.host, host, sizeof(host)),
			    v[i].meta.pid, v[i].fence);
			inspect_views_free(v, l->n);
			return;
		}
	}
	inspect_views_free(v, l->n);
	if (shared > 0)
		log_error("cannot %s lock '%s': it is held shared by %d "
		    "holder%s, none of them this token", verb, c->name, shared,
		    shared == 1 ? "" : "s");
	else
		log_error("cannot %s lock '%s': %s", verb, c->name, held ?
		    "it is held by another token" : "it is not held");
}

/* Does token hold the lock on a quorum of its servers (as its value,
 * or as one of its shared holders)?  Asks them; 0 when they cannot
 * say. */
static int
token_holds(const struct lock *l, const char *token)
{
	struct lock_view v[l->n];
	struct lock_outcome o = { 0 };
	int yes = 0;

	inspect_lock(l, v, 0, &o);
	for (int i = 0; i < l->n; i++) {
		int h = v[i].held && !v[i].shared &&
		    strcmp(v[i].token, token) == 0;

		for (int j = 0; v[i].held && v[i].shared && j < v[i].nholders;
		    j++)
			h |= strcmp(v[i].holders[j].token, token) == 0;
		yes += h;
	}
	inspect_views_free(v, l->n);
	return yes >= l->quorum;
}

/* release and extend: act only if TOKEN holds the lock. */
static int
verb_token(const struct config *c, const struct lock *l, int extend)
{
	struct lock_outcome o = { 0 };
	int others, ok;

	/* A token inherited from an enclosing redlock (re-entrance) that
	 * holds this lock is that redlock's: it renews the lock while its
	 * command runs and releases it when the command is done, so a
	 * release or an extend leaves it alone (an extend could only cut
	 * the lease that redlock counts on).  An inherited token that does
	 * not hold this lock is any other token. */
	if (holder_inherited(l->policy.held, c->token) &&
	    token_holds(l, c->token)) {
		log_info("lock '%s' is held by an enclosing redlock, which "
		    "renews and releases it", c->name);
		return 0;
	}
	ok = extend ? lock_extend(l, c->token, &others, &o) :
	    lock_release(l, &(struct release){ .token = c->token }, &others,
	    &o);
	if (ok >= l->quorum && o.stop)
		log_error("lock '%s': redlock stop asked this holder to stop; "
		    "release it when you can", c->name);
	if (ok >= l->quorum) {
		log_info("%s lock '%s'", extend ? "extended" : "released",
		    c->name);
		return 0;
	}
	/* A majority that said "not this token" is an answer, whatever a
	 * minority did. */
	if (o.err[0] != '\0' && o.answered < l->quorum) {
		log_error("%s", o.err);
		return EXIT_UNAVAILABLE;
	}
	say_holder(c, l, extend ? "extend" : "release");
	return c->conflict_exit;
}

/* Say what break removed. */
static void
say_removed(const struct config *c, const struct lock_view *h)
{
	char user[128], host[512];

	if (h->shared)
		log_error("removed lock '%s' held shared by %d holder%s",
		    c->name, h->nholders, h->nholders == 1 ? "" : "s");
	else if (h->has_meta)
		log_error("removed lock '%s' held by %s@%s pid %ld (fence %lld)",
		    c->name, print_escape(h->meta.user, user, sizeof(user)),
		    print_escape(h->meta.host, host, sizeof(host)), h->meta.pid,
		    h->fence);
	else
		log_error("removed lock '%s' held by another client", c->name);
}

/* break: remove the lock whoever holds it (every shared holder) and,
 * with --fence, its fencing counter. */
static int
verb_break(const struct config *c, const struct lock *l)
{
	struct lock_view v[l->n];
	struct lock_outcome o = { 0 };
	const struct lock_view *h = NULL;
	int answered = inspect_lock(l, v, 1, &o), forgot = 0, code;

	for (int i = 0; i < l->n; i++)
		if (v[i].held && (h == NULL || (!h->has_meta && v[i].has_meta)))
			h = &v[i];
	if (h == NULL && answered < l->quorum)
		forgot = -1;
	else if (c->fence)
		forgot = inspect_forget_fence(l, &o);
	if (forgot < 0) {
		log_error("%s", o.err);
		code = EXIT_UNAVAILABLE;
	} else {
		if (forgot > 0)
			log_error("removed the fencing counter of lock '%s'",
			    c->name);
		struct lock_sched held_back = inspect_sched(l, v);
		int lifted = h == NULL &&
		    (held_back.delay_ms > 0 || held_back.claim_ms > 0);

		if (h != NULL)
			say_removed(c, h);
		else if (lifted)
			log_error("removed what held free lock '%s' back (%s)",
			    c->name, held_back.delay_ms > 0 ? "a lock-delay" :
			    "a --replace claim");
		else
			log_error("lock '%s' was not held", c->name);
		code = h != NULL || forgot > 0 || lifted ? 0 : EXIT_NOT_HELD;
		/* What a minority held is gone; what the others hold may not
		 * be: that is no success. */
		if (answered < l->quorum) {
			log_error("lock '%s' may still be held: %s", c->name,
			    o.err[0] ? o.err : "no quorum of servers answered");
			code = EXIT_UNAVAILABLE;
		}
	}
	inspect_views_free(v, l->n);
	return code;
}

/*
 * The status of a verb whose output is the point (status, list, runs): 74
 * with a message when it could not be written (stdout closed at start,
 * full, a broken pipe), as acquire does; else code.
 */
static int
output_written(const struct config *c, int code)
{
	int err;

	if (code == EXIT_USAGE || code == EXIT_UNAVAILABLE ||
	    code == EXIT_INTERNAL || (err = stdout_failed()) == 0)
		return code;
	log_error("cannot write the %s of lock%s '%s' to stdout: %s",
	    c->verb == VERB_RUNS ? "run records" : c->verb == VERB_LIST ?
	    "list" : "status", c->verb != VERB_STATUS ? "s" : "",
	    c->verb != VERB_STATUS ? (c->pattern ? c->pattern : "*") : c->name,
	    strerror(err));
	return EXIT_IOERR;
}

/* Run the verb c->verb; returns the exit status (see refused_report()
 * for die_by). */
int
verbs_run(const struct config *c, const struct lock *l, int *die_by)
{
	*die_by = 0;
	switch (c->verb) {
	case VERB_ACQUIRE:
		return verb_acquire(c, l, die_by);
	case VERB_RELEASE:
		return verb_token(c, l, 0);
	case VERB_EXTEND:
		return verb_token(c, l, 1);
	case VERB_STATUS:
		return output_written(c, status_show(c, l));
	case VERB_BREAK:
		return verb_break(c, l);
	case VERB_LIST:
		return output_written(c, status_list(c, l));
	case VERB_STOP:
		return stop_run(c, l, die_by);
	case VERB_RUNS:
		return output_written(c, runs_show(c, l));
	default:
		return EXIT_INTERNAL;
	}
}
