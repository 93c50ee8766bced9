/* engine_record.c — how a move's outcome reads: its log line, its
 * record's decision, and what it counts (and whether it starts a
 * cool-down). Pure but for the log. */
#include "orchestrator/engine/engine_record.h"

#include <jansson.h>
#include <string.h>

#include "orchestrator/base/log.h"

const char *engine_move_decision(enum apply_status st)
{
	switch (st) {
	case APPLY_DONE: return "moved";
	case APPLY_FAILED:
	case APPLY_FAILED_PARTIAL:
	case APPLY_REFUSED: return "failed";
	case APPLY_NOT_APPLICABLE: return "not_applicable";
	default: return "skipped";
	}
}

void engine_log_move(const struct snapshot *snap, const struct plan_item *it,
		     const struct apply_result *res)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	char from[NODELIST_BUFSZ], to[NODELIST_BUFSZ], mems[NODELIST_BUFSZ];

	mask_format(&it->from_nodes, from, sizeof(from));
	mask_format(&it->to_nodes, to, sizeof(to));
	mask_format(&it->to_mems, mems, sizeof(mems));
	if (!res) {
		log_info("would move %s (%s) nodes %s -> %s mems %s: %s", it->guest_id, g->runtime,
			 from, to, mems, it->detail);
		return;
	}
	if (res->status == APPLY_DONE && res->mems_loosened &&
	    !mask_equal(&res->mems_after, &it->to_mems)) {
		/* Soft binding: the memory goes to the plan's nodes, the
		 * cgroup's mems stay wider; say both, or the line claims mems
		 * the agent never wrote (the record has them as mems_after). */
		char now[NODELIST_BUFSZ];

		mask_format(&res->mems_after, now, sizeof(now));
		log_info("moved %s (%s) nodes %s -> %s, memory to %s, mems %s in %.2fs: %s", it->guest_id,
			 g->runtime, from, to, mems, now, res->duration_s, it->detail);
	} else if (res->status == APPLY_DONE)
		log_info("moved %s (%s) nodes %s -> %s mems %s in %.2fs: %s", it->guest_id, g->runtime,
			 from, to, mems, res->duration_s, it->detail);
	else if (res->status == APPLY_FAILED || res->status == APPLY_FAILED_PARTIAL ||
		 res->status == APPLY_REFUSED)
		log_error("moving %s (%s) nodes %s -> %s failed: %s", it->guest_id, g->runtime, from, to,
			  res->msg);
	else
		log_info("not moving %s (%s): %s", it->guest_id, g->runtime, res->msg);
}

void engine_count_outcome(struct engine_stats *st, struct pstate *next, const struct plan_item *it,
			  enum apply_status status, int64_t now_ns)
{
	switch (status) {
	case APPLY_DONE:
		st->moves++;
		st->migrated_bytes += it->migrate_bytes;
		break;
	case APPLY_FAILED:
	case APPLY_FAILED_PARTIAL:
	case APPLY_REFUSED:
		/* A cool-down: retrying a refused write every cycle would
		 * only hammer the cgroup. */
		st->move_failures++;
		break;
	case APPLY_NOT_APPLICABLE:
		/* libvirt refuses this kind of change (its numatune):
		 * asking every cycle would only repeat the refusal. */
		st->moves_skipped++;
		break;
	default:
		/* Nothing was carried out: no cool-down. */
		st->moves_skipped++;
		return;
	}
	if (next)
		plan_item_note_cooldown(it, next, now_ns);
}

void engine_count_place_outcome(struct engine_stats *st, struct pstate *ps, const struct plan_item *it,
				enum apply_status status, int64_t now_ns)
{
	switch (status) {
	case APPLY_DONE:
		st->moves++;
		st->migrated_bytes += it->migrate_bytes;
		pstate_note_move(ps, it->guest_id, now_ns);
		break;
	case APPLY_FAILED:
	case APPLY_FAILED_PARTIAL:
	case APPLY_REFUSED:
		st->move_failures++;
		pstate_note_move(ps, it->guest_id, now_ns);
		break;
	default:
		st->moves_skipped++;
		return;
	}
	pstate_note_cooldown(ps, it->guest_id, it->cooldown_ns);
}

static json_t *cpuset_json(const cpumask_t *cpus, const nodemask_t *mems)
{
	char c[CPULIST_BUFSZ], m[NODELIST_BUFSZ];

	if (mask_format(cpus, c, sizeof(c)) < 0)
		snprintf(c, sizeof(c), "?");
	if (mask_format(mems, m, sizeof(m)) < 0)
		snprintf(m, sizeof(m), "?");
	return json_pack("{s:s, s:s}", "cpus", c, "mems", m);
}

json_t *engine_conflict_record(const struct snapshot *snap, const struct snap_guest *g,
			       const struct conflict_entry *x, const char *placer)
{
	char detail[256];
	json_t *o;

	snprintf(detail, sizeof(detail), "rewritten by another placer (%s): its cpuset is left as found and "
		 "not moved again until it changes", strcmp(placer, "kubelet") == 0 ? "the kubelet" : "unknown");
	o = json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:b}",
		      "cycle", (json_int_t)snap->seq,
		      "guest", g->id,
		      "decision", "conflict",
		      "placer", placer,
		      "wrote", cpuset_json(&x->wrote_cpus, &x->wrote_mems),
		      "found", cpuset_json(&x->found_cpus, &x->found_mems),
		      "runtime", g->runtime,
		      "kind", snap_kind_name(g->kind),
		      "detail", detail,
		      "dry_run", false);
	if (!o)
		return NULL;
	log_warn("%s (%s): numaorchd moved it onto CPUs %s, found on CPUs %s: %s", g->id, g->runtime,
		 json_string_value(json_object_get(json_object_get(o, "wrote"), "cpus")),
		 json_string_value(json_object_get(json_object_get(o, "found"), "cpus")), detail);
	return o;
}
