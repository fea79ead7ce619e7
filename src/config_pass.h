/* config_pass.h - what a run passes on to its command for a nested
 * redlock (config_pass.c) */
#ifndef REDLOCK_CONFIG_PASS_H
#define REDLOCK_CONFIG_PASS_H

#include "config_types.h"

/*
 * The variables that take the place of ours in the run form's command's
 * environment: "REDLOCK_URL=" and the nurls URLs (without their
 * passwords: url_list_env()) when there are any, then each connection
 * option that seen (indexed by option code) says was given on the
 * command line, as its variable: REDLOCK_TLS=1, REDLOCK_CACERT=FILE
 * (absolute), ..., REDLOCK_PASSWORD_FILE=password_file.  Sets *out to a
 * malloc'd NULL-terminated vector (config_pass_free()), or NULL when
 * there is nothing to pass on.  Returns 0, or -1 when out of memory.
 */
int config_pass_env(const struct config *c, const unsigned char *seen,
    const char *const *urls, int nurls, const char *password_file,
    char ***out);
void config_pass_free(char **env);

#endif
