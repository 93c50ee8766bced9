/* engine_bind.h — start bindings (engine_bind.c): the set of young
 * containers whose mems a start placement bound, saved under the state
 * directory, released when due. Calls engine_view.c (the last snapshot,
 * at a stop) and engine_state.c (the state directory). */
#ifndef NUMAORCH_ENGINE_BIND_H
#define NUMAORCH_ENGINE_BIND_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/model/bindrule.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

struct engine;

#define ENGINE_BIND_CYCLE_S 2.0
/* (the release rule's limits, model/bindrule.h) */
#define ENGINE_BIND_MAX_S BIND_MAX_S
#define ENGINE_BIND_START_S BIND_START_S

/* Guests whose mems a start placement bound (plan_item.bind_start):
 * released (widened to WIDE ∪ their mems) once their memory stops
 * growing (having grown once), their node runs short of room, or
 * ENGINE_BIND_MAX_S pass. While any is bound, cycles come every
 * ENGINE_BIND_CYCLE_S (engine_binds_waiting). The set is written to the
 * state directory (bindstate.h) whenever it changes, so that a binding
 * never outlives the agent: released at a clean stop
 * (engine_release_bindings), taken back at start. Written and read by
 * engine_bind.c alone. */
struct engine_binds {
	unsigned n, cap;
	struct ebound {
		char id[GUEST_ID_MAX];
		char *cgroup;          /* its cgroup when bound (owned) */
		nodemask_t wide;       /* its mems before the placement */
		nodemask_t bound;      /* the mems it is bound to */
		uint64_t mem;          /* its memory at the last look */
		/* Its memory grew at a look since it was bound: it has begun
		 * its first touches, so a look without growth means they are
		 * done. Until then it is starting (exec, set-up), not done. */
		bool grew;
		int64_t since_ns;      /* CLOCK_MONOTONIC of the placement */
		bool intent;           /* recorded before its write, not yet made */
		bool restored;         /* read back from before a restart */
		/* An intent whose write a mover job runs (engine_jobs.c):
		 * kept, neither dropped nor released, until the job is taken. */
		bool writing;
	} *v;
	bool dirty;      /* the set changed since it was last written */
};

void engine_binds_free(struct engine_binds *bs);
/* Is a binding waiting for its release (one made by this run: one read
 * back from before a restart waits for an applying cycle instead)? */
bool engine_binds_waiting(const struct engine *e);
/* Before a bind_start move's write: the binding recorded
 * (engine_save_bindings writes it) as an intent; after it: made
 * (engine_bound_add), or dropped with the other intents left
 * (engine_bound_drop_intents). */
void engine_bound_intend(struct engine *e, const struct snapshot *snap, const struct plan_item *it);
void engine_bound_add(struct engine *e, const struct snapshot *snap, const struct plan_item *it);
void engine_bound_drop_intents(struct engine *e);
/* The binding of guest ID: its write handed to a mover job (WRITING
 * true), or that job taken (false: dropped if still an intent). */
void engine_bound_writing(struct engine *e, const char *id, bool writing);
/* An applying cycle's first step: release each binding read back from
 * before a restart whose guest is still bound exactly so (cgroup and
 * mems as recorded); drop, logged, those whose guest is gone or whose
 * mems someone else changed. *RELEASED (free) gets the guests released:
 * the plan's items for them wait for the next cycle. Returns their
 * number. */
unsigned engine_restore_bound(struct engine *e, const struct snapshot *snap, char (**released)[GUEST_ID_MAX]);
/* End of a cycle: release the start bindings that are due (their guests'
 * mems widened again, soft binding), on SNAP; guests PLAN moved this
 * cycle are looked at next cycle. */
void engine_release_bound(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply);
/* Write the start bindings (bindstate.h) if they changed; a failure is
 * logged (the set stays dirty: written again next time). */
void engine_save_bindings(struct engine *e);
/* Take back the start bindings saved under the state directory DFD
 * (engine_use_state_dir); a bad file is logged and set aside. */
void engine_load_bindings(struct engine *e, int dfd, const char *dir);

#endif
