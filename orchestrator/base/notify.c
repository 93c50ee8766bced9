#include "orchestrator/base/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/log.h"

/* The protocol itself (sd_notify(3)): one datagram of NAME=VALUE lines
 * to the AF_UNIX socket named by $NOTIFY_SOCKET, a path or, with a
 * leading '@', an abstract name. Spoken here rather than through
 * libsystemd: that library and the six it loads (liblzma, libzstd,
 * liblz4, libgcrypt, libgpg-error, libcap) would be a good part of the
 * agent's resident size, and seven more libraries to map at every start,
 * for five short messages (the figure: tests/README.md, make bench). */
static void send_msg(const char *msg)
{
	const char *e = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n;
	socklen_t len;
	int fd;

	if (!e || !*e)
		return;
	n = strlen(e);
	if ((e[0] != '/' && e[0] != '@') || n >= sizeof(sa.sun_path) || n < 2) {
		log_debug("NOTIFY_SOCKET=%s: not a socket path or abstract name", e);
		return;
	}
	memcpy(sa.sun_path, e, n);
	if (e[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&sa, len) < 0)
		log_debug("notify %s: %s", e, strerror(errno));
	close(fd);
}

static void send_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void send_fmt(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	send_msg(buf);
}

void notify_ready(const char *status)
{
	if (status)
		send_fmt("READY=1\nSTATUS=%s", status);
	else
		send_msg("READY=1");
}

void notify_status(const char *fmt, ...)
{
	static const char key[] = "STATUS=";
	char buf[sizeof(key) - 1 + 256];
	va_list ap;

	memcpy(buf, key, sizeof(key) - 1);
	va_start(ap, fmt);
	vsnprintf(buf + sizeof(key) - 1, sizeof(buf) - (sizeof(key) - 1), fmt, ap);
	va_end(ap);
	send_msg(buf);
}

void notify_reloading(void)
{
	struct timespec ts;

	/* systemd ≥ 253 wants MONOTONIC_USEC with RELOADING=1 for
	 * Type=notify-reload; older ones ignore it. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	send_fmt("RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL);
}

void notify_stopping(void)
{
	send_msg("STOPPING=1");
}

/* $WATCHDOG_USEC, for this process only: $WATCHDOG_PID, when set, must
 * name it (sd_watchdog_enabled(3)). */
uint64_t notify_watchdog_usec(void)
{
	const char *u = getenv("WATCHDOG_USEC"), *p = getenv("WATCHDOG_PID");
	unsigned long long usec;
	char *end;

	if (!u || !*u)
		return 0;
	if (p && *p) {
		long pid;

		errno = 0;
		pid = strtol(p, &end, 10);
		if (errno || *end || pid != (long)getpid())
			return 0;
	}
	errno = 0;
	usec = strtoull(u, &end, 10);
	if (errno || *end || usec == 0)
		return 0;
	return (uint64_t)usec;
}

void notify_watchdog(void)
{
	send_msg("WATCHDOG=1");
}
