/* engine_place.c — start placement, the conductor's half, for VMs and
 * containers alike. The choice is the policy's (policies/place.c); its
 * result is a start placement: a PLAN_MOVE with reason "place" (or a
 * skip saying why not), applied here by the same actuator calls as every
 * move — the CPUs (apply_cpus), then the memory by engine_place_memory —
 * and recorded as every move is ("moved", "failed", ...).
 *
 *   a VM the VM source saw start (its STARTED event, or a new instance in
 *     a listing after the hook's notification) is placed in the cycle
 *     that sees it, before the policy decides: the reservation labelled
 *     with its name, uuid or guest id is found and handed to
 *     policy_ops.place, and consumed if used; the outcome starts the
 *     guest's cool-down, so the policy leaves it alone until its use is
 *     measured. Its memory is libvirt's one call (numatune and pins),
 *     made at once.
 *   a container's start placement comes in the policy's plan
 *     (plan_item.start); one whose mems are bound (plan_item.bind_start)
 *     has its binding recorded before its write (engine_place_begin),
 *     written by engine_place_memory — on a mover worker where there is
 *     one (engine_jobs.c) — and released once its memory stops
 *     growing (engine_place_end; the bindings themselves: engine_bind.c).
 *
 * The guests a cycle's start placement has dealt with before the plan is
 * carried out (VMs placed, bindings from before a restart released) are
 * kept until the cycle's end (engine_place_handled): the plan saw them
 * where they were before.
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

static void place_one(struct engine *e, const struct snapshot *snap, const struct vmsrc_placement *pl,
		      bool do_apply, bool dry_run)
{
	const char *keys[] = { pl->name, pl->uuid, pl->id };
	struct place_request req = { .guest_id = pl->id, .cpus = pl->nr_vcpus * e->conf.cfg.libvirt_place_vcpu_load,
				     .mem_bytes = pl->mem_bytes };
	struct place_result pr;
	const struct plan_item *it = &pr.item;
	struct apply_result res;
	struct apply_pending *p;
	const struct advice_reservation *rooms;
	struct advice_reservation *others = NULL;
	const struct resv *rv;
	unsigned nrooms;
	int ri;

	ri = engine_resv_lookup(e, keys, 3, &rv, &rooms, &nrooms);
	if (ri >= 0) {
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
	if (e->pol.place(&e->conf.cfg.policy, snap, &req, &pr) < 0) {
		free(others);
		return;
	}
	pr.item.to_cpus = pr.item.kind == PLAN_MOVE ? &pr.cpus : NULL;
	if (pr.used_reservation)
		engine_resv_used(e, (unsigned)ri);
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
		declog_add(e->dl, declog_make(snap, it, e->conf.cfg.mode == MODE_ADVISE && !dry_run ? "advised" :
					      "planned", NULL, dry_run));
		return;
	}
	apply_cpus(e->app, snap, it, &res, &p);
	if (p) {
		engine_place_memory(e, p, &res);
		apply_pending_free(p);
	}
	{
		size_t l = strlen(res.msg);

		snprintf(res.msg + l, sizeof(res.msg) - l, "; %.3f s after its start was seen",
			 (double)(clock_mono_ns() - pl->event_ns) / 1e9);
	}
	engine_log_move(snap, it, &res);
	declog_add(e->dl, declog_make(snap, it, engine_move_decision(res.status), &res, false));
	engine_count_place_outcome(&e->stats, e->st.ps, it, res.status, snap->mono_ns);
}

/* Note guest ID as dealt with by this cycle's start placement. */
static void handled_add(struct engine *e, const char *id)
{
	e->place.started = xrealloc(e->place.started, (e->place.n + 1) * sizeof(*e->place.started));
	snprintf(e->place.started[e->place.n++], GUEST_ID_MAX, "%s", id);
}

void engine_place_started(struct engine *e, const struct snapshot *snap, bool dry_run)
{
	struct vmsrc_placement *pl = NULL;
	unsigned n;

	e->place.n = 0;
	if (!e->vm)
		return;
	/* Taken even when not placing, so a domain is offered only once. */
	n = e->vmp->take_placements(e->vm, snap, &pl);
	if (!n || !e->conf.cfg.libvirt_place_on_start || e->conf.cfg.mode == MODE_OFF || snap_nr_cpu_nodes(snap) <= 1) {
		free(pl);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		handled_add(e, pl[i].id);
		place_one(e, snap, &pl[i], e->conf.cfg.mode == MODE_ENFORCE && !dry_run, dry_run);
	}
	free(pl);
}

bool engine_place_handled(const struct engine *e, const char *id)
{
	for (unsigned k = 0; k < e->place.n; k++)
		if (strcmp(e->place.started[k], id) == 0)
			return true;
	return false;
}

void engine_place_restore(struct engine *e, const struct snapshot *snap)
{
	char (*released)[GUEST_ID_MAX] = NULL;
	unsigned nreleased;

	/* A guest released here is decided again next cycle, on mems the
	 * plan did not see. */
	nreleased = engine_restore_bound(e, snap, &released);
	for (unsigned k = 0; k < nreleased; k++)
		handled_add(e, released[k]);
	free(released);
}

void engine_place_begin(struct engine *e, const struct snapshot *snap, const struct plan *plan)
{
	/* A binding is on disk before its write (bindstate.h). */
	for (unsigned i = 0; plan && i < plan->nr_items; i++)
		if (plan->items[i].kind == PLAN_MOVE && plan->items[i].bind_start)
			engine_bound_intend(e, snap, &plan->items[i]);
	engine_save_bindings(e);
}

enum phase_end engine_place_memory(struct engine *e, struct apply_pending *p, struct apply_result *res)
{
	/* A binding's write the plan hands to a mover worker
	 * (MEM_WAY_BIND_WRITE): it narrows the mems now, so that what the
	 * guest touches from here lands on the target (the kernel migrates
	 * the little it touched before inside the write; widening them for
	 * the mover would let it go on touching off the target while the
	 * mover chases it), and the engine thread does not wait for it. */
	if (apply_pending_item(p)->bind_start) {
		engine_bindwrite_submit(e, p);
		return PHASE_WRITE_JOB;
	}
	/* A VM's (placed before the plan): libvirt's one call, now. */
	apply_memory(e->app, p, res);
	return PHASE_DONE;
}

void engine_place_end(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply)
{
	engine_bound_drop_intents(e);
	engine_release_bound(e, snap, plan, do_apply);
	engine_save_bindings(e);
	e->place.n = 0;
}

void engine_place_free(struct engine_placest *pl)
{
	free(pl->started);
	pl->started = NULL;
	pl->n = 0;
}
