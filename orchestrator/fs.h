/* fs.h — small file helpers. All return 0 or a negative errno, and write
 * their output pointers only on success.
 *
 * Out-of-memory policy (whole project): allocation failure aborts the
 * process (xmalloc & co). The agent is small and restartable by systemd;
 * a half-handled ENOMEM path in the middle of a cgroup write is more
 * dangerous than a clean restart.
 */
#ifndef NUMAORCH_FS_H
#define NUMAORCH_FS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The daemon's malloc settings (call once, first thing in main): fixed
 * mmap and trim thresholds. A cycle allocates and frees a few arrays of
 * ~1 MiB (1000 guests); with glibc's sliding thresholds those went back
 * to the kernel at every free and were faulted in again next cycle, which
 * made the policy step 2.5x slower (make bench: decide 2.1 vs 5.6 ms at
 * 1000 guests) for no lower peak RSS. */
void xmalloc_tune(void);

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
 * directory, fsync, rename, fsync the directory. */
int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode);

bool fs_exists(const char *path);
bool fs_is_dir(const char *path);

/* Strict number parsing helpers: whole string must be consumed. */
int parse_u64(const char *s, uint64_t *out);
int parse_double(const char *s, double *out);
int parse_bool(const char *s, bool *out);

/* Monotonic and realtime clocks in nanoseconds. Only the engine and the
 * acquire layer read clocks; policies get times from the snapshot. */
int64_t clock_mono_ns(void);
int64_t clock_real_ns(void);

/* The first NF fields of a /proc/PID/stat line after the command name
 * (which may hold spaces and parentheses: counted from the last ')'):
 * F[0] is field 3 (state), so field k is F[k - 3]. 0, or -EINVAL if the
 * line has fewer. */
int proc_stat_fields(const char *stat, const char **f, unsigned nf);
/* utime + stime (fields 14 and 15, clock ticks) and the CPU it last ran
 * on (field 39) of a /proc/PID/stat or /proc/PID/task/TID/stat text,
 * without sscanf: it runs for every thread of every guest spread over
 * several nodes, every cycle. 0 or -EINVAL. */
int proc_stat_ticks_cpu(const char *stat, uint64_t *ticks, int *cpu);

/* mkdir -p DIR: each missing component with MODE. -ENOTDIR if DIR then
 * is not a directory (a file in the way). */
int fs_mkdir_p(const char *dir, mode_t mode);

#endif
