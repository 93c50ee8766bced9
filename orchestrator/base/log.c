#include "orchestrator/base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <pthread.h>

#include "orchestrator/base/utf8.h"
#include "orchestrator/base/strtab.h"

static enum log_level cur_level = LOG_LEVEL_INFO;
static bool to_syslog;
static bool journal_prefix;
/* Set once stderr's reader is gone (EPIPE): later lines go to syslog
 * instead of failing on a closed pipe one by one. */
static bool stderr_gone;
/* Whole lines from several threads (engine, API) must not interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const names[] = { "error", "warn", "info", "debug" };
static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level lvl) { cur_level = lvl; }
enum log_level log_get_level(void) { return cur_level; }

STRTAB_NAME(log_level_name, enum log_level, names)

static STRTAB_PARSE_ICASE(level_parse, enum log_level, names)

int log_level_parse(const char *s, enum log_level *out)
{
	/* "warning" is syslog's spelling of "warn". */
	return level_parse(s && strcasecmp(s, "warning") == 0 ? "warn" : s, out);
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
	char buf[2048 * 4];
	int n;
	char raw[2048];

	if (lvl > cur_level)
		return;
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	if (n < 0)
		return;
	if (suffix && (size_t)n < sizeof(raw))
		snprintf(raw + n, sizeof(raw) - (size_t)n, ": %s", suffix);
	/* Messages carry names from the host (cgroups, domains): a control
	 * character in one must not reach a terminal or split a journal
	 * line. */
	utf8_escape(raw, buf, sizeof(buf));
	if (to_syslog) {
		syslog(syslog_prio[lvl], "%s", buf);
		return;
	}
	pthread_mutex_lock(&log_lock);
	if (!stderr_gone) {
		int w;

		if (journal_prefix)
			w = fprintf(stderr, "<%d>%s\n", syslog_prio[lvl], buf);
		else
			w = fprintf(stderr, "numaorchd[%s]: %s\n", names[lvl], buf);
		if (w < 0 && errno == EPIPE) {
			/* Once, not retried: a closed pipe stays closed. */
			stderr_gone = true;
			openlog("numaorchd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
			syslog(LOG_WARNING, "stderr is a broken pipe; logging to syslog from now on");
		}
		clearerr(stderr);
	}
	if (stderr_gone)
		syslog(syslog_prio[lvl], "%s", buf);
	pthread_mutex_unlock(&log_lock);
}

bool log_stderr_gone(void)
{
	bool gone;

	pthread_mutex_lock(&log_lock);
	gone = stderr_gone;
	pthread_mutex_unlock(&log_lock);
	return gone;
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

/* ---- the same warning every cycle ----------------------------------- */

struct log_seen {
	char *msg;
	unsigned rounds;   /* consecutive rounds it was in */
};

struct log_repeat {
	struct log_seen *v;
	unsigned n;
};

struct log_repeat *log_repeat_new(void)
{
	struct log_repeat *r = calloc(1, sizeof(*r));

	if (!r)
		abort(); /* the project's OOM policy */
	return r;
}

static void seen_free(struct log_seen *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i].msg);
	free(v);
}

void log_repeat_free(struct log_repeat *r)
{
	if (!r)
		return;
	seen_free(r->v, r->n);
	free(r);
}

static bool power_of_ten(unsigned x)
{
	while (x >= 10 && x % 10 == 0)
		x /= 10;
	return x == 1;
}

void log_repeat_round(struct log_repeat *r, enum log_level lvl, char *const *msgs, unsigned n)
{
	struct log_seen *nv = calloc(n ? n : 1, sizeof(*nv));
	unsigned nn = 0;

	if (!nv)
		abort();
	for (unsigned i = 0; i < n; i++) {
		struct log_seen *was = NULL;
		bool dup = false;

		for (unsigned k = 0; k < nn && !dup; k++)
			dup = strcmp(nv[k].msg, msgs[i]) == 0;
		if (dup)
			continue;
		for (unsigned k = 0; k < r->n && !was; k++)
			if (r->v[k].msg && strcmp(r->v[k].msg, msgs[i]) == 0)
				was = &r->v[k];
		if (was) {
			nv[nn].msg = was->msg;
			nv[nn].rounds = was->rounds + 1;
			was->msg = NULL;
			/* Now and then, so a long-standing problem is not
			 * forgotten: after 10, 100, 1000, ... cycles. */
			if (power_of_ten(nv[nn].rounds))
				log_msg(lvl, "%s (the same in each of the last %u cycles)", nv[nn].msg,
					nv[nn].rounds);
		} else {
			nv[nn].msg = strdup(msgs[i]);
			if (!nv[nn].msg)
				abort();
			nv[nn].rounds = 1;
			log_msg(lvl, "%s", msgs[i]);
		}
		nn++;
	}
	for (unsigned k = 0; k < r->n; k++)
		if (r->v[k].msg && r->v[k].rounds > 1)
			log_msg(LOG_LEVEL_INFO, "no longer: %s (it was there for %u cycles)", r->v[k].msg,
				r->v[k].rounds);
	seen_free(r->v, r->n);
	r->v = nv;
	r->n = nn;
}
