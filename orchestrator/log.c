#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <pthread.h>

static enum log_level cur_level = LOG_LEVEL_INFO;
static bool to_syslog;
static bool journal_prefix;
/* Whole lines from several threads (engine, API) must not interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const names[] = { "error", "warn", "info", "debug" };
static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level lvl) { cur_level = lvl; }
enum log_level log_get_level(void) { return cur_level; }

const char *log_level_name(enum log_level lvl)
{
	if ((unsigned)lvl > LOG_LEVEL_DEBUG)
		return "?";
	return names[lvl];
}

int log_level_parse(const char *s, enum log_level *out)
{
	if (!s)
		return -EINVAL;
	for (unsigned i = 0; i <= LOG_LEVEL_DEBUG; i++)
		if (strcasecmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	if (strcasecmp(s, "warning") == 0) {
		*out = LOG_LEVEL_WARN;
		return 0;
	}
	return -EINVAL;
}

void log_use_syslog(bool on, const char *ident)
{
	if (on && !to_syslog)
		openlog(ident ? ident : "numaorchd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	else if (!on && to_syslog)
		closelog();
	to_syslog = on;
}

void log_set_journal_prefix(bool on) { journal_prefix = on; }

static void vlog(enum log_level lvl, const char *suffix, const char *fmt, va_list ap)
{
	char buf[2048];
	int n;

	if (lvl > cur_level)
		return;
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		return;
	if (suffix && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, ": %s", suffix);
	if (to_syslog) {
		syslog(syslog_prio[lvl], "%s", buf);
		return;
	}
	pthread_mutex_lock(&log_lock);
	if (journal_prefix)
		fprintf(stderr, "<%d>%s\n", syslog_prio[lvl], buf);
	else
		fprintf(stderr, "numaorchd[%s]: %s\n", names[lvl], buf);
	pthread_mutex_unlock(&log_lock);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, NULL, fmt, ap);
	va_end(ap);
}

int log_errno(enum log_level lvl, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, strerror(err < 0 ? -err : err), fmt, ap);
	va_end(ap);
	return err;
}
