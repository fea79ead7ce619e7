/* holder.h - who we are to the servers and to the command: holder
 * metadata, REDLOCK_HELD, the command's environment */
#ifndef REDLOCK_HOLDER_H
#define REDLOCK_HOLDER_H

#include <stddef.h>

#include "lock_types.h"

/* Room for an exclusive holder's record tail: the token, the TTL, the
 * metadata (its strings are shorter than struct lock_meta, its numbers
 * 24 bytes at most), the lock-delay, the version, the twelve separators
 * and the final NUL. */
#define HOLDER_RECORD_MAX \
    (LOCK_TOKEN_LEN + sizeof(struct lock_meta) + (size_t)5 * 24 + 13)

void holder_meta(struct lock_meta *m, long pid);
void holder_command(struct lock_meta *m, const char *label, const char *shell,
    char *const *cmd, int args);
const char *holder_next_token(const char **p, size_t *len);
int holder_inherited(const char *held, const char *token);
size_t holder_record(const struct lock *l, const struct grant *g, char *rec);
char **holder_env(const struct lock *l, const struct grant *g,
    char *const *pass);

#endif
