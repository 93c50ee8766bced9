#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
	static const char msg[] = "numaorch: out of memory, aborting\n";
	ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	abort();
}

void xmalloc_tune(void)
{
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom();
	return p;
}

int fs_read_file(const char *path, size_t max_size, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			if (cap >= max_size + 1) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			cap *= 2;
			if (cap > max_size + 1)
				cap = max_size + 1;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int fs_read_line(const char *path, char *buf, size_t bufsz)
{
	ssize_t r;
	int fd;

	if (bufsz < 2)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		r = read(fd, buf, bufsz);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	if ((size_t)r >= bufsz)
		return -EFBIG;
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return 0;
}

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -errno;
	if (end == s)
		return -EINVAL;
	while (*end == '\n' || *end == ' ')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	if (!s)
		return -EINVAL;
	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int fs_read_u64(const char *path, uint64_t *out)
{
	char buf[64];
	int r;

	r = fs_read_line(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	return parse_u64(buf, out);
}

int fs_write_str(const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t r;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		r = write(fd, s, len);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (close(fd) < 0 && errno != EINTR)
		return -errno;
	return (size_t)r == len ? 0 : -EIO;
}

int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	char *dir = xstrdup(path);
	const char *p = data;
	size_t off = 0;
	char *slash;
	int fd, r = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash) {
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			(void)fsync(fd);
			close(fd);
		}
	}
out:
	free(tmp);
	free(dir);
	return r;
}

bool fs_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

bool fs_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t clock_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
int64_t clock_real_ns(void) { return clock_ns(CLOCK_REALTIME); }

int fs_mkdir_p(const char *dir, mode_t mode)
{
	char *p = xstrdup(dir);
	int r = 0;

	for (char *s = p + 1; ; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	if (r == 0 && !fs_is_dir(dir))
		r = -ENOTDIR;
	return r;
}

/* Fields of /proc/PID/stat after the command name: [0] is field 3
 * (state), so field k is [k - 3]. */
int proc_stat_fields(const char *s, const char **f, unsigned nf)
{
	const char *p = strrchr(s, ')');
	unsigned i = 0;

	if (!p)
		return -EINVAL;
	p++;
	while (*p && i < nf) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		f[i++] = p;
		while (*p && *p != ' ')
			p++;
	}
	return i == nf ? 0 : -EINVAL;
}

/* A /proc/PID/stat field at P: decimal digits up to the next blank
 * (parse_u64 wants the whole string to be the number). */
static int field_u64(const char *p, uint64_t *v)
{
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9')
		x = x * 10 + (uint64_t)(*p++ - '0');
	*v = x;
	return 0;
}

int proc_stat_ticks_cpu(const char *s, uint64_t *ticks, int *cpu)
{
	const char *f[37];
	uint64_t ut, st, c;

	/* Fields 14, 15 and 39 are f[11], f[12] and f[36]. */
	if (proc_stat_fields(s, f, 37) < 0 || field_u64(f[11], &ut) < 0 || field_u64(f[12], &st) < 0 ||
	    field_u64(f[36], &c) < 0 || c > INT32_MAX)
		return -EINVAL;
	*ticks = ut + st;
	*cpu = (int)c;
	return 0;
}
