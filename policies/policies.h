/* policies.h — the pure policies' entry points. The daemon's main puts
 * them in a struct policy_ops (orchestrator/model/policy.h) and registers that
 * with the engine, which knows them only through it; tests and the
 * benchmark call them by name.
 *
 * No I/O, no clock reads, no globals: make check-layers fails if an
 * object in policies/ needs anything but pure symbols.
 */
#ifndef NUMAORCH_POLICIES_H
#define NUMAORCH_POLICIES_H

#include <stdbool.h>

#include "../orchestrator/model/hold.h"
#include "../orchestrator/model/plan.h"
#include "../orchestrator/model/policy.h"
#include "../orchestrator/model/pstate.h"
#include "../orchestrator/model/snapshot.h"

/* Decide (consolidate.c). PREV may be NULL (first cycle). On success
 * *plan and *next are the caller's (plan_free, pstate_free). Guests that
 * are settled get no plan item unless verbose is set (dry-run shows
 * everything). *next holds PREV's entries of the guests in SNAP, nothing
 * more: a cool-down is noted for a move carried out (the engine's record
 * step; a simulation that carries out every planned move calls
 * plan_note_cooldowns). Returns 0 or -EINVAL (bad config). */
int policy_decide(const struct policy_config *cfg, const struct snapshot *snap,
		  const struct pstate *prev, bool verbose,
		  struct plan **plan, struct pstate **next);
/* The same, with RES[NRES] counted as taken: no guest is moved into room
 * promised to a guest about to start; and each item held back by the
 * cycle's facts HOLDS (may be NULL) and SNAP's live jobs marked so
 * (plan_mark_holds). The engine's (policy_ops.decide). */
int policy_decide_reserved(const struct policy_config *cfg, const struct snapshot *snap,
			   const struct pstate *prev, bool verbose,
			   const struct advice_reservation *res, unsigned nres,
			   const struct plan_holds *holds,
			   struct plan **plan, struct pstate **next);

/* Fewest, least-busy nodes with room for REQ (advise.c). 0 with out->ok
 * false when nothing fits (out->detail says why); -EINVAL on a bad
 * request. */
int policy_advise(const struct policy_config *cfg, const struct snapshot *snap,
		  const struct advice_request *req, struct advice *out);

/* Where a guest that just started goes (place.c): on the nodes its
 * reservation promised (exactly where the advice put it when that is
 * known, else asked again of the advice within the reserved nodes), else
 * on its pinned nodes, else where policy_advise() says, the other
 * reservations counted as load. A guest whose policy says ignore is not
 * placed (its reservation is not consumed); nothing that fits, or no
 * usable CPU or memory within its allowed sets, is a skip. OUT->item is
 * filled either way; OUT->item.to_cpus points at OUT->cpus. 0, or
 * -ENOENT if REQ->guest_id is not in SNAP. */
int policy_place(const struct policy_config *cfg, const struct snapshot *snap,
		 const struct place_request *req, struct place_result *out);

/* The start placements of the VMs H says just started (place.c), each by
 * policy_place in turn, its own reservation (start_vm.room) given back
 * and the others of RES[NRES] counted as load — but not one an earlier
 * start took. *ITEMS (the caller frees, each to_cpus too) gets one item
 * per VM in SNAP (vm_start, resv_used), *N their number; USED[NRES] is
 * set for each reservation taken. */
void place_starts(const struct policy_config *cfg, const struct snapshot *snap, const struct plan_holds *h,
		  const struct advice_reservation *res, unsigned nres, bool *used, struct plan_item **items,
		  unsigned *n);
/* ITEMS[N] put into P, each in place of its guest's item (the one the
 * policy decided without knowing of the start) or after the others; they
 * are P's now (to_cpus included). */
void place_starts_splice(struct plan *p, struct plan_item *items, unsigned n);

/* A container's start placement (place.c), for policy_decide: a guest
 * seen first with less memory than this is placed at once, as if it used
 * PLACE_START_CPU, and needs room for this much on its target. */
#define PLACE_START_MAX_BYTES (128ULL << 20)
#define PLACE_START_CPU 1.0
/* Is G placeable at its start? Then *SG is G as decided on: the assumed
 * use, and no memory (what it holds is little: no share of it is worth
 * weighing as migration, and no "local fit" holds it where its first
 * pages happen to be). */
bool place_start_placeable(const struct snap_guest *g, struct snap_guest *sg);
/* IT, the move decided for G's stand-in, made G's start placement:
 * reason "place", no cool-down (plan_item.start), its mems bound if CFG
 * says so (plan_item.bind_start), the memory G holds off the target to
 * migrate, and the detail saying so. */
void place_start_item(const struct policy_config *cfg, const struct snapshot *snap, const struct snap_guest *g,
		      struct plan_item *it);

#endif
