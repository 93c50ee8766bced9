/* engine_place.c — start placement, the conductor's half, for VMs and
 * containers alike. The choice is the policy's, inside its one decide
 * (policies/place.c); its result is the guest's item in the plan: a
 * PLAN_MOVE with reason "place" (or a skip saying why not), applied by
 * the cycle's apply step as every move — the CPUs (apply_cpus), then the
 * memory by engine_place_memory — and recorded as every move ("moved",
 * "failed", ...).
 *
 *   a VM the VM source saw start (its STARTED event, or a new instance in
 *     a listing after the hook's notification) is an input of the decide
 *     (engine_place_starting: the reservation labelled with its name,
 *     uuid or guest id found for it); the reservation its item took is
 *     consumed as the plan comes back (engine_place_taken). Its memory
 *     is libvirt's one call (numatune and pins), made at once.
 *   a container's start placement (plan_item.start) whose mems are bound
 *     (plan_item.bind_start) has its binding recorded before its write
 *     (engine_place_begin), written by engine_place_memory — on a mover
 *     worker where there is one (engine_jobs.c) — and released once its
 *     memory stops growing (engine_place_end; the bindings themselves:
 *     engine_bind.c, the rule model/bindrule.c).
 *
 * The guests this cycle's start placement deals with (VMs started,
 * bindings from before a restart released) are kept until the cycle's
 * end (engine_place_handled).
 */
#include "orchestrator/engine/engine.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/xalloc.h"

/* Note guest ID as dealt with by this cycle's start placement; EVENT_NS:
 * when its start was seen (INT64_MIN: a binding released, not a start). */
static void handled_add(struct engine *e, const char *id, int64_t event_ns)
{
	e->place.started = xrealloc(e->place.started, (e->place.n + 1) * sizeof(*e->place.started));
	e->place.event_ns = xrealloc(e->place.event_ns, (e->place.n + 1) * sizeof(*e->place.event_ns));
	snprintf(e->place.started[e->place.n], GUEST_ID_MAX, "%s", id);
	e->place.event_ns[e->place.n++] = event_ns;
}

/* The policy's input for the VM that started as PL: its demand, and the
 * reservation labelled with its name, uuid or guest id. */
static void start_of(struct engine *e, const struct vmsrc_placement *pl, struct start_vm *s)
{
	const char *keys[] = { pl->name, pl->uuid, pl->id };
	const struct resv *rv;

	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", pl->id);
	s->cpus = pl->nr_vcpus * e->conf.cfg.libvirt_place_vcpu_load;
	s->busy_threads = (unsigned)ceil(s->cpus - 1e-9);
	s->mem_bytes = pl->mem_bytes;
	s->room = engine_resv_lookup(e, keys, 3, &rv);
	if (!rv)
		return;
	s->resv_id = rv->id;
	s->resv_label = rv->label;
	s->resv_nodes = rv->room.nodes;
	s->resv_cpu_nodes = rv->cpu_nodes;
	s->resv_mems = rv->mems;
}

unsigned engine_place_starting(struct engine *e, const struct snapshot *snap, struct start_vm **out)
{
	struct vmsrc_placement *pl = NULL;
	unsigned n;

	e->place.n = 0;
	*out = NULL;
	if (!e->vm)
		return 0;
	/* Taken even when not placing, so a domain is offered only once. */
	n = e->vmp->take_placements(e->vm, snap, &pl);
	if (!n || !e->conf.cfg.libvirt_place_on_start || e->conf.cfg.mode == MODE_OFF || snap_nr_cpu_nodes(snap) <= 1) {
		free(pl);
		return 0;
	}
	*out = xcalloc(n, sizeof(**out));
	for (unsigned i = 0; i < n; i++) {
		handled_add(e, pl[i].id, pl[i].event_ns);
		start_of(e, &pl[i], &(*out)[i]);
	}
	free(pl);
	return n;
}

void engine_place_taken(struct engine *e, const struct plan *plan)
{
	for (unsigned i = 0; plan && i < plan->nr_items; i++)
		if (plan->items[i].vm_start && plan->items[i].resv_used)
			engine_resv_used(e, plan->items[i].resv_used);
}

void engine_place_said(const struct engine *e, const struct plan_item *it, struct apply_result *res)
{
	size_t l = strlen(res->msg);

	for (unsigned k = 0; k < e->place.n; k++)
		if (e->place.event_ns[k] != INT64_MIN && strcmp(e->place.started[k], it->guest_id) == 0) {
			snprintf(res->msg + l, sizeof(res->msg) - l, "; %.3f s after its start was seen",
				 (double)(clock_mono_ns() - e->place.event_ns[k]) / 1e9);
			return;
		}
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
		handled_add(e, released[k], INT64_MIN);
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
	/* A VM's start placement: libvirt's one call, now. */
	apply_memory(e->app, p, res);
	return PHASE_DONE;
}

void engine_place_end(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply)
{
	engine_bound_drop_intents(e);
	/* A release is a cpuset write: not while a migrating write is in
	 * flight (this cycle's own too), which it would wait for in the
	 * kernel; its guest is released by a later cycle. */
	engine_release_bound(e, snap, plan, do_apply && !engine_jobs_writes_running(e));
	engine_save_bindings(e);
	e->place.n = 0;
}

void engine_place_free(struct engine_placest *pl)
{
	free(pl->started);
	free(pl->event_ns);
	pl->started = NULL;
	pl->event_ns = NULL;
	pl->n = 0;
}
