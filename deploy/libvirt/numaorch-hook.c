/* numaorch-hook — libvirt QEMU hook that tells numaorchd about domain
 * starts and stops, so the agent places a starting domain at once.
 *
 * Install as an executable in /etc/libvirt/hooks/qemu.d/ (libvirtd scans
 * that directory when it starts: restart it after installing). libvirt
 * runs it as `HOOK <domain> <operation> <sub-operation> <extra>` with the
 * domain XML on stdin, synchronously, while it holds the domain.
 *
 * What it does:
 *   - "started begin", "stopped end", "release end", "reconnect begin":
 *     POST /v1/events {"source":"libvirt-hook","event":...,"domain":...,
 *     "uuid":...} to numaorchd's unix socket; every other call exits 0 at
 *     once, reading nothing.
 *   - reads stdin only until the domain's <uuid> (the first lines of the
 *     XML), never the rest;
 *   - never calls libvirt (the caller holds the domain: that deadlocks);
 *   - takes at most 1 s in all: every step has a deadline and a timer
 *     ends the process should anything else block (syslog included);
 *   - fails open: whatever goes wrong (agent absent, slow, refusing) it
 *     logs one line to syslog and stderr and exits 0, so a domain start
 *     never fails or waits because of numaorch.
 *
 * Socket: $NUMAORCH_SOCKET, else [api] socket from $NUMAORCH_CONFIG or
 * /etc/numaorch/numaorchd.conf, else /run/numaorch/api.sock. (libvirtd
 * passes hooks almost no environment, so on a host the configuration
 * file is what counts; the variables are for running it by hand.)
 *
 * Written in C rather than shell: a shell hook would need curl or socat
 * for a unix-socket HTTP request (another package, another process per
 * domain event) and cannot bound its own run time without timeout(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "../../agents/vmhook.h"

#define BUDGET_MS 900    /* for stdin + connect + request + answer */
#define BACKSTOP_MS 1000 /* the process ends here whatever it is doing */
#define STDIN_MAX (256 * 1024)

static void backstop(int sig)
{
	static const char msg[] = "numaorch-hook: out of time (1 s); continuing without notifying numaorchd\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);

	(void)sig;
	(void)w;
	_exit(0);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "numaorch-hook: %s\n", buf);
	openlog("numaorch-hook", LOG_PID, LOG_DAEMON);
	syslog(LOG_WARNING, "%s", buf);
	closelog();
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for EVENTS on FD until DEADLINE; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		long long left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Read stdin until the domain's <uuid> is known (or EOF, or the budget). */
static void read_uuid(char uuid[37], long long deadline)
{
	struct vmhook_uuid_scan s;
	size_t total = 0;
	int fl = fcntl(0, F_GETFL);

	uuid[0] = '\0';
	if (fl < 0)
		return;
	fcntl(0, F_SETFL, fl | O_NONBLOCK);
	vmhook_uuid_init(&s);
	while (total < STDIN_MAX) {
		char buf[4096];
		ssize_t n = read(0, buf, sizeof(buf));

		if (n > 0) {
			total += (size_t)n;
			if (vmhook_uuid_feed(&s, buf, (size_t)n)) {
				memcpy(uuid, s.uuid, 37);
				return;
			}
			continue;
		}
		if (n == 0)
			return;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || wait_fd(0, POLLIN, deadline) < 0)
			return;
	}
}

static void socket_path(char *out, size_t sz)
{
	const char *env = getenv("NUMAORCH_SOCKET");
	const char *conf = getenv("NUMAORCH_CONFIG");
	char text[16384];
	size_t n;
	FILE *f;

	if (env && *env) {
		snprintf(out, sz, "%s", env);
		return;
	}
	f = fopen(conf && *conf ? conf : VMHOOK_DEFAULT_CONFIG, "re");
	if (!f) {
		snprintf(out, sz, "%s", VMHOOK_DEFAULT_SOCKET);
		return;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	vmhook_socket_from_config(text, out, sz);
}

/* POST the event; 0 with *status, or -errno. */
static int post(const char *path, const char *body, int blen, long long deadline, int *status)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[2048], resp[512];
	int fd, r, len;
	size_t off = 0, got = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	len = snprintf(req, sizeof(req),
		       "POST /v1/events HTTP/1.1\r\nHost: numaorch\r\nUser-Agent: numaorch-hook\r\n"
		       "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		       blen, body);
	if (len < 0 || (size_t)len >= sizeof(req))
		return -E2BIG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			r = -errno;
			goto out;
		}
		r = wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			goto out;
	}
	while (off < (size_t)len) {
		ssize_t w = send(fd, req + off, (size_t)len - off, MSG_NOSIGNAL);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN) {
			r = -errno;
			goto out;
		}
		r = wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			goto out;
	}
	/* The status line is all we need. */
	for (;;) {
		ssize_t n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);

		if (n > 0) {
			got += (size_t)n;
			resp[got] = '\0';
			if (strstr(resp, "\r\n") || got == sizeof(resp) - 1)
				break;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			r = -errno;
			goto out;
		}
		r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			goto out;
	}
	*status = vmhook_http_status(resp, got);
	r = *status < 0 ? -EPROTO : 0;
out:
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	struct itimerval it = { .it_value = { .tv_sec = BACKSTOP_MS / 1000,
					      .tv_usec = (BACKSTOP_MS % 1000) * 1000 } };
	const char *event, *name;
	char uuid[37], path[512], body[1024];
	long long deadline;
	int blen, status = 0, r;

	if (argc < 4)
		return 0;
	name = argv[1];
	event = vmhook_event(argv[2], argv[3]);
	if (!event)
		return 0;
	signal(SIGALRM, backstop);
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGPIPE, SIG_IGN);
	deadline = now_ms() + BUDGET_MS;

	read_uuid(uuid, deadline);
	socket_path(path, sizeof(path));
	if (!path[0])
		return 0; /* the agent's API socket is disabled: nobody to tell */
	blen = vmhook_body(body, sizeof(body), event, name, uuid);
	if (blen < 0) {
		say("domain name too long; not notifying numaorchd of %s %s", name, event);
		return 0;
	}
	r = post(path, body, blen, deadline, &status);
	if (r < 0)
		say("cannot notify numaorchd at %s that %s %s: %s; continuing", path, name, event,
		    r == -ETIMEDOUT ? "timed out" : strerror(-r));
	else if (status < 200 || status > 299)
		say("numaorchd at %s answered %d to %s %s; continuing", path, status, name, event);
	return 0;
}
