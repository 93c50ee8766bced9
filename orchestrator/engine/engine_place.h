/* engine_place.h — start placement, the conductor's half
 * (engine_place.c): a VM placed as it starts, a container's start
 * binding recorded, written, released. Calls engine_jobs.c (a binding's
 * write on a worker), engine_bind.c, engine_state.c (reservations) and
 * engine_record.c. */
#ifndef NUMAORCH_ENGINE_PLACE_H
#define NUMAORCH_ENGINE_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/engine/engine_jobs.h"
#include "orchestrator/model/hold.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

struct engine;

/* Guests this cycle's start placement dealt with before the plan is
 * carried out: VMs placed, bindings from before a restart released.
 * Written and read by engine_place.c alone (engine_place_handled). */
struct engine_placest {
	unsigned n;
	char (*started)[GUEST_ID_MAX];
	int64_t *event_ns;   /* when its start was seen; INT64_MIN: a binding released */
};

void engine_place_free(struct engine_placest *pl);
/* The domains that just started, as the policy's input (*OUT, the caller
 * frees; returned: their number), each with the reservation made for it
 * (its index among the rooms engine_reservations gave just before,
 * which must not change until the policy has decided); they are handled (engine_place_handled).
 * None when not placing them. */
unsigned engine_place_starting(struct engine *e, const struct snapshot *snap, struct start_vm **out);
/* After the policy decided: the reservations PLAN's VM start placements
 * took are gone, whether or not the plan is carried out. */
void engine_place_taken(struct engine *e, const struct plan *plan);
/* A VM start placement's outcome RES says how long after its start it
 * came. */
void engine_place_said(const struct engine *e, const struct plan_item *it, struct apply_result *res);
/* An applying cycle, before the policy decides: the bindings from before
 * a restart released (their guests handled: the plan holds their items,
 * HOLD_JUST_PLACED). */
void engine_place_restore(struct engine *e, const struct snapshot *snap);
/* An applying cycle, before its plan is carried out: each of PLAN's start
 * bindings recorded, on disk, before its write. */
void engine_place_begin(struct engine *e, const struct snapshot *snap, const struct plan *plan);
/* Did this cycle's start placement deal with guest ID already (placed,
 * or its old binding released)? The plan saw it where it was before: its
 * item waits for the next cycle. */
bool engine_place_handled(const struct engine *e, const char *id);
/* Phase 2 of a start placement as decided: a VM's (libvirt's one call),
 * or a bound container's write on a mover worker (plan_item.bind_start,
 * its way MEM_WAY_BIND_WRITE; its other ways are every move's,
 * memory_phase). */
enum phase_end engine_place_memory(struct engine *e, struct apply_pending *p, struct apply_result *res);
/* The end of every cycle: the intents whose writes were not made
 * dropped, the bindings that are due released, the set saved. */
void engine_place_end(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply);

#endif
