/* holder.h - who we are to the servers and to the command: holder
 * metadata, REDLOCK_HELD, the command's environment */
#ifndef REDLOCK_HOLDER_H
#define REDLOCK_HOLDER_H

#include <stddef.h>

#include "lock.h"

void holder_meta(struct lock_meta *m, const char *shell, char *const *cmd,
    long pid);
const char *holder_next_token(const char **p, size_t *len);
int holder_inherited(const char *held, const char *token);
char **holder_env(const struct lock *l);

#endif
