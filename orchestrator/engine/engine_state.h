/* engine_state.h — the cool-downs and reservations (engine_state.c): the
 * policy's state between cycles, the room promised to guests about to
 * start, and both saved under the state directory. A leaf: calls no
 * other engine file. */
#ifndef NUMAORCH_ENGINE_STATE_H
#define NUMAORCH_ENGINE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/model/pstate.h"
#include "orchestrator/model/resv.h"
#include "orchestrator/store/engstate.h"

struct engine;

/* Written by engine_state.c alone, but for PS: the policy's state, which
 * the cycle hands to the policy (engine_cycle.c reads it) and in which
 * a start placement's outcome starts a cool-down (engine_place.c, by
 * engine_count_place_outcome). */
struct engine_state {
	struct pstate *ps;
	struct resv_list res;        /* room promised to guests about to start */
	/* Persistence of ps and res (engstate.h): the state directory (-1:
	 * none), realtime - monotonic of this process, and what was saved
	 * last (to write only on change). */
	int dfd;
	int64_t clock_offset_ns;
	struct pstate *saved_ps;
	uint64_t saved_res_gen;
	bool saved_once;
};

void engine_state_init(struct engine_state *st);
void engine_state_free(struct engine_state *st);
/* Save ps and res if they changed since the last save (no-op without a
 * state directory). */
void engine_save_state(struct engine *e);
/* The state directory DFD (taken) is the engine's from now. */
void engine_state_set_dir(struct engine *e, int dfd);
/* Read back the cool-downs and reservations saved under DFD (DIR: its
 * name, for the log); a file not believed is set aside and said. */
void engine_state_load(struct engine *e, int dfd, const char *dir, const struct engstate_limits *lim);
/* realtime - monotonic of this process, as the state files use it. */
int64_t engine_state_clock_offset(const struct engine *e);
/* Guest ID's last move cost what its memory job measured: its cool-down
 * is COOLDOWN_NS from that move (policy_job_cooldown; nothing if ID has no
 * cool-down). */
void engine_state_job_cost(struct engine *e, const char *id, int64_t cooldown_ns);
/* The policy's state of the next cycle is NEXT (taken). */
void engine_state_set_ps(struct engine *e, struct pstate *next);
/* The index, among the rooms engine_reservations gave, of the reservation
 * labelled with one of KEYS[0..NKEYS) (-1: none; *RV: it). Nothing
 * expires here: the indices stay those of the rooms the policy is given. */
int engine_resv_lookup(struct engine *e, const char *const *keys, unsigned nkeys, const struct resv **rv);
/* Reservation ID was taken by a start placement: it is gone. */
void engine_resv_used(struct engine *e, uint64_t id);

#endif
