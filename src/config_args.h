/* config_args.h - the operands of the command line (config_args.c) */
#ifndef REDLOCK_CONFIG_ARGS_H
#define REDLOCK_CONFIG_ARGS_H

#include <stddef.h>

#include "config_types.h"

int config_run_operands(struct config *c, int argc, char **argv, char *err,
    size_t errlen);
int config_verb_operands(struct config *c, const char **ops, int n,
    char *err, size_t errlen);
int config_bad_operand(const char *what, char *err, size_t errlen);
int config_usage(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
