/* engine_record.h — how a move's outcome is logged, named in its record
 * and counted (engine_record.c). A leaf with no state: calls no other
 * engine file. */
#ifndef NUMAORCH_ENGINE_RECORD_H
#define NUMAORCH_ENGINE_RECORD_H

#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/model/conflict.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/model/pstate.h"

/* The record's decision for a move that ended as ST ("moved", "failed",
 * "not_applicable", "skipped"). */
const char *engine_move_decision(enum apply_status st);
/* The log line of planned move IT on SNAP: RES its outcome, or NULL (a
 * move planned, not carried out). */
void engine_log_move(const struct snapshot *snap, const struct plan_item *it, const struct apply_result *res);
/* Count the outcome STATUS of planned move IT in ST, and note its
 * cool-down at NOW_NS in NEXT (may be NULL: none noted) where the outcome
 * keeps one: a move made, refused or failed (retrying every cycle would
 * only hammer the cgroup), or one libvirt cannot do (asking again would
 * only repeat the refusal). A move not carried out for a normal reason
 * (vanished, changed, no room) starts none. Pure. */
void engine_count_outcome(struct engine_stats *st, struct pstate *next, const struct plan_item *it,
			  enum apply_status status, int64_t now_ns);
/* Count a start placement's outcome: done or failed starts the guest's
 * cool-down in PS at NOW_NS (so the policy leaves it alone until its use
 * is measured, and a refused write is not retried at once); a skip
 * (vanished, changed, no room) does not. Pure. */
void engine_count_place_outcome(struct engine_stats *st, struct pstate *ps, const struct plan_item *it,
				enum apply_status status, int64_t now_ns);
/* The decision record "conflict" of guest G on SNAP, rewritten by PLACER
 * ("kubelet", "unknown") after the agent's write that X keeps (what was
 * written, what was found), and its log line. Caller owns the result. */
json_t *engine_conflict_record(const struct snapshot *snap, const struct snap_guest *g,
			       const struct conflict_entry *x, const char *placer);

#endif
