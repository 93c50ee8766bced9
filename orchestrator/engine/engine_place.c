/* engine_place.c — initial placement of starting VMs: the conductor's
 * half. A domain the VM source saw start (its STARTED event, or a new
 * instance in a listing after the hook's notification) is placed in the
 * same cycle. Where it goes is the registered policy's choice
 * (policy_ops.place, policies/place.c: the reservation labelled with its
 * name, uuid or guest id, else its pinned nodes, else the advice); here
 * the reservation is found and consumed, the choice applied and the
 * outcome recorded with reason "place". The guest starts its cool-down
 * so the policy leaves it alone until its use is measured.
 */
#include "orchestrator/engine/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/xalloc.h"

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
		break;
	}
}

static void place_one(struct engine *e, const struct snapshot *snap, const struct vmsrc_placement *pl,
		      bool do_apply, bool dry_run)
{
	const char *keys[] = { pl->name, pl->uuid, pl->id };
	struct place_request req = { .guest_id = pl->id, .cpus = pl->nr_vcpus * e->cfg.libvirt_place_vcpu_load,
				     .mem_bytes = pl->mem_bytes };
	struct place_result pr;
	const struct plan_item *it = &pr.item;
	struct apply_result res;
	const struct advice_reservation *rooms;
	struct advice_reservation *others = NULL;
	unsigned nrooms;
	int ri;

	resv_expire(&e->res, clock_mono_ns());
	ri = resv_find_label(&e->res, keys, 3);
	nrooms = resv_rooms(&e->res, &rooms);
	if (ri >= 0) {
		const struct resv *rv = &e->res.r[ri];

		req.reserved = true;
		req.reserved_id = rv->id;
		req.reserved_label = rv->label;
		req.reserved_nodes = rv->room.nodes;
		req.reserved_cpu_nodes = rv->cpu_nodes;
		req.reserved_mems = rv->mems;
		/* Its own room is given back: only the others count as load. */
		others = xcalloc(nrooms, sizeof(*others));
		for (unsigned i = 0, k = 0; i < nrooms; i++)
			if (i != (unsigned)ri)
				others[k++] = rooms[i];
		rooms = others;
		nrooms--;
	}
	req.nr_reservations = nrooms;
	req.reservations = rooms;
	if (e->pol.place(&e->cfg.policy, snap, &req, &pr) < 0) {
		free(others);
		return;
	}
	pr.item.to_cpus = pr.item.kind == PLAN_MOVE ? &pr.cpus : NULL;
	if (pr.used_reservation)
		resv_remove_at(&e->res, (unsigned)ri);
	free(others);

	if (it->kind == PLAN_SKIP) {
		declog_add(e->dl, declog_make(snap, it, "skipped", NULL, dry_run));
		if (it->skip == SKIP_NO_FIT)
			log_info("not placing %s (%s): %s", it->guest_id, snap->guests[it->guest_idx].name,
				 it->detail);
		return;
	}
	if (!do_apply) {
		engine_log_move(snap, it, NULL);
		declog_add(e->dl, declog_make(snap, it, e->cfg.mode == MODE_ADVISE && !dry_run ? "advised" :
					      "planned", NULL, dry_run));
		return;
	}
	apply_move(e->app, snap, it, &res);
	{
		size_t l = strlen(res.msg);

		snprintf(res.msg + l, sizeof(res.msg) - l, "; %.3f s after its start was seen",
			 (double)(clock_mono_ns() - pl->event_ns) / 1e9);
	}
	engine_log_move(snap, it, &res);
	declog_add(e->dl, declog_make(snap, it, engine_move_decision(res.status), &res, false));
	engine_count_place_outcome(&e->stats, e->ps, it, res.status, snap->mono_ns);
}

unsigned engine_place_started(struct engine *e, const struct snapshot *snap, bool dry_run,
			      char (**placed)[GUEST_ID_MAX])
{
	struct vmsrc_placement *pl = NULL;
	unsigned n;

	*placed = NULL;
	if (!e->vm)
		return 0;
	/* Taken even when not placing, so a domain is offered only once. */
	n = e->vmp->take_placements(e->vm, snap, &pl);
	if (!n || !e->cfg.libvirt_place_on_start || e->cfg.mode == MODE_OFF || snap_nr_cpu_nodes(snap) <= 1) {
		free(pl);
		return 0;
	}
	*placed = xcalloc(n, sizeof(**placed));
	for (unsigned i = 0; i < n; i++) {
		memcpy((*placed)[i], pl[i].id, GUEST_ID_MAX);
		place_one(e, snap, &pl[i], e->cfg.mode == MODE_ENFORCE && !dry_run, dry_run);
	}
	free(pl);
	return n;
}
