/* config_monitor.h - the options of SPEC section 13 (config_monitor.c) */
#ifndef REDLOCK_CONFIG_MONITOR_H
#define REDLOCK_CONFIG_MONITOR_H

#include <stddef.h>

#include "config.h"

/* The options, in the order of their codes in config.c's table. */
enum config_monitor_opt {
	CONFIG_MON_METRICS_DIR, CONFIG_MON_RECORD, CONFIG_MON_SKIP_ALERT,
	CONFIG_MON_ON_START, CONFIG_MON_ON_EXIT, CONFIG_MON_HOOK_TIMEOUT,
	CONFIG_MON_PROM, CONFIG_MON_COUNT
};

int config_monitor_option(struct config *c, int which, const char *arg,
    const char *who, char *err, size_t errlen);
int config_monitor_check(const struct config *c, const char *skip_alert_by,
    char *err, size_t errlen);

#endif
