/*
 * config_monitor.c - the options that tell the outside what became of
 * each run (SPEC section 13): --metrics-dir, --record, --skip-alert,
 * --on-start, --on-exit, --hook-timeout, and runs' --prom.  config.c
 * hands them here by code; each function returns CONFIG_OK, or
 * CONFIG_USAGE with a one-line reason in err.
 */
#include "config_monitor.h"

#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "config_args.h"

/* The most attempts in a row --skip-alert counts to: any more is no
 * alert at all. */
#define CONFIG_MON_SKIP_MAX 1000000

/* Apply option `which` (enum config_monitor_opt) with arg (NULL for the
 * options without a value), named who in messages. */
int
config_monitor_option(struct config *c, int which, const char *arg,
    const char *who, char *err, size_t errlen)
{
	const char *a = arg != NULL ? arg : "";
	char *end;

	switch (which) {
	case CONFIG_MON_METRICS_DIR: c->metrics_dir = arg; break;
	case CONFIG_MON_RECORD: c->record = 1; break;
	case CONFIG_MON_ON_START: c->on_start = arg; break;
	case CONFIG_MON_ON_EXIT: c->on_exit = arg; break;
	case CONFIG_MON_PROM: c->prom = 1; break;
	case CONFIG_MON_SKIP_ALERT:
		c->skip_alert = strtol(a, &end, 10);
		if (a[0] < '0' || a[0] > '9' || *end != '\0' ||
		    c->skip_alert < 1 || c->skip_alert > CONFIG_MON_SKIP_MAX)
			return config_usage(err, errlen, "invalid %s: '%s' (an integer "
			    "from 1 to 1000000)", who, a);
		break;
	default:
		if (duration_parse(a, &c->hook_timeout) != 0)
			return config_usage(err, errlen, "invalid DURATION for %s: '%s'",
			    who, a);
		if (c->hook_timeout == 0)
			return config_usage(err, errlen, "%s must be more than 0, not '%s'",
			    who, a);
	}
	return CONFIG_OK;
}

/* What the options ask of each other, once all are in: --skip-alert
 * (given by skip_alert_by) counts in the run record. */
int
config_monitor_check(const struct config *c, const char *skip_alert_by,
    char *err, size_t errlen)
{
	if (c->skip_alert > 0 && !c->record)
		return config_usage(err, errlen, "%s needs --record, which counts the "
		    "attempts", skip_alert_by);
	return CONFIG_OK;
}
