/*
 * fmt.h - the formatting that a plain run does (numbers, names joined,
 * a UUID), without printf(3): libc's printf machinery is some 100 KiB of
 * code that a run would map for these few strings alone (the Makefile
 * says why pages count).  Messages and the rarer paths keep snprintf().
 */
#ifndef REDLOCK_FMT_H
#define REDLOCK_FMT_H

#include <stddef.h>

/* Room for any long long in decimal, its sign and the NUL. */
#define FMT_LL_SIZE 21

/* v in decimal into buf (FMT_LL_SIZE bytes at least), NUL-terminated;
 * returns its length. */
size_t fmt_ll(char *buf, long long v);

/*
 * The strings that follow size, up to a NULL, one after the other into
 * dst as snprintf(dst, size, "%s%s...") would put them: cut to size - 1
 * bytes and NUL-terminated (nothing written when size is 0).  Returns
 * the length of the whole, as snprintf() does, so a result >= size says
 * that it was cut.
 */
size_t fmt_cat(char *dst, size_t size, ...);

/* The 16 bytes of u as a lowercase UUID (36 characters and a NUL into
 * out), as uuid_unparse_lower() writes it. */
void fmt_uuid(const unsigned char u[16], char out[37]);

#endif
