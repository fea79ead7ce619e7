/*
 * config_env.h - the parts of the configuration that come from the
 * environment and from files rather than from argv (used by config.c).
 * No I/O but reading the password file; no exit().
 */
#ifndef REDLOCK_CONFIG_ENV_H
#define REDLOCK_CONFIG_ENV_H

#include <stddef.h>

/* Apply one option from variable var; returns 0 (CONFIG_OK) or the
 * config_parse() result to return. */
typedef int config_env_apply_fn(void *arg, int code, const char *value,
    const char *var);

/* The longest first line of a password file. */
#define CONFIG_ENV_PASSWORD_MAX 4096

int config_env_options(const unsigned char *seen, unsigned forms,
    config_env_apply_fn *apply, void *arg, char *err, size_t errlen);
int config_env_urls(char *list, const char **urls, int max);
int config_env_password(const char *file, const char *who, char **buf,
    const char **password, char *err, size_t errlen);

#endif
