/* utf8.h - well-formed UTF-8 (utf8.c) */
#ifndef REDLOCK_UTF8_H
#define REDLOCK_UTF8_H

#include <stddef.h>

size_t utf8_seq(const unsigned char *s, size_t n);

#endif
