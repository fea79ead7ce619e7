/* notify.h - telling systemd what the run form is doing (the sd_notify
 * protocol, when NOTIFY_SOCKET is set) */
#ifndef REDLOCK_NOTIFY_H
#define REDLOCK_NOTIFY_H

#include "lock.h"

void notify_init(void);
void notify_waiting(const struct lock *l, enum lock_result res,
    const struct lock_outcome *o);
void notify_running(const struct lock *l);
void notify_pausing(const struct lock *l, int round, int code,
    int64_t pause_ms);
void notify_stopping(void);

#endif
