/* print.h - printing what the servers hold, safely for a terminal,
 * a shell and a JSON parser */
#ifndef REDLOCK_PRINT_H
#define REDLOCK_PRINT_H

#include <stddef.h>
#include <stdint.h>

void print_shell(const char *s);
void print_json(const char *s, size_t n);
void print_text(const char *s, size_t n);
size_t print_width(const char *s, size_t n);
const char *print_escape(const char *s, char *buf, size_t len);
void print_time(int64_t ms, char *buf, size_t len);

#endif
