/* engine_cycle.c — one cycle, in four steps (engine_cycle): acquire a
 * snapshot, the mover's live jobs laid on it (cycle_acquire); decide:
 * the registered policy, told the VMs that just started (placed by its
 * plan) and what this cycle holds back (bindings released, start
 * bindings still being written: plan_holds), and how each move's memory goes
 * (plan_mem_ways) (cycle_decide); apply the plan as written — an item
 * with a hold is not carried out, every other move's CPUs first, then
 * the memory of those that must migrate, its way as the applier's facts
 * leave it (mem_way_at_apply) — recording each outcome as it comes and
 * noting the cool-down of a move the outcome keeps one for
 * (cycle_apply); and record what the cycle leaves for the next, then
 * publish the view (cycle_record). */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/store/gpolstore.h"
#include "orchestrator/store/history.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/kflow.h"
#include "orchestrator/model/memway.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/notify.h"
#include "orchestrator/base/strtab.h"
#include "orchestrator/base/xalloc.h"

const double engine_cycle_buckets[ENGINE_CYCLE_NR_BUCKETS] = {
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

static const char *const cycle_phase_names[] = {
	[CYCLE_TOTAL] = "total",
	[CYCLE_ACQUIRE] = "acquire",
	[CYCLE_DECIDE] = "decide",
	[CYCLE_APPLY] = "apply",
	[CYCLE_RECORD] = "record",
};
STRTAB_NAME(engine_cycle_phase_name, enum engine_cycle_phase, cycle_phase_names)

static void hist_observe(struct engine_hist *h, double s)
{
	for (unsigned b = 0; b < ENGINE_CYCLE_NR_BUCKETS; b++)
		h->le[b] += s <= engine_cycle_buckets[b];
	h->count++;
	h->sum_s += s;
}

/* kernel.numa_balancing, read with every snapshot (an operator may flip
 * it): say once, and at each change, how the agent works beside it. */
static void note_balancing(struct engine *e, const struct snapshot *snap)
{
	int v = snap->numa_balancing;

	e->stats.kernel_balancing = e->conf.cfg.kernel_balancing;
	if (e->stats.cycles > 0 && v == e->stats.numa_balancing)
		return;
	e->stats.numa_balancing = v;
	if (kbal_kernel_moves(v))
		log_info("kernel.numa_balancing = %d: the kernel migrates memory on fault too; numaorchd works "
			 "beside it (kernel_balancing = %s: %s)", v, kbal_setting_name(e->conf.cfg.kernel_balancing),
			 e->conf.cfg.kernel_balancing == KBAL_DEFER ? "numaorchd moves CPUs and widens mems, the kernel "
			 "moves the memory" : e->conf.cfg.kernel_balancing == KBAL_MIGRATE ? "numaorchd migrates memory "
			 "itself" : "the kernel moves a running guest's memory, numaorchd an idle one's");
	else if (v >= 0)
		log_info("kernel.numa_balancing = %d: the kernel's NUMA balancing is off; numaorchd migrates memory "
			 "itself", v);
	else
		log_info("kernel.numa_balancing: not available on this kernel; numaorchd migrates memory itself");
}

/* The way IT's memory takes (IT->mem_way, memway.h), refined by what the
 * applier learnt of P (mem_way_at_apply); the mover's needs P's
 * processes (*PIDS, *NPIDS: the caller frees). */
static enum mem_way final_way(struct engine *e, const struct plan_item *it, struct apply_pending *p,
			      bool caller_waits, pid_t **pids, unsigned *npids)
{
	struct mem_way_facts f = {
		.soft = apply_pending_soft(p), .movable = apply_pending_movable(p),
		.narrow_only = apply_pending_narrow_only(p), .mems_change = apply_pending_writes_mems(p),
		.room_wait = apply_pending_room_wait(p), .caller_waits = caller_waits,
	};
	enum mem_way way = mem_way_at_apply(it->mem_way, it->mem_way_soft, &f);

	if (way != MEM_WAY_MOVER)
		return way;
	*npids = apply_pending_pids(e->app, p, pids);
	f.no_process = *npids == 0;
	return mem_way_at_apply(it->mem_way, it->mem_way_soft, &f);
}

/* The way of phase 2 of one move, the plan's (plan_item.mem_way) as the
 * applier's facts left it, recorded in the plan's item PIT
 * (mem_way_applied); the mover's needs P's processes (*PIDS, *NPIDS).
 * CALLER_WAITS: a caller waits for the cycle's report. */
static enum mem_way memory_way(struct engine *e, struct plan_item *pit, struct apply_pending *p, bool caller_waits,
			       pid_t **pids, unsigned *npids)
{
	/* A VM's start placement: libvirt's one call, whatever the room
	 * (the guest has touched next to nothing yet). */
	pit->mem_way_applied = apply_pending_item(p)->vm_start ? MEM_WAY_WRITE :
			       final_way(e, apply_pending_item(p), p, caller_waits, pids, npids);
	return pit->mem_way_applied;
}

/* Does phase 2 of IT, the way WAY, hand a cpuset.mems write to a mover
 * worker? */
static bool way_hands_a_write(const struct plan_item *it, enum mem_way way)
{
	return !it->vm_start && (way == MEM_WAY_WRITE_WORKER || (way == MEM_WAY_BIND_WRITE && it->bind_start));
}

/* Phase 2 of one move: its memory, the way memory_way chose (PIDS,
 * NPIDS: what it found, taken). */
static enum phase_end memory_phase(struct engine *e, struct apply_pending *p, enum mem_way way, pid_t *pids,
				   unsigned npids, struct apply_result *res)
{
	const struct plan_item *it = apply_pending_item(p);
	char to[NODELIST_BUFSZ];
	uint64_t id;

	if (it->vm_start)
		return engine_place_memory(e, p, res);
	if (way != MEM_WAY_MOVER) {
		free(pids);
		pids = NULL;
	}
	switch (way) {
	case MEM_WAY_NO_ROOM: {
		/* Room partly to come needs a mover job that waits for it; the
		 * kernel (a cpuset.mems write, its balancing) would not wait. */
		struct mem_way_facts nowait = {
			.soft = apply_pending_soft(p), .movable = apply_pending_movable(p),
		};
		bool kernel = mem_way_at_apply(it->mem_way, it->mem_way_soft, &nowait) == MEM_WAY_KERNEL;

		apply_pending_no_room(e->app, p, kernel ? "its memory is left to the kernel's NUMA balancing"
					  : "its memory cannot move by the mover", res);
		return PHASE_DONE;
	}
	case MEM_WAY_KERNEL:
		apply_memory_widen(e->app, p, "left to the kernel's NUMA balancing", res);
		if (res->status == APPLY_DONE)
			e->stats.memory_deferred++;
		return PHASE_DONE;
	case MEM_WAY_BIND_WRITE:
		/* A start binding's write (engine_place.c): the engine thread
		 * does not wait for what the kernel migrates inside it. */
		return engine_place_memory(e, p, res);
	case MEM_WAY_WRITE_WORKER:
		memset(res, 0, sizeof(*res));
		res->locality_after = NAN;
		if (mask_format(&it->to_mems, to, sizeof(to)) < 0)
			snprintf(to, sizeof(to), "?");
		id = engine_memwrite_submit(e, p);
		apply_result_set(res, APPLY_DONE, 0, "cpus moved; memory to move onto %s by its cpuset.mems write "
				 "(job %llu, on a worker)", to, (unsigned long long)id);
		return PHASE_JOB;
	case MEM_WAY_MOVER:
		return engine_jobs_to_mover(e, p, pids, npids, res);
	default:
		/* The write on this thread (with no process, the mems change
		 * is all). */
		apply_memory(e->app, p, res);
		return PHASE_DONE;
	}
}

double engine_next_cycle_s(const struct engine *e)
{
	double s = e->conf.cfg.interval_s;

	if (s > ENGINE_BIND_CYCLE_S && engine_binds_waiting(e))
		s = ENGINE_BIND_CYCLE_S;
	/* A guest seen for the first time was "decided next cycle": its use
	 * is measured over the gap, which need not wait for the interval
	 * while the guest touches its memory wherever it runs
	 * (test_engine_first_sight_comes_back_soon). */
	if (e->cyc.first_sight && s > ENGINE_TRIGGER_GAP_S)
		s = ENGINE_TRIGGER_GAP_S;
	if (e->cyc.spread_cycles && s > ENGINE_SPREAD_CYCLE_S)
		s = ENGINE_SPREAD_CYCLE_S;
	return s;
}

/* Move IT wrote its CPUs (and MEMS): the cpuset to expect from now on
 * (conflict.h), a container's start placement (plan_item.start) as much
 * as a rebalancing move, since the kubelet rewrites either. A VM's CPUs
 * are its vCPUs' pins, not one cpuset. */
static void note_written(struct engine *e, const struct snapshot *snap, const struct plan_item *it,
			 const nodemask_t *mems)
{
	if (it->kind == PLAN_MOVE && it->to_cpus && it->guest_idx < snap->nr_guests &&
	    snap->guests[it->guest_idx].kind == GUEST_CONTAINER)
		conflict_note_write(&e->cyc.conflicts, it->guest_id, it->to_cpus, mems);
}

/* Log, record and count the outcome of plan item I. */
static void record_move(struct engine *e, const struct snapshot *snap, struct pstate *next,
			const struct plan_item *it, const struct apply_result *res, struct cycle_report *report,
			unsigned i)
{
	struct apply_result said;

	if (it->vm_start) {
		said = *res;
		engine_place_said(e, it, &said);
		res = &said;
	}
	engine_log_move(snap, it, res);
	declog_add(e->dl, declog_make(snap, it, engine_move_decision(res->status), res, false));
	if (it->bind_start && res->status == APPLY_DONE)
		engine_bound_add(e, snap, it);
	if (res->status == APPLY_DONE)
		note_written(e, snap, it, res->mems_loosened ? &res->mems_after : &it->to_mems);
	else if (res->status == APPLY_FAILED || res->status == APPLY_FAILED_PARTIAL)
		/* its CPUs may have been written, then restored */
		conflict_forget(&e->cyc.conflicts, it->guest_id);
	if (it->kind == PLAN_MOVE && !it->vm_start && res->status == APPLY_DONE && mask_count(&it->to_nodes) >= 2 &&
	    it->guest_idx < snap->nr_guests && snap->guests[it->guest_idx].cpu_use >= SNAP_BUSY_THREAD_CPU)
		e->cyc.spread_cycles = ENGINE_SPREAD_CYCLES;
	if (report) {
		report->results[i] = *res;
		report->attempted[i] = true;
	}
	if (it->vm_start)
		engine_count_place_outcome(&e->stats, next, it, res->status, snap->mono_ns);
	else
		engine_count_outcome(&e->stats, next, it, res->status, snap->mono_ns);
}

/* The operator's per-guest overrides (the REST API's store), applied to
 * the snapshot while it is finalized: once published it is read-only. */
static bool override_policy(void *ctx, const char *id, struct guest_policy *out)
{
	struct gpol_record rec;

	if (!gpolstore_get(ctx, id, &rec))
		return false;
	*out = rec.pol;
	out->set_real_ns = rec.set_real_ns;
	return true;
}

/* Did the agent move guest ID's memory between PREV_NS and CUR_NS? A
 * move it carried out then (noted for its cool-down), or a start
 * binding's write still running: their pages are in its flow. */
static bool moved_by_agent(void *ctx, const char *id, int64_t prev_ns, int64_t cur_ns)
{
	struct engine *e = ctx;
	const struct pstate_entry *pe = e->st.ps ? pstate_find(e->st.ps, id) : NULL;

	(void)cur_ns;
	return (pe && pe->last_move_ns >= prev_ns) || (e->jobs.n && engine_bindwrite_pending(e, id));
}

/* The mover's live jobs, on the snapshot being finalized: each guest's
 * (snap_guest.job: a plan's move one of them makes already is held), and
 * the memory they are still moving into each node
 * (snap_node.mem_leaving/mem_coming) while the mover is on; then each
 * guest's kernel flow since the last cycle's snapshot (kflow.h). */
static void mover_facts(void *ctx, struct snapshot *s)
{
	struct engine *e = ctx;

	if (e->jobs.mover) {
		mover_note_jobs(e->jobs.mover, s);
		if (e->jobs.mover_on)
			mover_flows(e->jobs.mover, s);
	}
	/* after the jobs: a guest with one has no flow of the kernel's */
	e->cyc.prev_spent = kflow_fill(s, e->cyc.prev_snap, moved_by_agent, e);
}

/* One cycle's working state, from acquire to record. */
struct cycle {
	bool dry_run, do_apply;
	struct cycle_report *report;
	const struct snapshot *snap;
	struct plan *plan;
	struct pstate *next;
	/* What the policy is told beside the snapshot (plan_mark_holds):
	 * guests this cycle's start placement dealt with (engine_place.c),
	 * start bindings whose write still runs. */
	struct plan_holds holds;
	/* Moves whose CPUs are written, their memory still to move. */
	struct {
		struct apply_pending *p;
		unsigned idx;
		enum mem_way way;        /* memory_way's */
		pid_t *pids;             /* the mover's, taken by memory_phase */
		unsigned npids;
	} *pend;
	unsigned npend;
	int64_t t0, t1, t2, t3;
	int64_t c0, c1, c2, c3;        /* the engine thread's CPU time at t0..t3 */
};

/* Acquire: settle what ended since the last cycle, read the snapshot (the
 * operator's overrides and the mover's flows folded in), and note what
 * it says of the host. */
static int cycle_acquire(struct engine *e, struct cycle *c)
{
	struct snap_policy_overlay ov = {
		.get = e->gs ? override_policy : NULL, .ctx = e->gs, .devices = e->conf.cfg.policy.devices,
		.flows = mover_facts, .flows_ctx = e
	};
	int r;

	engine_apply_schedule(&e->conf, e->jobs.mover, e->jobs.mover_on);
	engine_settle_jobs(e);
	engine_watch_cycle_began(e);
	r = e->src.snapshot(e->acq, e->conf.cfg.sample_s, &ov, &c->snap);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "cannot read the host topology from %s", e->hp.sysfs);
	c->t1 = clock_mono_ns();
	c->c1 = clock_thread_cpu_ns();
	/* The same broken file gives the same warning every cycle, which
	 * would bury the log: said once, then with a count now and then. */
	if (!e->cyc.warn_rep)
		e->cyc.warn_rep = log_repeat_new();
	log_repeat_round(e->cyc.warn_rep, LOG_LEVEL_WARN, c->snap->warnings, c->snap->nr_warnings);

	e->stats.cpu_nodes = snap_nr_cpu_nodes(c->snap);
	note_balancing(e, c->snap);
	if (e->vm) {
		struct vmsrc_status vst;

		e->vmp->get_status(e->vm, &vst);
		e->stats.libvirt_state = vst.connected ? LIBVIRT_CONNECTED : LIBVIRT_DISCONNECTED;
		e->stats.libvirt_connects = vst.connects;
		e->stats.libvirt_losses = vst.losses;
		e->stats.libvirt_last_reconnect_s = vst.last_reconnect_s;
	}
	if (e->stats.cpu_nodes <= 1 && !e->cyc.warned_one_node) {
		log_warn("this host has %u NUMA node%s with CPUs: numaorchd keeps discovering and "
			 "reporting guests, and moves nothing", e->stats.cpu_nodes,
			 e->stats.cpu_nodes == 1 ? "" : "s");
		e->cyc.warned_one_node = true;
	}
	return 0;
}

static void ids_add(char (**ids)[GUEST_ID_MAX], unsigned *n, const char *id)
{
	*ids = xrealloc(*ids, (*n + 1) * sizeof(**ids));
	snprintf((*ids)[(*n)++], GUEST_ID_MAX, "%s", id);
}

/* The guests of the snapshot this cycle's start placement dealt with
 * (engine_place_handled), those whose start binding's cpuset.mems
 * write still runs (engine_bindwrite_pending), and a migrating write in
 * flight that every other move waits for (HOLD_MIGRATING_WRITE), into C's
 * holds. */
static void note_holds(struct engine *e, struct cycle *c)
{
	struct plan_holds *h = &c->holds;

	for (unsigned i = 0; i < c->snap->nr_guests; i++) {
		const char *id = c->snap->guests[i].id;

		if (engine_place_handled(e, id))
			ids_add(&h->placed, &h->nplaced, id);
		if (e->jobs.n && engine_bindwrite_pending(e, id))
			ids_add(&h->bind_writing, &h->nbind_writing, id);
	}
	h->write_guest = engine_jobs_migrating_write(e, &h->write_job);
	h->applying = c->do_apply;
}

/* The guests whose cpuset another placer rewrote after the agent's move
 * (conflict.h): each said once (a record "conflict", counted), and held
 * from further moves while it stays as found. */
static void note_conflicts(struct engine *e, struct cycle *c)
{
	struct plan_holds *h = &c->holds;

	conflict_prune(&e->cyc.conflicts, c->snap);
	for (unsigned i = 0; i < c->snap->nr_guests && e->cyc.conflicts.n; i++) {
		const struct snap_guest *g = &c->snap->guests[i];
		enum conflict_state cs;
		const char *placer = conflict_placer(g);

		/* A guest seen starting again under the same id (a container
		 * restarted) is placed anew: its old cpuset says nothing. */
		if (engine_place_handled(e, g->id)) {
			conflict_forget(&e->cyc.conflicts, g->id);
			continue;
		}
		cs = conflict_check(&e->cyc.conflicts, g);
		if (cs == CONFLICT_NONE)
			continue;
		/* Only the kubelet is a placer the agent yields to: a guest
		 * anyone else moved (an operator, a script) is decided again
		 * as any guest, from where it now runs. */
		if (strcmp(placer, "kubelet") != 0) {
			conflict_forget(&e->cyc.conflicts, g->id);
			continue;
		}
		if (cs == CONFLICT_NEW) {
			declog_add(e->dl, engine_conflict_record(c->snap, g, conflict_find(&e->cyc.conflicts, g->id),
								 placer));
			if (strcmp(placer, "kubelet") == 0)
				e->stats.placer_conflicts_kubelet++;
			else
				e->stats.placer_conflicts_unknown++;
		}
		ids_add(&h->conflict, &h->nconflict, g->id);
	}
}

/* Decide: (an applying cycle) start bindings from before a restart
 * released before the policy runs; then the policy's plan and next
 * state, the domains that just started an input it places, each item it
 * must leave be this cycle held (plan_item.hold); the reservations the
 * starts took are gone. */
static int cycle_decide(struct engine *e, struct cycle *c)
{
	const struct advice_reservation *res;
	struct start_vm *starting = NULL;
	unsigned nres, nstarting;
	int r;

	/* (the mode as the schedule left it, cycle_acquire) */
	c->do_apply = e->conf.cfg.mode == MODE_ENFORCE && !c->dry_run;
	/* The rooms first: a start's reservation is found by its index in
	 * them, and nothing expires until the policy has decided. */
	nres = engine_reservations(e, &res);
	nstarting = engine_place_starting(e, c->snap, &starting);
	if (e->conf.cfg.mode == MODE_OFF)
		return 0;
	/* (its releases are cpuset writes: not while a migrating write is in
	 * flight, which they would wait for; tried again next cycle) */
	if (c->do_apply && !engine_jobs_writes_running(e))
		engine_place_restore(e, c->snap);
	note_conflicts(e, c);
	note_holds(e, c);
	c->holds.starting = starting;
	c->holds.nstarting = nstarting;
	if (e->conf.cfg.kernel_balancing != KBAL_MIGRATE)
		c->holds.kernel_follow_s = e->conf.cfg.kernel_follow_s;
	c->holds.follow_bound_s = e->conf.cfg.kernel_follow_s;
	engine_conf_tell(&e->conf, e->jobs.mover_on, engine_mover_rate(e));
	r = e->pol.decide(&e->conf.cfg.policy, c->snap, e->st.ps, c->report != NULL, res, nres, &c->holds, &c->plan,
			  &c->next);
	c->holds.starting = NULL;
	c->holds.nstarting = 0;
	free(starting);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "policy rejected its configuration");
	engine_place_taken(e, c->plan);
	plan_mem_ways(c->plan, c->snap, &(struct mem_way_cfg){
		.kbal = e->conf.cfg.kernel_balancing, .strict_mems = e->conf.cfg.strict_mems,
		.mover = e->jobs.mover != NULL, .mover_on = e->jobs.mover_on,
		.kernel_follow_s = e->conf.cfg.kernel_follow_s,
	});
	return 0;
}

/* A planned move not carried out (advise mode, a dry run): said once, not
 * once a cycle (an explicit request, the report, always gets its records;
 * a VM's start placement comes once anyway). */
static void say_planned(struct engine *e, const struct cycle *c, const struct plan_item *it)
{
	if (!it->vm_start &&
	    logged_repeats(&e->cyc.logged, it, c->report != NULL, c->snap->mono_ns, policy_record_hold(&e->conf.cfg.policy)))
		return;
	engine_log_move(c->snap, it, NULL);
	declog_add(e->dl, declog_make(c->snap, it, e->conf.cfg.mode == MODE_ADVISE && !c->dry_run ? "advised" : "planned",
				      NULL, c->dry_run));
}

/* An item held back (plan_item.hold): not carried out, no record. A
 * guest placed or released this cycle cools down as if its planned move
 * were made; a move a live job makes already keeps the cool-down of the
 * move that started the job, and the job's own record comes when it
 * ends. (logged_update counts a held cool-down skip as said: once the
 * job has ended the same cool-down is not recorded either, the job's
 * record says where the memory got to.) */
static void note_held(const struct cycle *c, const struct plan_item *it)
{
	const struct snap_guest *g = &c->snap->guests[it->guest_idx];
	char mems[64];

	switch (it->hold) {
	case HOLD_JUST_PLACED:
		plan_item_note_cooldown(it, c->next, c->snap->mono_ns);
		break;
	case HOLD_BIND_WRITING:
		log_debug("not moving %s this cycle: its start binding's cpuset.mems write is still running",
			  it->guest_id);
		break;
	case HOLD_STILL_MOVING:
		mask_format(&it->to_mems, mems, sizeof(mems));
		log_debug("still moving %s: job %llu takes its memory onto nodes %s (%.1f MiB done); the plan's %s "
			  "is that job's", it->guest_id, (unsigned long long)it->hold_job, mems,
			  (double)g->job.bytes_done / 1048576.0,
			  it->kind == PLAN_SKIP ? "move, held by the cool-down," : "move");
		break;
	case HOLD_CONFLICT:
		log_debug("not moving %s: another placer rewrote the cpuset numaorchd wrote", it->guest_id);
		break;
	case HOLD_KERNEL_UNMEASURED:
		log_debug("not moving %s yet: %s", it->guest_id, it->detail);
		break;
	case HOLD_KERNEL_MOVING:
	case HOLD_KERNEL_AGAINST:
	case HOLD_MIGRATING_WRITE:
		break; /* (recorded: apply_item) */
	case HOLD_NONE:
		break;
	}
}

/* Phase 1 of plan item I: a move's CPUs (its memory, if it must migrate,
 * is queued for phase 2), a skip's record. */
static void apply_item(struct engine *e, struct cycle *c, unsigned i)
{
	const struct snapshot *snap = c->snap;
	const struct plan_item *it = &c->plan->items[i];

	if (it->hold == HOLD_KERNEL_MOVING || it->hold == HOLD_KERNEL_AGAINST) {
		/* The kernel's measured flow left it: said once while the
		 * same decision holds, as a planned move is. */
		if (!logged_repeats(&e->cyc.logged, it, c->report != NULL, c->snap->mono_ns,
				    policy_record_hold(&e->conf.cfg.policy))) {
			log_info("%s: %s", it->guest_id, it->detail);
			declog_add(e->dl, declog_make(c->snap, it, "left_to_kernel", NULL, c->dry_run));
		}
		return;
	}
	if (it->hold == HOLD_MIGRATING_WRITE) {
		/* Said once while the same move waits (its detail names the
		 * write); made by the first cycle after the write. */
		if (!logged_repeats(&e->cyc.logged, it, c->report != NULL, c->snap->mono_ns,
				    policy_record_hold(&e->conf.cfg.policy))) {
			log_info("not moving %s this cycle: %s", it->guest_id, it->detail);
			declog_add(e->dl, declog_make(c->snap, it, "deferred", NULL, false));
		}
		return;
	}
	if (it->hold != HOLD_NONE) {
		note_held(c, it);
		return;
	}
	if (it->kind == PLAN_MOVE) {
		struct apply_result res;

		if (!c->do_apply) {
			say_planned(e, c, it);
			return;
		}
		/* A new plan for a guest supersedes its running job (it stops
		 * at its next chunk boundary). */
		if (e->jobs.mover) {
			uint64_t old = mover_job_of(e->jobs.mover, it->guest_id);

			if (old)
				mover_cancel(e->jobs.mover, old, MJ_SUPERSEDED);
		}
		/* CPUs first: every move's cpuset.cpus this pass, the memory
		 * of those that must migrate after all of them. */
		apply_cpus(e->app, snap, it, &res, &c->pend[c->npend].p);
		if (c->pend[c->npend].p) {
			/* its CPUs are written; its record may come only when
			 * a worker's write ends */
			note_written(e, snap, it, &it->to_mems);
			c->pend[c->npend++].idx = i;
			return;
		}
		record_move(e, snap, c->next, it, &res, c->report, i);
	} else if (it->kind == PLAN_SKIP && it->vm_start) {
		/* (a start comes once: nothing to repeat) */
		if (it->skip == SKIP_NO_FIT)
			log_info("not placing %s (%s): %s", it->guest_id, snap->guests[it->guest_idx].name, it->detail);
		declog_add(e->dl, declog_make(snap, it, "skipped", NULL, c->dry_run));
	} else if (it->kind == PLAN_SKIP) {
		if (logged_repeats(&e->cyc.logged, it, c->report != NULL, snap->mono_ns, policy_record_hold(&e->conf.cfg.policy)))
			return;
		log_debug("not moving %s: %s (%s)", it->guest_id, skip_reason_name(it->skip), it->detail);
		declog_add(e->dl, declog_make(snap, it, "skipped", NULL, c->dry_run));
	}
}

/* Apply the plan as written: every move's CPUs (an item with a hold left
 * be), then the memory of those that must migrate; each outcome recorded
 * as it comes. */
static void cycle_apply(struct engine *e, struct cycle *c)
{
	struct plan *plan = c->plan;
	unsigned nitems = plan ? plan->nr_items : 0;

	if (e->cyc.spread_cycles)
		e->cyc.spread_cycles--;
	if (c->report && plan) {
		c->report->nr_results = nitems;
		c->report->results = xcalloc(nitems ? nitems : 1, sizeof(*c->report->results));
		c->report->attempted = xcalloc(nitems ? nitems : 1, sizeof(bool));
		c->report->applied = c->do_apply;
	}
	if (c->do_apply)
		engine_place_begin(e, c->snap, plan);
	applier_begin_cycle(e->app, c->snap, e->jobs.mover && e->jobs.mover_on);
	c->pend = xcalloc(nitems ? nitems : 1, sizeof(*c->pend));
	for (unsigned i = 0; i < nitems; i++)
		apply_item(e, c, i);
	for (unsigned k = 0; k < c->npend; k++)
		c->pend[k].way = memory_way(e, &plan->items[c->pend[k].idx], c->pend[k].p, c->report != NULL,
					    &c->pend[k].pids, &c->pend[k].npids);
	/* The writes handed to a worker last: once one runs, a cpuset write
	 * of this thread (another move's widening) would wait for its
	 * migration in the kernel. */
	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned k = 0; k < c->npend; k++) {
			const struct plan_item *it = &plan->items[c->pend[k].idx];
			struct apply_result res;

			if (way_hands_a_write(it, c->pend[k].way) != (pass == 1))
				continue;
			/* A cycle of big migrations can outlast the watchdog. */
			if (e->watchdog_usec)
				notify_watchdog();
			switch (memory_phase(e, c->pend[k].p, c->pend[k].way, c->pend[k].pids, c->pend[k].npids, &res)) {
			case PHASE_WRITE_JOB:
				continue;
			case PHASE_DONE:
				apply_pending_free(c->pend[k].p);
				break;
			case PHASE_JOB:
				break;
			}
			record_move(e, c->snap, c->next, it, &res, c->report, c->pend[k].idx);
		}
	engine_place_end(e, c->snap, plan, c->do_apply);
}

/* Record: what the cycle leaves for the next one (the policy's state, the
 * last-recorded table), its timings, and the view it publishes. */
static void cycle_record(struct engine *e, struct cycle *c)
{
	const struct snapshot *snap = c->snap;
	const struct plan *plan = c->plan;

	e->cyc.first_sight = false;
	e->cyc.deferred = false;
	for (unsigned i = 0; plan && i < plan->nr_items; i++)
		e->cyc.deferred |= plan->items[i].hold == HOLD_MIGRATING_WRITE;
	for (unsigned i = 0; plan && i < plan->nr_items && !e->cyc.first_sight; i++)
		e->cyc.first_sight = (plan->items[i].kind == PLAN_SKIP && plan->items[i].skip == SKIP_NO_USAGE) ||
				     plan->items[i].hold == HOLD_KERNEL_UNMEASURED;
	if (plan)
		logged_update(&e->cyc.logged, plan, snap->mono_ns, policy_record_hold(&e->conf.cfg.policy));
	if (c->next) {
		engine_state_set_ps(e, c->next);
		c->next = NULL;
	}
	engine_save_state(e);

	e->stats.cycles++;
	e->stats.last_cycle_real_ns = clock_real_ns();
	e->stats.last_cycle_s = (double)(c->t3 - c->t0) / 1e9;
	e->stats.last_acquire_s = (double)(c->t1 - c->t0) / 1e9;
	e->stats.last_decide_s = (double)(c->t2 - c->t1) / 1e9;
	e->stats.last_apply_s = (double)(c->t3 - c->t2) / 1e9;
	hist_observe(&e->stats.cycle_hist[CYCLE_TOTAL], e->stats.last_cycle_s);
	hist_observe(&e->stats.cycle_hist[CYCLE_ACQUIRE], e->stats.last_acquire_s);
	hist_observe(&e->stats.cycle_hist[CYCLE_DECIDE], e->stats.last_decide_s);
	hist_observe(&e->stats.cycle_hist[CYCLE_APPLY], e->stats.last_apply_s);
	history_record(e->hist, snap);
	engine_publish(e, snap, c->plan, e->jobs.mover_on);
	if (c->report)
		c->report->view = engine_view_get(e);
	log_debug("cycle %llu: %u guests, %u plan items, %.1f ms (acquire %.1f, decide %.1f, apply %.1f)",
		  (unsigned long long)snap->seq, snap->nr_guests, plan ? plan->nr_items : 0,
		  e->stats.last_cycle_s * 1e3, e->stats.last_acquire_s * 1e3,
		  e->stats.last_decide_s * 1e3, e->stats.last_apply_s * 1e3);
}

/* The cycle's time on the engine thread by phase, wall and CPU, up to
 * now (the record phase's end): the record phase's wall time and every
 * phase's CPU time into the metrics, and the cycle's own record. That is
 * written when the cycle wrote any record, or held the engine thread over
 * a second: a quiet cycle would otherwise fill the ring with nothing but
 * timings. */
static void cycle_times(struct engine *e, const struct cycle *c, uint64_t last_id)
{
	int64_t t4 = clock_mono_ns(), c4 = clock_thread_cpu_ns();
	const int64_t t[] = { c->t0, c->t1, c->t2, c->t3, t4 }, cpu[] = { c->c0, c->c1, c->c2, c->c3, c4 };
	static const enum engine_cycle_phase ph[DECLOG_NR_PHASES] = {
		CYCLE_ACQUIRE, CYCLE_DECIDE, CYCLE_APPLY, CYCLE_RECORD
	};
	struct declog_cycle_time ct;

	for (unsigned i = 0; i < DECLOG_NR_PHASES; i++) {
		ct.wall_s[i] = (double)(t[i + 1] - t[i]) / 1e9;
		ct.cpu_s[i] = (double)(cpu[i + 1] - cpu[i]) / 1e9;
		hist_observe(&e->stats.cycle_cpu_hist[ph[i]], ct.cpu_s[i]);
	}
	hist_observe(&e->stats.cycle_hist[CYCLE_RECORD], ct.wall_s[DECLOG_RECORD]);
	hist_observe(&e->stats.cycle_cpu_hist[CYCLE_TOTAL], (double)(c4 - c->c0) / 1e9);
	if (declog_last_id(e->dl) == last_id && t4 - c->t0 <= 1000000000LL)
		return;
	declog_add(e->dl, declog_make_cycle(c->snap->seq, &ct, c->dry_run));
}

int engine_cycle(struct engine *e, bool dry_run, struct cycle_report *report)
{
	struct cycle c = { .dry_run = dry_run || e->conf.cfg.dry_run, .report = report, .t0 = clock_mono_ns(),
			   .c0 = clock_thread_cpu_ns() };
	uint64_t last_id = declog_last_id(e->dl);
	int r;

	if (report)
		memset(report, 0, sizeof(*report));
	e->cyc.prev_spent = true;
	r = cycle_acquire(e, &c);
	if (r < 0)
		return r;
	r = cycle_decide(e, &c);
	if (r >= 0) {
		c.t2 = clock_mono_ns();
		c.c2 = clock_thread_cpu_ns();
		cycle_apply(e, &c);
		c.t3 = clock_mono_ns();
		c.c3 = clock_thread_cpu_ns();
		cycle_record(e, &c);
		cycle_times(e, &c, last_id);
	}
	free(c.pend);
	free(c.holds.placed);
	free(c.holds.bind_writing);
	free(c.holds.conflict);
	if (c.snap && e->cyc.prev_spent) {
		snap_unref(e->cyc.prev_snap);
		e->cyc.prev_snap = c.snap;
	} else if (c.snap) {
		snap_unref(c.snap);
	}
	if (r < 0)
		return r;
	xmalloc_release();
	e->cyc.last_end_ns = clock_mono_ns();
	return 0;
}

void cycle_report_clear(struct cycle_report *r)
{
	if (!r)
		return;
	engine_view_unref(r->view);
	free(r->results);
	free(r->attempted);
	memset(r, 0, sizeof(*r));
}

void engine_cyclest_free(struct engine_cyclest *cs)
{
	logged_table_clear(&cs->logged);
	conflict_table_clear(&cs->conflicts);
	log_repeat_free(cs->warn_rep);
	snap_unref(cs->prev_snap);
	cs->prev_snap = NULL;
}
