/* log.h - the one diagnostic voice: "redlock: ..." on stderr */
#ifndef REDLOCK_LOG_H
#define REDLOCK_LOG_H

enum log_level { LOG_QUIET = -1, LOG_NORMAL = 0, LOG_VERBOSE = 1 };

void log_set_level(int level);
int log_level(void);
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_alert(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
