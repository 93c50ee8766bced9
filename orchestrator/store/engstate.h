/* engstate.h — the engine's state that survives a restart: each guest's
 * last move (its cool-down and its length, struct pstate) and the
 * reservations, as JSON.
 * The engine writes it atomically under the state directory (engine.c:
 * engine_use_state_dir) whenever it changes, and reads it at start.
 *
 * Times in the engine are CLOCK_MONOTONIC; on disk they are CLOCK_REALTIME
 * (a reboot restarts the monotonic clock). OFFSET_NS = realtime −
 * monotonic of the process converts both ways; taken once per process so
 * that an unchanged state gives the same text. Pure.
 */
#ifndef NUMAORCH_ENGSTATE_H
#define NUMAORCH_ENGSTATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/model/pstate.h"
#include "orchestrator/model/resv.h"

#define ENGSTATE_FILE "engine-state.json"

/* What a saved state may hold on this host: a reservation's CPUs and
 * bytes at most the host's (0: not known; then the API's own caps,
 * MASK_MAX_CPUS and 2^30 MiB). Times at most ENGSTATE_AHEAD_S ahead of
 * now (the longest reservation the API grants), none before the epoch. */
struct engstate_limits {
	double cpus;
	uint64_t mem_bytes;
};
#define ENGSTATE_AHEAD_S 86400
/* A guest's cool-down length (pstate_entry.cooldown_ns, optional: a state
 * saved before it was kept loads without) at most this: [policy]
 * cooldown's own bound. */
#define ENGSTATE_COOLDOWN_MAX_S (86400 * 7)

/* The state as JSON (caller owns). */
json_t *engstate_to_json(const struct pstate *ps, const struct resv_list *rl, int64_t offset_ns);
/* Read J into a new *PS (pstate_free) and into RL (appended with
 * resv_restore; RL's next id goes past every id the saved run gave);
 * reservations that expired by NOW_MONO_NS are left out. LIM (may be
 * NULL: the caps alone) bounds what is believed: a value past it makes
 * the whole state -EINVAL, as a malformed one.
 * 0, or -EINVAL with ERR saying what is wrong (nothing is written then). */
int engstate_from_json(const json_t *j, int64_t offset_ns, int64_t now_mono_ns, const struct engstate_limits *lim,
		       struct pstate **ps, struct resv_list *rl, char *err, size_t errsz);

#endif
