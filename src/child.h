/* child.h - the command: signals, fork/exec, reaping */
#ifndef REDLOCK_CHILD_H
#define REDLOCK_CHILD_H

#include <stdint.h>
#include <sys/types.h>

struct child {
	pid_t pid;		/* also its process group */
	pid_t guard;		/* the guard process, or 0 */
	int guard_fd;		/* write end of the guard's pipe, or -1 */
	int foreground;		/* it was given the terminal */
	int exec_errno;		/* exec failed with this */
};

int child_signals_init(void);
int child_signal_fd(void);
int child_next_signal(void);
int child_notify_fd(void);
int child_spawn(struct child *ch, char *const argv[], char *const envp[]);
void child_signal(const struct child *ch, int sig);
int child_reap(struct child *ch, int *status, int *done);
int child_group_alive(const struct child *ch);
int child_exit_status(int status);
void child_restore_terminal(const struct child *ch);
int child_guard_start(struct child *ch, int64_t margin);
void child_guard_lease(int fd, int64_t end);
void child_guard_stop(struct child *ch);

#endif
