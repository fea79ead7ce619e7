/* tree.h - the command's whole process tree, found through /proc */
#ifndef REDLOCK_TREE_H
#define REDLOCK_TREE_H

#include <sys/types.h>

int tree_signal(pid_t root, pid_t except, pid_t sent_pgrp, int sig);
int tree_signal_marked(const char *mark, int sig);
unsigned long long tree_start_time(pid_t pid);

#endif
