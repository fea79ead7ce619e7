/* sha1.h - SHA-1, for naming Lua scripts as Redis does (EVALSHA) */
#ifndef REDLOCK_SHA1_H
#define REDLOCK_SHA1_H

#include <stddef.h>

/* Write the SHA-1 of data[0..n) as 40 lowercase hex digits and a NUL. */
void sha1_hex(const void *data, size_t n, char out[41]);

#endif
