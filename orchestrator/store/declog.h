/* declog.h — the decision log: one JSON record per decision (moved,
 * skipped with its reason, failed, planned in a dry run), appended to a
 * JSON Lines file and kept in a bounded in-memory ring for the API.
 * Thread-safe: the engine writes, the API reads.
 */
#ifndef NUMAORCH_DECLOG_H
#define NUMAORCH_DECLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/model/plan.h"

struct declog;

/* PATH may be NULL (ring only). The file is opened for append and created
 * with mode 0640, relative to its directory, which must be owned by root
 * (or the euid) and not writable by group or others; a symlink or a
 * non-regular file in its place is refused. RING_CAP records are kept in
 * memory (>= 1). On error ERR says what is wrong with which path. */
int declog_open(const char *path, unsigned ring_cap, struct declog **out, char *err, size_t errsz);
void declog_close(struct declog *d);
/* Reopen the file (after logrotate moved it; SIGHUP). On error the old
 * file stays in use. */
int declog_reopen(struct declog *d, const char *path, char *err, size_t errsz);

/* Build a record for IT decided on SNAP. DECISION is one of "moved",
 * "failed", "skipped", "planned" (dry run / advise), "vanished", ...;
 * RES may be NULL when nothing was attempted. Caller owns the result. */
json_t *declog_make(const struct snapshot *snap, const struct plan_item *it, const char *decision,
		    const struct apply_result *res, bool dry_run);

/* One cycle's time on the engine thread, by phase: wall clock and the
 * thread's CPU time, in seconds. */
enum declog_phase { DECLOG_ACQUIRE, DECLOG_DECIDE, DECLOG_APPLY, DECLOG_RECORD, DECLOG_NR_PHASES };
struct declog_cycle_time {
	double wall_s[DECLOG_NR_PHASES];
	double cpu_s[DECLOG_NR_PHASES];
};
/* The record of cycle SEQ (decision "cycle", no guest): its engine-thread
 * time T, per phase and in total ("engine_time"). Caller owns it. */
json_t *declog_make_cycle(uint64_t seq, const struct declog_cycle_time *t, bool dry_run);

/* Stamp REC with "id" and "time", append it to the file and the ring.
 * Takes ownership of REC. Returns the id, or a negative errno if the file
 * write failed (the record is still in the ring). */
int64_t declog_add(struct declog *d, json_t *rec);
/* The records' "time": UTC with milliseconds, "2024-01-31T12:00:00.000Z".
 * Fixed width, so these strings order as the times do (GET /v1/decisions
 * ?since=TIME compares them); the API formats every time it shows so. */
void declog_time(int64_t real_ns, char *buf, size_t sz);
/* The same from seconds and milliseconds (times past 2262, which int64
 * nanoseconds cannot hold, e.g. a ?since= far in the future). */
void declog_time_sec(time_t sec, int ms, char *buf, size_t sz);

/* Records with id > SINCE_ID and a time after SINCE_MS (ms since the
 * epoch; INT64_MIN: any), for GUEST (NULL: all), at most LIMIT, oldest
 * first; only those are decoded. *MORE (may be NULL) is set when more
 * records match after them. Caller owns the array. */
json_t *declog_query(struct declog *d, uint64_t since_id, int64_t since_ms, unsigned limit, const char *guest,
		     bool *more);
/* The newest LIMIT records (of GUEST, if not NULL), oldest first. Decodes
 * only those: a guest's last decision is read on every GET of it. */
json_t *declog_query_newest(struct declog *d, unsigned limit, const char *guest);
uint64_t declog_last_id(struct declog *d);
/* Bytes the ring holds (its records, packed, and its slots) and, in
 * *NR_RECORDS (may be NULL), how many records. Any thread. */
size_t declog_bytes(struct declog *d, unsigned *nr_records);
/* The ring's packing of the JSON text of one record of GUEST (its
 * "guest"), both ways, for tests: declog_unpack_text(declog_pack_text(X,
 * G), G) == X. Caller frees. */
char *declog_pack_text(const char *json, const char *guest);
char *declog_unpack_text(const char *packed, const char *guest);

#endif
