/* fs.h — reading, writing and opening files. All return 0 or a negative
 * errno, and write their output pointers only on success. I/O: nothing
 * in policies/ may use it (make check-layers). Allocation is xalloc.h,
 * number parsing parse.h, clocks clock.h.
 */
#ifndef NUMAORCH_FS_H
#define NUMAORCH_FS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Read a whole (small, pseudo-)file into a NUL-terminated heap buffer.
 * Files over max_size give -EFBIG. *out is the caller's to free(). */
int fs_read_file(const char *path, size_t max_size, char **out, size_t *len);

/* Read a file into a caller buffer, NUL-terminated, trailing newline
 * stripped. -EFBIG if it does not fit. */
int fs_read_line(const char *path, char *buf, size_t bufsz);

/* Parse a file holding one unsigned decimal number. -EINVAL if malformed. */
int fs_read_u64(const char *path, uint64_t *out);

/* Write a string to an existing file (as cgroupfs/sysfs want: one write()
 * call, no O_CREAT). Returns the kernel's errno from write() on refusal. */
int fs_write_str(const char *path, const char *s);

/* Create or replace a file atomically: write a temp file in the same
 * directory, fsync, rename, fsync the directory (fs_write_atomic_at on
 * PATH's directory, which is not checked: callers writing as root open a
 * trusted directory and use fs_write_atomic_at). */
int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode);

bool fs_exists(const char *path);
bool fs_is_dir(const char *path);

/* mkdir -p DIR: each missing component with MODE. -ENOTDIR if DIR then
 * is not a directory (a file in the way). Says nothing about who else
 * can write DIR: a directory root writes files in goes through
 * fs_mkdir_trusted. */
int fs_mkdir_p(const char *dir, mode_t mode);

/* ---- opening files as root, the careful way (STYLE.md 19) -------------
 *
 * Every file the daemon creates or appends to as root is opened relative
 * to a directory it checked (fs_open_trusted_dir), by one path component,
 * with O_NOFOLLOW: another user who could write that directory could
 * otherwise plant a symlink and make root write through it. Files it only
 * reads (config, token, TLS key) may be symlinks (a Kubernetes secret is
 * one) but must lead to a regular file: a directory would parse as an
 * empty file and a FIFO would block the reader for ever.
 *
 * Each takes ERR/ERRSZ for a message naming the file and what is wrong,
 * ready for the operator ("... is a FIFO, not a regular file"). */

/* "a directory", "a FIFO", "a socket", "a device", "a symlink", "a regular
 * file": what the operator is told a path is. */
const char *fs_kind_name(mode_t mode);

/* Open PATH (symlinks followed) read-only; refuse anything but a regular
 * file without blocking on a FIFO (O_NONBLOCK, dropped after the check).
 * WHAT names it in messages ("token file"). Returns the fd (O_CLOEXEC),
 * or -errno: -EISDIR for a directory, -EINVAL for another non-regular
 * file. If ST is not NULL it gets the file's fstat on success. */
int fs_open_regular(const char *what, const char *path, struct stat *st, char *err, size_t errsz);
/* fs_open_regular + read the whole file (at most MAX bytes, else -EFBIG)
 * into a NUL-terminated heap buffer; *OUT is the caller's to free(). */
int fs_read_regular(const char *what, const char *path, size_t max, char **out, size_t *len,
		    char *err, size_t errsz);

/* Open directory DIR (symlinks followed) and check it may hold files root
 * writes: owned by root (or by the effective user, for an unprivileged
 * run) and not writable by group or others. Returns its fd (O_DIRECTORY,
 * O_CLOEXEC) or -errno: -ENOTDIR, -EPERM (owner or mode; ERR says which
 * and how to fix it). WHAT names it ("state directory"). */
int fs_open_trusted_dir(const char *what, const char *dir, char *err, size_t errsz);
/* fs_mkdir_p (missing components get MODE), then fs_open_trusted_dir. */
int fs_mkdir_trusted(const char *what, const char *dir, mode_t mode, char *err, size_t errsz);
/* The trusted directory holding file PATH (its dirname; "." for a bare
 * name), opened as above; *BASE points into PATH at the file's name.
 * -EINVAL if PATH ends in '/'. */
int fs_open_parent_trusted(const char *what, const char *path, const char **base, char *err, size_t errsz);

/* openat(DFD, NAME, FLAGS | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, MODE),
 * then fstat: only a regular file is kept (O_NONBLOCK dropped again).
 * NAME must be one component. -ELOOP for a symlink, -EISDIR for a
 * directory, -EINVAL for another non-regular file. */
int fs_openat_regular(int dfd, const char *name, int flags, mode_t mode);
/* Read NAME in DFD whole (fs_openat_regular; at most MAX bytes). */
int fs_read_file_at(int dfd, const char *name, size_t max, char **out, size_t *len);
/* Call FN for each line of FD (read from its offset to EOF), the '\n'
 * cut off and the text NUL-terminated (a NUL inside it is kept: LEN
 * counts it). A line over MAX bytes is never held whole: FN gets it with
 * FS_LINE_TOO_LONG, LINE NULL and LEN its length; a last line without a
 * '\n' comes with FS_LINE_UNTERMINATED. NO is the line's number from 1.
 * Stops at FN's negative return and returns it, or a read's -errno; 0 at
 * EOF. Memory is bounded by MAX whatever the file holds. */
enum {
	FS_LINE_TOO_LONG = 1u << 0,
	FS_LINE_UNTERMINATED = 1u << 1,
};
typedef int (*fs_line_fn)(void *ctx, unsigned no, const char *line, size_t len, unsigned flags);
int fs_read_lines(int fd, size_t max, fs_line_fn fn, void *ctx);
/* Create or replace NAME in DFD atomically: a temp file NAME.tmp.XXXXXX
 * created with O_EXCL (never an existing file, never through a symlink),
 * written, fsync'ed, renamed over NAME, then DFD fsync'ed. */
int fs_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

#endif
