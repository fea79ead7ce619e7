/* child.h - the command: fork/exec, its tree, reaping, the terminal */
#ifndef REDLOCK_CHILD_H
#define REDLOCK_CHILD_H

#include <stdint.h>
#include <sys/types.h>

struct child {
	pid_t pid;		/* also its process group */
	pid_t guard;		/* the guard process, or 0 */
	int guard_status;	/* the last guard's wait status, once reaped */
	int foreground;		/* it was given the terminal */
	int exec_errno;		/* exec failed with this */
	int64_t exec_by;	/* clock_ms(): exec only before (0: any time) */
};

/* What child_reap() saw. */
enum child_event { CHILD_NONE, CHILD_EXITED, CHILD_STOPPED };

int child_spawn(struct child *ch, char *const argv[], char *const envp[]);
void child_signal(const struct child *ch, int sig);
void child_kill_tree(const struct child *ch);
int child_tree_alive(const struct child *ch);
enum child_event child_reap(struct child *ch, int *status);
int child_exit_status(int status);
void child_take_terminal(const struct child *ch);
void child_give_terminal(struct child *ch);

#endif
