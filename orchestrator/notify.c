#include "notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"

void notify_ready(const char *status)
{
	if (status)
		sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	else
		sd_notify(0, "READY=1");
}

void notify_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", buf);
}

void notify_reloading(void)
{
	struct timespec ts;

	/* systemd ≥ 253 wants MONOTONIC_USEC with RELOADING=1 for
	 * Type=notify-reload; older ones ignore it. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

uint64_t notify_watchdog_usec(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}

void notify_watchdog(void)
{
	sd_notify(0, "WATCHDOG=1");
}
