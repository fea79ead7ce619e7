/* child.h - the command: signals, fork/exec, reaping */
#ifndef REDLOCK_CHILD_H
#define REDLOCK_CHILD_H

#include <sys/types.h>

struct child {
	pid_t pid;		/* also its process group */
	int foreground;		/* it was given the terminal */
	int exec_errno;		/* exec failed with this */
};

int child_signals_init(void);
int child_signal_fd(void);
int child_next_signal(void);
int child_notify_fd(void);
int child_spawn(struct child *ch, char *const argv[], char *const envp[]);
void child_signal(const struct child *ch, int sig);
int child_reap(struct child *ch, int *status);
int child_exit_status(int status);
void child_restore_terminal(const struct child *ch);

#endif
