#include "orchestrator/store/schedule.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "orchestrator/base/parse.h"
#include "orchestrator/base/xalloc.h"

static const char *const day_names[7] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };

static int day_parse(const char *s, size_t n)
{
	for (int i = 0; i < 7; i++)
		if (n == 3 && strncasecmp(s, day_names[i], 3) == 0)
			return i;
	return -1;
}

static int parse_days(const char *s, uint8_t *out, char *err, size_t errsz)
{
	uint8_t days = 0;

	if (strcmp(s, "*") == 0) {
		*out = 0x7f;
		return 0;
	}
	for (const char *p = s; *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *dash = memchr(p, '-', len);
		int a, b;

		if (dash) {
			a = day_parse(p, (size_t)(dash - p));
			b = day_parse(dash + 1, len - (size_t)(dash - p) - 1);
		} else {
			a = b = day_parse(p, len);
		}
		if (a < 0 || b < 0) {
			snprintf(err, errsz, "days \"%s\": use *, Mon..Sun, ranges like Mon-Fri, lists like Sat,Sun", s);
			return -EINVAL;
		}
		for (int d = a;; d = (d + 1) % 7) {
			days |= (uint8_t)(1u << d);
			if (d == b)
				break;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	*out = days;
	return 0;
}

static int parse_hhmm(const char *s, size_t n, bool end, uint16_t *out)
{
	unsigned h, m;
	char buf[8];

	if (n != 5 || s[2] != ':')
		return -EINVAL;
	memcpy(buf, s, 5);
	buf[5] = '\0';
	if (sscanf(buf, "%2u:%2u", &h, &m) != 2 || m > 59 || h > 24 || (h == 24 && (m || !end)))
		return -EINVAL;
	*out = (uint16_t)(h * 60 + m);
	return 0;
}

static int parse_kv(const char *kv, struct sched_values *v, char *err, size_t errsz)
{
	const char *eq = strchr(kv, '=');
	const char *val = eq ? eq + 1 : NULL;
	size_t klen = eq ? (size_t)(eq - kv) : 0;
	uint64_t u;
	double d;

#define KEY(name) (klen == strlen(name) && strncmp(kv, name, klen) == 0)
	if (!eq || !*val) {
		snprintf(err, errsz, "\"%s\": expected KEY=VALUE", kv);
		return -EINVAL;
	}
	if (KEY("mode")) {
		enum agent_mode m;

		if (agent_mode_parse(val, &m) < 0) {
			snprintf(err, errsz, "mode: must be enforce, advise or off, got \"%s\"", val);
			return -EINVAL;
		}
		v->mode = m;
		v->set |= SCHED_MODE;
	} else if (KEY("interval")) {
		if (parse_double(val, &d) < 0 || d < 0.1 || d > 86400) {
			snprintf(err, errsz, "interval: must be seconds 0.1..86400, got \"%s\"", val);
			return -EINVAL;
		}
		v->interval_s = d;
		v->set |= SCHED_INTERVAL;
	} else if (KEY("max_moves")) {
		if (strcmp(val, "auto") == 0) {
			u = SCHED_AUTO_MOVES;
		} else if (parse_u64(val, &u) < 0 || u < 1 || u > 10000) {
			snprintf(err, errsz, "max_moves: must be auto or an integer 1..10000, got \"%s\"", val);
			return -EINVAL;
		}
		v->max_moves = (unsigned)u;
		v->set |= SCHED_MAX_MOVES;
	} else if (KEY("max_migrate_mib")) {
		if (strcmp(val, "auto") == 0) {
			v->max_migrate_bytes = SCHED_AUTO_MIGRATE;
		} else if (parse_u64(val, &u) < 0 || u > (1ULL << 30)) {
			snprintf(err, errsz, "max_migrate_mib: must be auto or an integer of MiB, got \"%s\"", val);
			return -EINVAL;
		} else {
			v->max_migrate_bytes = u << 20;
		}
		v->set |= SCHED_MAX_MIGRATE;
	} else if (KEY("cooldown")) {
		if (strcmp(val, "auto") == 0) {
			v->cooldown_ns = SCHED_AUTO_COOLDOWN;
		} else if (parse_double(val, &d) < 0 || d < 0 || d > 604800) {
			snprintf(err, errsz, "cooldown: must be auto or seconds 0..604800, got \"%s\"", val);
			return -EINVAL;
		} else {
			v->cooldown_ns = (int64_t)(d * 1e9);
		}
		v->set |= SCHED_COOLDOWN;
	} else if (KEY("rate_mib")) {
		/* the same range as [memory] rate_mib */
		if (parse_double(val, &d) < 0 || d < 0 || d > 1048576) {
			snprintf(err, errsz, "rate_mib: must be MiB/s 0..1048576 (0: no limit), got \"%s\"", val);
			return -EINVAL;
		}
		v->rate_mib = d;
		v->set |= SCHED_RATE;
	} else {
		snprintf(err, errsz,
			 "unknown setting \"%.*s\" (mode, interval, max_moves, max_migrate_mib, cooldown, rate_mib)",
			 (int)klen, kv);
		return -EINVAL;
	}
#undef KEY
	return 0;
}

int sched_parse(const char *text, struct sched_entry *out, char *err, size_t errsz)
{
	char *copy = xstrdup(text), *save = NULL, *tok;
	struct sched_entry e;
	const char *dash;
	int r = -EINVAL;

	memset(&e, 0, sizeof(e));
	if (strlen(text) > SCHED_TEXT_MAX) {
		snprintf(err, errsz, "a window is at most %d characters", SCHED_TEXT_MAX);
		goto out;
	}
	tok = strtok_r(copy, " \t", &save);
	if (!tok) {
		snprintf(err, errsz, "empty window: expected DAYS HH:MM-HH:MM KEY=VALUE...");
		goto out;
	}
	if (parse_days(tok, &e.days, err, errsz) < 0)
		goto out;
	tok = strtok_r(NULL, " \t", &save);
	dash = tok ? strchr(tok, '-') : NULL;
	if (!dash || parse_hhmm(tok, (size_t)(dash - tok), false, &e.start_min) < 0 ||
	    parse_hhmm(dash + 1, strlen(dash + 1), true, &e.end_min) < 0) {
		snprintf(err, errsz, "hours \"%s\": expected HH:MM-HH:MM (24-hour, local time)", tok ? tok : "");
		goto out;
	}
	if (e.start_min == e.end_min) {
		snprintf(err, errsz, "hours \"%s\": empty window (use 00:00-24:00 for a whole day)", tok);
		goto out;
	}
	while ((tok = strtok_r(NULL, " \t", &save)))
		if (parse_kv(tok, &e.v, err, errsz) < 0)
			goto out;
	if (!e.v.set) {
		snprintf(err, errsz, "a window must change at least one setting (mode=, max_migrate_mib=, ...)");
		goto out;
	}
	e.text = xstrdup(text);
	*out = e;
	r = 0;
out:
	free(copy);
	return r;
}

void sched_entry_clear(struct sched_entry *e)
{
	if (e) {
		free(e->text);
		e->text = NULL;
	}
}

void sched_add(struct schedule *s, const struct sched_entry *e)
{
	s->e = xrealloc(s->e, (s->n + 1) * sizeof(*s->e));
	s->e[s->n++] = *e;
}

void sched_clear(struct schedule *s)
{
	for (unsigned i = 0; i < s->n; i++)
		sched_entry_clear(&s->e[i]);
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

void sched_copy(struct schedule *dst, const struct schedule *src)
{
	dst->n = 0;
	dst->e = NULL;
	for (unsigned i = 0; i < src->n; i++) {
		struct sched_entry e = src->e[i];

		e.text = xstrdup(src->e[i].text);
		sched_add(dst, &e);
	}
}

bool sched_active(const struct sched_entry *e, int wday, int min)
{
	int prev = (wday + 6) % 7;

	if (wday < 0 || wday > 6 || min < 0 || min >= 1440)
		return false;
	if (e->start_min < e->end_min)
		return (e->days >> wday & 1) && min >= e->start_min && min < e->end_min;
	/* Past midnight: the part after the start belongs to the start day,
	 * the part before the end to the day after it. */
	return ((e->days >> wday & 1) && min >= e->start_min) ||
	       ((e->days >> prev & 1) && min < e->end_min);
}

void sched_effective(const struct schedule *s, int wday, int min, struct sched_values *out,
		     uint64_t *active)
{
	memset(out, 0, sizeof(*out));
	if (active)
		*active = 0;
	for (unsigned i = 0; s && i < s->n; i++) {
		const struct sched_values *v = &s->e[i].v;

		if (!sched_active(&s->e[i], wday, min))
			continue;
		if (active && i < 64)
			*active |= 1ULL << i;
		if (v->set & SCHED_MODE)
			out->mode = v->mode;
		if (v->set & SCHED_INTERVAL)
			out->interval_s = v->interval_s;
		if (v->set & SCHED_MAX_MOVES)
			out->max_moves = v->max_moves;
		if (v->set & SCHED_MAX_MIGRATE)
			out->max_migrate_bytes = v->max_migrate_bytes;
		if (v->set & SCHED_COOLDOWN)
			out->cooldown_ns = v->cooldown_ns;
		if (v->set & SCHED_RATE)
			out->rate_mib = v->rate_mib;
		out->set |= v->set;
	}
}
