/* schedule.h — rebalancing windows: days and hours during which some
 * settings differ (advise mode in business hours, heavy migration at
 * night). Pure: the caller passes the local time.
 *
 * One entry per config line:
 *
 *   window = DAYS HH:MM-HH:MM KEY=VALUE [KEY=VALUE ...]
 *
 * DAYS: "*", or days and ranges "Mon-Fri", "Sat,Sun", "Fri-Mon" (wraps).
 * HH:MM-HH:MM: local time, end exclusive, "24:00" allowed as an end; an
 * end before the start runs past midnight into the next day (a window
 * "Fri 22:00-06:00" lasts until Saturday 06:00).
 * KEYs: mode, interval, max_moves, max_migrate_mib, cooldown, rate_mib
 * (the memory mover's MiB/s budget for the host, 0: no limit).
 * Where windows overlap, later entries win for the keys they set.
 */
#ifndef NUMAORCH_SCHEDULE_H
#define NUMAORCH_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/model/mode.h"

/* An operator's schedule is a handful of lines; bounded so the API can
 * show and take it as a whole. */
#define SCHED_MAX_ENTRIES 32
#define SCHED_TEXT_MAX 160

enum sched_key {
	SCHED_MODE = 1u << 0,
	SCHED_INTERVAL = 1u << 1,
	SCHED_MAX_MOVES = 1u << 2,
	SCHED_MAX_MIGRATE = 1u << 3,
	SCHED_COOLDOWN = 1u << 4,
	SCHED_RATE = 1u << 5,
};

/* max_moves, max_migrate_mib and cooldown may be "auto" (policy.h's
 * auto settings): these values say so. */
#define SCHED_AUTO_MOVES 0u
#define SCHED_AUTO_MIGRATE UINT64_MAX
#define SCHED_AUTO_COOLDOWN (-1)

struct sched_values {
	unsigned set;              /* enum sched_key bits */
	enum agent_mode mode;
	double interval_s;
	unsigned max_moves;        /* or SCHED_AUTO_MOVES */
	uint64_t max_migrate_bytes; /* or SCHED_AUTO_MIGRATE */
	int64_t cooldown_ns;       /* or SCHED_AUTO_COOLDOWN */
	double rate_mib;           /* MiB/s, 0: no limit */
};

struct sched_entry {
	uint8_t days;              /* bit 0 = Sunday (struct tm's tm_wday) */
	uint16_t start_min, end_min; /* minutes of the day; end may be 1440 */
	struct sched_values v;
	char *text;                /* the entry as written, for status */
};

struct schedule {
	unsigned n;
	struct sched_entry *e;
};

/* Parse one entry; 0, or -EINVAL with ERR saying what is wrong. */
int sched_parse(const char *text, struct sched_entry *out, char *err, size_t errsz);
/* Free the entry's members (its text); E itself is the caller's. */
void sched_entry_clear(struct sched_entry *e);
void sched_add(struct schedule *s, const struct sched_entry *e); /* takes e's text */
/* Free the entries; S itself is the caller's (empty after). */
void sched_clear(struct schedule *s);
void sched_copy(struct schedule *dst, const struct schedule *src);

/* true if entry E is active at local weekday WDAY (0 = Sunday), minute of
 * the day MIN (0..1439). */
bool sched_active(const struct sched_entry *e, int wday, int min);

/* The overrides in force at WDAY/MIN: each key from the last active entry
 * that sets it. *ACTIVE (may be NULL) gets a bitmask of active entries
 * (entry i → bit i, first 64). */
void sched_effective(const struct schedule *s, int wday, int min, struct sched_values *out,
		     uint64_t *active);

#endif
