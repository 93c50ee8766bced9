#include "orchestrator/base/fs.h"

#include "orchestrator/base/clock.h"
#include "orchestrator/base/parse.h"
#include "orchestrator/base/xalloc.h"

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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Read FD to its end into a heap buffer (at most MAX bytes). */
static int read_fd_all(int fd, size_t max_size, char **out, size_t *len)
{
	size_t cap = max_size < 4096 ? max_size + 1 : 4096, n = 0;
	char *buf = xmalloc(cap);

	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			if (cap >= max_size + 1) {
				char c;

				/* Full at exactly MAX: only EOF now makes it fit. */
				do
					r = read(fd, &c, 1);
				while (r < 0 && errno == EINTR);
				if (r == 0)
					break;
				free(buf);
				return r < 0 ? -errno : -EFBIG;
			}
			cap = cap * 2 > max_size + 1 ? max_size + 1 : cap * 2;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int fs_read_file(const char *path, size_t max_size, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = read_fd_all(fd, max_size, out, len);
	close(fd);
	return r;
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

/* The directory part of PATH (SLASH: its last '/', or NULL): ".", "/"
 * or a heap copy of what comes before SLASH. */
static char *dir_of(const char *path, const char *slash)
{
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xasprintf("%.*s", (int)(slash - path), path);
}

int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int dfd, r;

	dir = dir_of(path, slash);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd < 0)
		return -errno;
	r = fs_write_atomic_at(dfd, slash ? slash + 1 : path, data, len, mode);
	close(dfd);
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

/* ---- opening files as root, the careful way -------------------------- */

const char *fs_kind_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symlink";
	case S_IFCHR:
	case S_IFBLK: return "a device";
	default: return "not a regular file";
	}
}

/* -EISDIR / -EINVAL for what is not a regular file. */
static int not_regular(mode_t mode)
{
	return S_ISDIR(mode) ? -EISDIR : -EINVAL;
}

/* O_NONBLOCK got us past a FIFO's open; reads of a regular file ignore
 * it, but callers may hand the fd on: clear it. */
static int drop_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int fs_open_regular(const char *what, const char *path, struct stat *st, char *err, size_t errsz)
{
	struct stat sb;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 && errno == ENXIO && stat(path, &sb) == 0) {
		/* A socket (or a FIFO opened for writing): never a file. */
		snprintf(err, errsz, "%s %s is %s, not a regular file", what, path, fs_kind_name(sb.st_mode));
		return not_regular(sb.st_mode);
	}
	if (fd < 0) {
		r = -errno;
		snprintf(err, errsz, "%s %s: cannot open: %s", what, path, strerror(-r));
		return r;
	}
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		snprintf(err, errsz, "%s %s: %s", what, path, strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errsz, "%s %s is %s, not a regular file", what, path, fs_kind_name(sb.st_mode));
		close(fd);
		return not_regular(sb.st_mode);
	}
	r = drop_nonblock(fd);
	if (r < 0) {
		snprintf(err, errsz, "%s %s: %s", what, path, strerror(-r));
		close(fd);
		return r;
	}
	if (st)
		*st = sb;
	return fd;
}

int fs_read_regular(const char *what, const char *path, size_t max, char **out, size_t *len,
		    char *err, size_t errsz)
{
	int fd = fs_open_regular(what, path, NULL, err, errsz), r;

	if (fd < 0)
		return fd;
	r = read_fd_all(fd, max, out, len);
	close(fd);
	if (r == -EFBIG)
		snprintf(err, errsz, "%s %s: larger than %zu bytes", what, path, max);
	else if (r < 0)
		snprintf(err, errsz, "%s %s: cannot read: %s", what, path, strerror(-r));
	return r;
}

static int check_trusted(const char *what, const char *dir, int fd, char *err, size_t errsz)
{
	struct stat st;
	uid_t me = geteuid();

	if (fstat(fd, &st) < 0) {
		int r = -errno;

		snprintf(err, errsz, "%s %s: %s", what, dir, strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "%s %s is %s, not a directory", what, dir, fs_kind_name(st.st_mode));
		return -ENOTDIR;
	}
	if (st.st_uid != 0 && st.st_uid != me) {
		snprintf(err, errsz, "%s %s is owned by uid %u, not by %s: refusing to use it "
			 "(chown %s it)", what, dir, (unsigned)st.st_uid, me == 0 ? "root" : "root or us",
			 me == 0 ? "root" : "root or your user,");
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errsz, "%s %s is writable by %s (mode %04o): refusing to use it "
			 "(chmod go-w it)", what, dir, st.st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int fs_open_trusted_dir(const char *what, const char *dir, char *err, size_t errsz)
{
	int fd, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errsz, "%s %s: %s", what, dir, strerror(-r));
		return r;
	}
	r = check_trusted(what, dir, fd, err, errsz);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int fs_mkdir_trusted(const char *what, const char *dir, mode_t mode, char *err, size_t errsz)
{
	int r = fs_mkdir_p(dir, mode);

	if (r < 0) {
		snprintf(err, errsz, "%s %s: %s", what, dir, strerror(-r));
		return r;
	}
	return fs_open_trusted_dir(what, dir, err, errsz);
}

int fs_open_parent_trusted(const char *what, const char *path, const char **base, char *err, size_t errsz)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!*path || (slash && !slash[1])) {
		snprintf(err, errsz, "%s \"%s\": not a file name", what, path);
		return -EINVAL;
	}
	dir = dir_of(path, slash);
	{
		char *w = xasprintf("directory of %s", what);

		fd = fs_open_trusted_dir(w, dir, err, errsz);
		free(w);
	}
	free(dir);
	if (fd >= 0)
		*base = slash ? slash + 1 : path;
	return fd;
}

int fs_openat_regular(int dfd, const char *name, int flags, mode_t mode)
{
	struct stat st;
	int fd, r;

	if (!*name || strchr(name, '/'))
		return -EINVAL;
	fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
	if (fd < 0)
		/* ENXIO: a FIFO without a reader, or a socket. */
		return errno == ENXIO ? -EINVAL : -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return not_regular(st.st_mode);
	}
	r = drop_nonblock(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int fs_read_file_at(int dfd, const char *name, size_t max, char **out, size_t *len)
{
	int fd = fs_openat_regular(dfd, name, O_RDONLY, 0), r;

	if (fd < 0)
		return fd;
	r = read_fd_all(fd, max, out, len);
	close(fd);
	return r;
}

int fs_read_lines(int fd, size_t max, fs_line_fn fn, void *ctx)
{
	size_t cap = max + 1, n = 0, skipped = 0;
	char *buf = xmalloc(cap + 1);
	bool too_long = false;
	unsigned no = 1;
	int r = 0;

	for (;;) {
		ssize_t got;
		char *nl;

		do
			got = read(fd, buf + n, cap - n);
		while (got < 0 && errno == EINTR);
		if (got < 0) {
			r = -errno;
			break;
		}
		if (got == 0) {
			if (too_long)
				r = fn(ctx, no, NULL, skipped + n, FS_LINE_TOO_LONG | FS_LINE_UNTERMINATED);
			else if (n) {
				buf[n] = '\0';
				r = fn(ctx, no, buf, n, FS_LINE_UNTERMINATED);
			}
			break;
		}
		n += (size_t)got;
		/* Every whole line in the buffer, then what is left moved to
		 * its start. */
		{
			size_t start = 0;

			while ((nl = memchr(buf + start, '\n', n - start))) {
				size_t len = (size_t)(nl - (buf + start));

				if (too_long || len > max) {
					r = fn(ctx, no, NULL, skipped + len, FS_LINE_TOO_LONG);
					too_long = false;
					skipped = 0;
				} else {
					*nl = '\0';
					r = fn(ctx, no, buf + start, len, 0);
				}
				no++;
				start += len + 1;
				if (r < 0)
					goto out;
			}
			memmove(buf, buf + start, n - start);
			n -= start;
		}
		if (n > max) {
			/* Over the limit without its end in sight: count it,
			 * keep none of it. */
			too_long = true;
			skipped += n;
			n = 0;
		}
	}
out:
	free(buf);
	return r;
}

int fs_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	const char *p = data;
	char tmp[NAME_MAX + 1];
	size_t off = 0;
	int fd = -1, r = 0;

	if (!*name || strchr(name, '/') || strlen(name) > NAME_MAX - 12)
		return -EINVAL;
	/* A fresh name each try, created with O_EXCL: a name someone else
	 * prepared (a symlink, a file they hold open) is never reused. */
	for (unsigned tries = 0; tries < 16; tries++) {
		uint32_t rnd;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint32_t)clock_mono_ns() ^ (uint32_t)getpid() ^ tries * 2654435761u;
		snprintf(tmp, sizeof(tmp), "%s.tmp.%06x", name, rnd & 0xffffff);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
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
	if (close(fd) < 0 && r == 0 && errno != EINTR)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	(void)fsync(dfd);
	return 0;
}
