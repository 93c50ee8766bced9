#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
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

/* Length of the valid UTF-8 sequence at S (1..4), or 0 if there is none
 * (a stray continuation byte, an overlong or truncated sequence). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 4 && s[0] == 0xf0 && s[1] < 0x90) ||
	    (n == 4 && s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* Does byte sequence S[0..N) need escaping: C0 controls, DEL, C1
 * controls (U+0080..U+009F, which terminals obey like ESC [), and bytes
 * that are not UTF-8. */
static bool needs_escape(const unsigned char *s, size_t n)
{
	return n == 0 || (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

size_t log_escape(const char *in, char *out, size_t outsz)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;

	if (!outsz)
		return 0;
	while (*s) {
		size_t n = utf8_len(s);

		if (needs_escape(s, n)) {
			/* One byte at a time: what follows may be fine. */
			if (o + 4 >= outsz)
				break;
			snprintf(out + o, outsz - o, "\\x%02x", s[0]);
			o += 4;
			s++;
			continue;
		}
		if (o + n >= outsz)
			break;
		memcpy(out + o, s, n);
		o += n;
		s += n;
	}
	out[o] = '\0';
	return o;
}

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
	log_escape(raw, buf, sizeof(buf));
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
