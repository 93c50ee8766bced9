/* The careful-open helpers (fs.h): symlinks, FIFOs, directories and
 * directories others can write are refused with a message that says so. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"

static void test_open_regular_refuses_dirs_and_fifos(void **state)
{
	char *dir = tu_mkdtemp(), *fifo = xasprintf("%s/fifo", dir), *file = xasprintf("%s/f", dir);
	char *link = xasprintf("%s/link", dir), err[400], *text;
	struct timespec t0, t1;
	size_t len;
	int fd;

	(void)state;
	assert_int_equal(mkfifo(fifo, 0600), 0);
	tu_write(dir, "f", "hello\n");
	assert_int_equal(symlink(file, link), 0);

	/* A FIFO nobody writes to: refused at once, not waited on. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = fs_open_regular("config file", fifo, NULL, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(fd, -EINVAL);
	assert_non_null(strstr(err, "is a FIFO, not a regular file"));
	assert_true(t1.tv_sec - t0.tv_sec < 2);

	assert_int_equal(fs_open_regular("config file", dir, NULL, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "is a directory, not a regular file"));
	assert_int_equal(fs_open_regular("token file", "/nonexistent/x", NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "token file /nonexistent/x"));

	/* Reading follows symlinks (a Kubernetes secret is one). */
	assert_int_equal(fs_read_regular("token file", link, 100, &text, &len, err, sizeof(err)), 0);
	assert_string_equal(text, "hello\n");
	assert_int_equal(len, 6);
	free(text);
	assert_int_equal(fs_read_regular("token file", file, 3, &text, &len, err, sizeof(err)), -EFBIG);
	assert_int_equal(fs_read_regular("token file", file, 6, &text, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 6); /* exactly the bound fits */
	free(text);
	fd = fs_open_regular("f", file, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);

	tu_rm_rf(dir);
	free(dir);
	free(fifo);
	free(file);
	free(link);
}

static void test_trusted_dir(void **state)
{
	char *dir = tu_mkdtemp(), *sub = xasprintf("%s/a/b", dir), err[400];
	int fd;

	(void)state;
	fd = fs_mkdir_trusted("state directory", sub, 0750, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(fs_open_trusted_dir("state directory", sub, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others (mode 0777)"));
	assert_non_null(strstr(err, "chmod go-w"));
	assert_int_equal(chmod(sub, 0770), 0);
	assert_int_equal(fs_mkdir_trusted("state directory", sub, 0750, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by its group (mode 0770)"));
	assert_int_equal(chmod(sub, 0750), 0);

	/* Owned by someone else (needs root to chown). */
	if (geteuid() == 0) {
		assert_int_equal(chown(sub, 65534, 65534), 0);
		assert_int_equal(fs_open_trusted_dir("state directory", sub, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by uid 65534"));
		assert_int_equal(chown(sub, 0, 0), 0);
	} else {
		print_message("skip: the foreign-owner case needs root\n");
	}

	tu_write(dir, "file", "x");
	{
		char *f = xasprintf("%s/file", dir);

		assert_int_equal(fs_open_trusted_dir("state directory", f, err, sizeof(err)), -ENOTDIR);
		free(f);
	}
	/* The parent of a file. */
	{
		char *p = xasprintf("%s/log.jsonl", sub);
		const char *base = NULL;

		fd = fs_open_parent_trusted("decision log", p, &base, err, sizeof(err));
		assert_true(fd >= 0);
		assert_string_equal(base, "log.jsonl");
		close(fd);
		assert_int_equal(chmod(sub, 0757), 0);
		assert_int_equal(fs_open_parent_trusted("decision log", p, &base, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "directory of decision log"));
		assert_int_equal(fs_open_parent_trusted("decision log", "/tmp/", &base, err, sizeof(err)), -EINVAL);
		free(p);
	}
	tu_rm_rf(dir);
	free(dir);
	free(sub);
}

static void test_openat_regular_and_atomic_write(void **state)
{
	char *dir = tu_mkdtemp(), *victim = xasprintf("%s/victim", dir), *text, err[300];
	struct stat st;
	size_t len;
	int dfd, fd;

	(void)state;
	tu_write(dir, "victim", "precious\n");
	dfd = fs_open_trusted_dir("d", dir, err, sizeof(err));
	assert_true(dfd >= 0);

	/* A symlink planted where a file is written is refused, the target
	 * untouched. */
	assert_int_equal(symlinkat(victim, dfd, "log"), 0);
	assert_int_equal(fs_openat_regular(dfd, "log", O_WRONLY | O_APPEND | O_CREAT, 0640), -ELOOP);
	assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
	assert_int_equal(fs_openat_regular(dfd, "fifo", O_WRONLY | O_APPEND | O_CREAT, 0640), -EINVAL);
	assert_int_equal(mkdirat(dfd, "d", 0700), 0);
	assert_int_equal(fs_openat_regular(dfd, "d", O_RDONLY, 0), -EISDIR);
	assert_int_equal(fs_openat_regular(dfd, "a/b", O_RDONLY, 0), -EINVAL);
	fd = fs_openat_regular(dfd, "new", O_WRONLY | O_APPEND | O_CREAT, 0640);
	assert_true(fd >= 0);
	close(fd);

	/* The atomic write replaces a symlink by a file (rename), never
	 * writes through it. */
	assert_int_equal(fs_write_atomic_at(dfd, "log", "new\n", 4, 0640), 0);
	assert_int_equal(fstatat(dfd, "log", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(fs_read_file(victim, 100, &text, &len), 0);
	assert_string_equal(text, "precious\n");
	free(text);
	assert_int_equal(fs_read_file_at(dfd, "log", 100, &text, &len), 0);
	assert_string_equal(text, "new\n");
	free(text);
	assert_int_equal(fs_read_file_at(dfd, "fifo", 100, &text, &len), -EINVAL);
	assert_int_equal(fs_write_atomic_at(dfd, "../x", "y", 1, 0640), -EINVAL);

	close(dfd);
	tu_rm_rf(dir);
	free(dir);
	free(victim);
}

struct lines_seen {
	char out[512];
	size_t n;
};

static int note_line(void *ctx, unsigned no, const char *line, size_t len, unsigned flags)
{
	struct lines_seen *ls = ctx;

	ls->n += (size_t)snprintf(ls->out + ls->n, sizeof(ls->out) - ls->n, "%u:%zu%s%s:%s|", no, len,
				  flags & FS_LINE_TOO_LONG ? "L" : "", flags & FS_LINE_UNTERMINATED ? "U" : "",
				  line ? line : "-");
	return 0;
}

/* Lines at, over and across the limit, NULs, a last line without '\n':
 * each is given or counted, never held whole when over the limit. */
static void test_read_lines_bounded(void **state)
{
	static const struct { const char *in; size_t len; size_t max; const char *want; } t[] = {
		{ "ab\ncd\n", 6, 4, "1:2:ab|2:2:cd|" },
		{ "abcd\nabcde\nx", 12, 4, "1:4:abcd|2:5L:-|3:1U:x|" },
		{ "abcdefghijklmnop\nz\n", 19, 4, "1:16L:-|2:1:z|" },
		{ "abcdefghij", 10, 4, "1:10LU:-|" },
		{ "a\0b\n\n", 5, 4, "1:3:a|2:0:|" },
		{ "", 0, 4, "" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct lines_seen ls = { .n = 0 };
		char *dir = tu_mkdtemp(), *path = xasprintf("%s/f", dir);
		FILE *f = fopen(path, "w");
		int fd;

		assert_int_equal(fwrite(t[i].in, 1, t[i].len, f), t[i].len);
		fclose(f);
		fd = open(path, O_RDONLY);
		assert_int_equal(fs_read_lines(fd, t[i].max, note_line, &ls), 0);
		close(fd);
		ls.out[ls.n] = '\0';
		assert_string_equal(ls.out, t[i].want);
		free(path);
		tu_rm_rf(dir);
		free(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_regular_refuses_dirs_and_fifos),
		cmocka_unit_test(test_trusted_dir),
		cmocka_unit_test(test_openat_regular_and_atomic_write),
		cmocka_unit_test(test_read_lines_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
