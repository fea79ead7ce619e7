/* sig.h - signals and the self-pipe: handlers only record */
#ifndef REDLOCK_SIG_H
#define REDLOCK_SIG_H

/* The byte the renewal thread writes to the self-pipe: "look at me". */
#define SIG_EVENT 0

int sig_std_fds(void);
int sig_std_was_closed(int fd);
int sig_init(void);
int sig_fd(void);
int sig_notify_fd(void);
int sig_next(void);
int sig_end_asked(void);
int sig_asks_end(int sig);
int sig_drain(void);
int sig_keep_end(void);
int sig_ignored(int sig);
void sig_child_defaults(void);
void sig_stop_self(int sig);
void sig_catch_stops(int on);
void sig_die_by(int sig, int group);

#endif
