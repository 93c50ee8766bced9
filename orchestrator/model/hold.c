/* hold.c — the holds of a plan's items (hold.h). Calls nothing of the
 * model's other files: the mover's benchmark links it alone
 * (mover_job_same_move). */
#include "orchestrator/model/hold.h"

#include <stdio.h>
#include <string.h>

bool snap_job_same_move(const struct snap_job *j, const nodemask_t *to, int first, uint64_t first_bytes)
{
	/* as mover_submit takes a spec's first node */
	bool want_first = first_bytes && first >= 0 && first < MASK_MAX_NODES && mask_test(to, first);

	if (j->write || j->ended || !mask_equal(&j->to, to))
		return false;
	return want_first ? j->has_first && j->first == first : !j->has_first;
}

static bool in_ids(char (*ids)[GUEST_ID_MAX], unsigned n, const char *id)
{
	for (unsigned k = 0; k < n; k++)
		if (strcmp(ids[k], id) == 0)
			return true;
	return false;
}

/* The guest's live job takes its memory where IT says, its CPUs already
 * there (a skip has no CPUs of its own: its nodes are compared). */
static bool still_moving(const struct plan_item *it, const struct snap_guest *g)
{
	bool cpus_there = it->kind == PLAN_SKIP ? mask_equal(&g->cpu_nodes, &it->to_nodes) :
			  g->cpus && it->to_cpus && mask_equal(g->cpus, it->to_cpus);

	return g->job.id && cpus_there &&
	       snap_job_same_move(&g->job, &it->to_mems, it->first_bytes ? it->first_node : -1, it->first_bytes);
}

enum plan_hold plan_item_hold(const struct plan_item *it, const struct snapshot *snap, const struct plan_holds *h)
{
	const struct snap_guest *g = it->guest_idx < snap->nr_guests ? &snap->guests[it->guest_idx] : NULL;
	bool applying = h && h->applying;

	if (h && in_ids(h->placed, h->nplaced, it->guest_id))
		return HOLD_JUST_PLACED;
	if (it->kind == PLAN_MOVE && h && in_ids(h->conflict, h->nconflict, it->guest_id))
		return HOLD_CONFLICT;
	if (it->kind == PLAN_MOVE && applying && in_ids(h->bind_writing, h->nbind_writing, it->guest_id))
		return HOLD_BIND_WRITING;
	if (g && ((it->kind == PLAN_MOVE && applying) || (it->kind == PLAN_SKIP && it->skip == SKIP_COOLDOWN)) &&
	    still_moving(it, g))
		return HOLD_STILL_MOVING;
	if (it->kind == PLAN_MOVE && applying && h->write_guest && !it->vm_start)
		return HOLD_MIGRATING_WRITE;
	return HOLD_NONE;
}

void plan_mark_holds(struct plan *p, const struct snapshot *snap, const struct plan_holds *h)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		struct plan_item *it = &p->items[i];

		it->hold = plan_item_hold(it, snap, h);
		it->hold_job = it->hold == HOLD_STILL_MOVING ? snap->guests[it->guest_idx].job.id : 0;
		if (it->hold == HOLD_MIGRATING_WRITE) {
			char planned[sizeof(it->detail)];

			it->hold_job = h->write_job;
			snprintf(planned, sizeof(planned), "%s", it->detail);
			/* (the plan's sentence cut short where it does not fit) */
			if (snprintf(it->detail, sizeof(it->detail), "deferred to the next cycle: guest %s's "
				     "cpuset.mems write (job %llu) is migrating its memory, and the kernel makes every "
				     "cpuset write wait until that ends; planned: %s", h->write_guest,
				     (unsigned long long)h->write_job, planned) >= (int)sizeof(it->detail))
				it->detail[sizeof(it->detail) - 1] = '\0';
		}
	}
}
