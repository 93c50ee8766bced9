/* notify.h — the service manager protocol (sd_notify(3), spoken directly):
 * READY=1 once the first cycle has published a snapshot, STATUS= with a
 * one-line summary after each cycle, WATCHDOG=1 when WatchdogSec= is set,
 * RELOADING=1/STOPPING=1 around SIGHUP and SIGTERM. Outside systemd
 * (no $NOTIFY_SOCKET) every call is a cheap no-op.
 */
#ifndef NUMAORCH_NOTIFY_H
#define NUMAORCH_NOTIFY_H

#include <stdint.h>

void notify_ready(const char *status);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notify_reloading(void);
void notify_stopping(void);
/* The watchdog interval systemd asked for, in microseconds, or 0. */
uint64_t notify_watchdog_usec(void);
void notify_watchdog(void);

#endif
