/* log.h — leveled logging to stderr (the journal) or syslog.
 *
 * Library-style modules log at debug at most; the caller that decides what
 * an error means logs it once (STYLE.md §5, §8).
 */
#ifndef NUMAORCH_LOG_H
#define NUMAORCH_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Parse "error", "warn"/"warning", "info", "debug". Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_name(enum log_level lvl);
/* Route messages to syslog(3) instead of stderr. */
void log_use_syslog(bool on, const char *ident);
/* Prefix stderr lines with "<N>" so journald keeps levels. */
void log_set_journal_prefix(bool on);
/* True once a write to stderr failed with EPIPE (its reader went away):
 * from then on messages go to syslog(3). The caller must ignore SIGPIPE
 * (numaorchd does) or the first such write kills the process. */
bool log_stderr_gone(void);


void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Log with strerror(-err) appended; returns err so callers can
 * `return log_errno(r, "...")`. err is a negative errno. */
int log_errno(enum log_level lvl, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Messages that come back every cycle (the snapshot's warnings): a round
 * logs each message at LVL only if it was not in the round before; one
 * that stays is said again after 10, 100, 1000, ... rounds with the
 * count, and one that goes away after several rounds gets an info line
 * saying so. Not thread-safe: one caller (the engine). */
struct log_repeat;
struct log_repeat *log_repeat_new(void);
void log_repeat_free(struct log_repeat *r);
void log_repeat_round(struct log_repeat *r, enum log_level lvl, char *const *msgs, unsigned n);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) \
	do { if (log_get_level() >= LOG_LEVEL_DEBUG) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)

#endif
