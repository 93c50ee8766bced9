/* engine_cycle.c — one cycle, in four steps (engine_cycle): acquire a
 * snapshot, the mover's live jobs laid on it (cycle_acquire); decide:
 * start placement, then the registered policy, told what this cycle
 * holds back (guests just placed or released, start bindings still
 * being written: plan_holds), and how each move's memory goes
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
};
STRTAB_NAME(engine_cycle_phase_name, enum engine_cycle_phase, cycle_phase_names)

static void hist_observe(struct engine_hist *h, double s)
{
	for (unsigned b = 0; b < ENGINE_CYCLE_NR_BUCKETS; b++)
		h->le[b] += s <= engine_cycle_buckets[b];
	h->count++;
	h->sum_s += s;
}

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

/* kernel.numa_balancing, read with every snapshot (an operator may flip
 * it): say once, and at each change, how the agent works beside it. */
static void note_balancing(struct engine *e, const struct snapshot *snap)
{
	int v = snap->numa_balancing;

	e->stats.kernel_balancing = e->cfg.kernel_balancing;
	if (e->stats.cycles > 0 && v == e->stats.numa_balancing)
		return;
	e->stats.numa_balancing = v;
	if (kbal_kernel_moves(v))
		log_info("kernel.numa_balancing = %d: the kernel migrates memory on fault too; numaorchd works "
			 "beside it (kernel_balancing = %s: %s)", v, kbal_setting_name(e->cfg.kernel_balancing),
			 e->cfg.kernel_balancing == KBAL_DEFER ? "numaorchd moves CPUs and widens mems, the kernel "
			 "moves the memory" : e->cfg.kernel_balancing == KBAL_MIGRATE ? "numaorchd migrates memory "
			 "itself" : "the kernel moves a running guest's memory, numaorchd an idle one's");
	else if (v >= 0)
		log_info("kernel.numa_balancing = %d: the kernel's NUMA balancing is off; numaorchd migrates memory "
			 "itself", v);
	else
		log_info("kernel.numa_balancing: not available on this kernel; numaorchd migrates memory itself");
}

void engine_job_add(struct engine *e, uint64_t id, struct apply_pending *p, struct bind_write *bw)
{
	if (e->njobs == e->capjobs) {
		e->capjobs = e->capjobs ? e->capjobs * 2 : 8;
		e->jobs = xrealloc(e->jobs, e->capjobs * sizeof(*e->jobs));
	}
	e->jobs[e->njobs++] = (struct ejob){ .id = id, .p = p, .bw = bw };
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

/* Hand P's pages to the mover (PIDS: its processes, taken). */
static enum phase_end to_mover(struct engine *e, struct apply_pending *p, pid_t *pids, unsigned npids,
			       struct apply_result *res)
{
	const struct plan_item *it = apply_pending_item(p);
	struct mover_spec spec;
	uint64_t id;
	size_t n;

	/* move_pages(2) needs the target inside the task's mems. */
	apply_memory_widen(e->app, p, "to move by the mover", res);
	if (res->status != APPLY_DONE) {
		free(pids);
		return PHASE_DONE;
	}
	memset(&spec, 0, sizeof(spec));
	snprintf(spec.guest, sizeof(spec.guest), "%s", it->guest_id);
	snprintf(spec.cause, sizeof(spec.cause), "%s", move_reason_name(it->reason));
	spec.pids = pids;
	spec.npids = npids;
	spec.to = it->to_mems;
	spec.bytes = it->migrate_bytes;
	spec.first = it->first_bytes ? it->first_node : -1;
	spec.first_bytes = it->first_bytes;
	spec.wait_room = apply_pending_room_wait(p);
	spec.min_free_bytes = e->cfg.policy.min_free_bytes;
	spec.min_free_share = e->cfg.policy.min_free_share;
	id = mover_submit(e->mover, &spec);
	free(pids);
	n = strlen(res->msg);
	if (spec.wait_room)
		snprintf(res->msg + n, sizeof(res->msg) - n, " (job %llu; %s: it waits for the room)",
			 (unsigned long long)id, apply_pending_room_note(p));
	else
		snprintf(res->msg + n, sizeof(res->msg) - n, " (job %llu)", (unsigned long long)id);
	engine_job_add(e, id, p, NULL);
	return PHASE_JOB;
}

/* Phase 2 of one move: its memory, the way the plan says
 * (plan_item.mem_way) as the applier's facts left it, which is recorded
 * in the plan's item PIT (mem_way_applied). CALLER_WAITS: a caller waits
 * for the cycle's report. */
static enum phase_end memory_phase(struct engine *e, struct plan_item *pit, struct apply_pending *p,
				   bool caller_waits, struct apply_result *res)
{
	const struct plan_item *it = apply_pending_item(p);
	pid_t *pids = NULL;
	unsigned npids = 0;
	char to[NODELIST_BUFSZ];
	uint64_t id;

	pit->mem_way_applied = final_way(e, it, p, caller_waits, &pids, &npids);
	switch (pit->mem_way_applied) {
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
		return to_mover(e, p, pids, npids, res);
	default:
		/* The write on this thread (with no process, the mems change
		 * is all). */
		free(pids);
		apply_memory(e->app, p, res);
		return PHASE_DONE;
	}
}

enum apply_status engine_job_outcome(enum mover_state st, bool soft, bool *wide)
{
	/* A vanished guest has no mems left to name. */
	*wide = st != MJ_VANISHED && (soft || st != MJ_DONE);
	switch (st) {
	case MJ_DONE: return APPLY_DONE;
	case MJ_VANISHED: return APPLY_VANISHED;
	case MJ_FAILED: return APPLY_FAILED;
	default: return APPLY_CHANGED;
	}
}

/* Jobs the mover ended: narrow a strictly bound guest's mems, record when
 * (and whether) its memory arrived. Engine thread. */
void engine_settle_jobs(struct engine *e)
{
	struct mover_job_info *fin;
	unsigned n;

	if (!e->mover)
		return;
	n = mover_take_finished(e->mover, &fin);
	for (unsigned k = 0; k < n; k++) {
		const struct mover_job_info *ji = &fin[k];
		struct apply_pending *p = NULL;
		struct apply_result res;
		char from[NODELIST_BUFSZ], to[NODELIST_BUFSZ], decision[40], narrow[NODELIST_BUFSZ + 240], how[96] = "";
		char p99[32];
		double mib = (double)ji->bytes_done / 1048576.0;
		enum apply_status outcome;
		int settle;

		for (unsigned i = 0; i < e->njobs && !p; i++) {
			struct ejob job = e->jobs[i];

			if (job.id != ji->id)
				continue;
			e->jobs[i] = e->jobs[--e->njobs];
			if (job.bw) {
				engine_bindwrite_settle(e, &job, ji);
				break;
			}
			p = job.p;
		}
		if (!p)
			continue;
		memset(&res, 0, sizeof(res));
		res.locality_after = NAN;
		outcome = engine_job_outcome(ji->state, apply_pending_soft(p), &res.mems_loosened);
		mask_or(&res.mems_after, &apply_pending_snapshot(p)->guests[apply_pending_item(p)->guest_idx].mems,
			&apply_pending_item(p)->to_mems);
		/* Narrowing a strict guest migrates what is left: only once its
		 * pages are in place. A job that ended early leaves its mems
		 * wide (old ∪ new: consistent, never empty), and its record
		 * says so (mems_after). */
		settle = ji->state == MJ_DONE ? apply_memory_settle(e->app, p, &res) : 0;
		mask_format(&ji->from, from, sizeof(from));
		mask_format(&ji->to, to, sizeof(to));
		/* A refused narrowing leaves the guest bound to old ∪ new: the
		 * record says so (mems_after) instead of implying the target. */
		if (settle < 0 && settle != -ENOENT && settle != -ESRCH && settle != -ENODEV)
			snprintf(narrow, sizeof(narrow), "; narrowing its mems to %s failed (%s), they stay on both",
				 to, strerror(-settle));
		else if (settle < 0 && res.msg[0])
			/* gone, or (a VM) not the instance the job moved: say which */
			snprintf(narrow, sizeof(narrow), "; its mems not narrowed to %s: %.200s", to, res.msg);
		else
			narrow[0] = '\0';
		if (isnan(ji->stall_p99_ms))
			snprintf(p99, sizeof(p99), "-");
		else
			snprintf(p99, sizeof(p99), "%.1f", ji->stall_p99_ms);
		/* Who moved what, when the mover's own calls were not all of it
		 * (mover_settle_step): beside the kernel's balancing, pages it
		 * could not see arrive on fault, or by migrate_pages(2). */
		if (ji->kernel_bytes || ji->swept_bytes)
			snprintf(how, sizeof(how), " (%.1f MiB of it by the kernel's balancing on fault, %.1f MiB by "
				 "migrate_pages)", (double)ji->kernel_bytes / 1048576.0, (double)ji->swept_bytes / 1048576.0);
		apply_result_set(&res, outcome, ji->state == MJ_FAILED ? -EIO : 0,
			"job %llu %s: %.1f MiB moved off nodes %s onto %s in %.2f s (%.0f MiB/s)%s, %llu chunks, "
			"longest stall %.1f ms, p99 %s ms%s%s%s", (unsigned long long)ji->id, mover_state_name(ji->state),
			mib, from[0] ? from : "-", to, ji->elapsed_s, ji->elapsed_s > 0 ? mib / ji->elapsed_s : 0, how,
			(unsigned long long)ji->chunks, ji->stall_max_ms, p99, ji->msg[0] ? ": " : "", ji->msg, narrow);
		res.duration_s = ji->elapsed_s;
		snprintf(decision, sizeof(decision), "memory_%s", ji->state == MJ_DONE ? "arrived" :
			 mover_state_name(ji->state));
		log_info("guest %s: memory %s", apply_pending_guest(p), res.msg);
		declog_add(e->dl, declog_make(apply_pending_snapshot(p), apply_pending_item(p), decision, &res, false));
		apply_pending_free(p);
	}
	free(fin);
}

int engine_drain_migrations(struct engine *e, double timeout_s)
{
	bool idle = true;

	if (!e->mover)
		return 0;
	idle = mover_wait_idle(e->mover, timeout_s);
	engine_settle_jobs(e);
	return idle ? 0 : -ETIMEDOUT;
}

struct mover *engine_mover(struct engine *e)
{
	return __atomic_load_n(&e->mover, __ATOMIC_ACQUIRE);
}

double engine_next_cycle_s(const struct engine *e)
{
	double s = e->cfg.interval_s;

	for (unsigned i = 0; i < e->nbound && s > ENGINE_BIND_CYCLE_S; i++)
		/* (one read back from before a restart waits for an applying
		 * cycle, not for a sooner one) */
		if (!e->bound[i].restored)
			s = ENGINE_BIND_CYCLE_S;
	/* A guest seen for the first time was "decided next cycle": its use
	 * is measured over the gap, which need not wait for the interval
	 * (churn: a pod decided 9 s after it was first seen). */
	if (e->first_sight && s > ENGINE_TRIGGER_GAP_S)
		s = ENGINE_TRIGGER_GAP_S;
	if (e->spread_cycles && s > ENGINE_SPREAD_CYCLE_S)
		s = ENGINE_SPREAD_CYCLE_S;
	return s;
}

/* Log, record and count the outcome of plan item I. */
static void record_move(struct engine *e, const struct snapshot *snap, struct pstate *next,
			const struct plan_item *it, const struct apply_result *res, struct cycle_report *report,
			unsigned i)
{
	engine_log_move(snap, it, res);
	declog_add(e->dl, declog_make(snap, it, engine_move_decision(res->status), res, false));
	if (it->bind_start && res->status == APPLY_DONE)
		engine_bound_add(e, snap, it);
	if (it->kind == PLAN_MOVE && res->status == APPLY_DONE && mask_count(&it->to_nodes) >= 2 &&
	    it->guest_idx < snap->nr_guests && snap->guests[it->guest_idx].cpu_use >= SNAP_BUSY_THREAD_CPU)
		e->spread_cycles = ENGINE_SPREAD_CYCLES;
	if (report) {
		report->results[i] = *res;
		report->attempted[i] = true;
	}
	engine_count_outcome(&e->stats, next, it, res->status, snap->mono_ns);
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

/* The mover's live jobs, on the snapshot being finalized: each guest's
 * (snap_guest.job: a plan's move one of them makes already is held), and
 * the memory they are still moving into each node
 * (snap_node.mem_leaving/mem_coming) while the mover is on. */
static void mover_facts(void *ctx, struct snapshot *s)
{
	struct engine *e = ctx;

	if (!e->mover)
		return;
	mover_note_jobs(e->mover, s);
	if (e->mover_on)
		mover_flows(e->mover, s);
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
	} *pend;
	unsigned npend;
	int64_t t0, t1, t2, t3;
};

/* Acquire: settle what ended since the last cycle, read the snapshot (the
 * operator's overrides and the mover's flows folded in), and note what
 * it says of the host. */
static int cycle_acquire(struct engine *e, struct cycle *c)
{
	struct snap_policy_overlay ov = {
		.get = e->gs ? override_policy : NULL, .ctx = e->gs, .flows = mover_facts, .flows_ctx = e
	};
	int r;

	engine_apply_schedule(e);
	engine_settle_jobs(e);
	e->watch_pending = false;
	r = e->src.snapshot(e->acq, e->cfg.sample_s, &ov, &c->snap);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "cannot read the host topology from %s", e->hp.sysfs);
	c->t1 = clock_mono_ns();
	/* The same broken file gives the same warning every cycle: once,
	 * then with a count now and then (47 lines a cycle on one host). */
	if (!e->warn_rep)
		e->warn_rep = log_repeat_new();
	log_repeat_round(e->warn_rep, LOG_LEVEL_WARN, c->snap->warnings, c->snap->nr_warnings);

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
	if (e->stats.cpu_nodes <= 1 && !e->warned_one_node) {
		log_warn("this host has %u NUMA node%s with CPUs: numaorchd keeps discovering and "
			 "reporting guests, and moves nothing", e->stats.cpu_nodes,
			 e->stats.cpu_nodes == 1 ? "" : "s");
		e->warned_one_node = true;
	}
	return 0;
}

static void ids_add(char (**ids)[GUEST_ID_MAX], unsigned *n, const char *id)
{
	*ids = xrealloc(*ids, (*n + 1) * sizeof(**ids));
	snprintf((*ids)[(*n)++], GUEST_ID_MAX, "%s", id);
}

/* The guests of the snapshot this cycle's start placement dealt with
 * (engine_place_handled), and those whose start binding's cpuset.mems
 * write still runs (engine_bindwrite_pending), into C's holds. */
static void note_holds(struct engine *e, struct cycle *c)
{
	struct plan_holds *h = &c->holds;

	for (unsigned i = 0; i < c->snap->nr_guests; i++) {
		const char *id = c->snap->guests[i].id;

		if (engine_place_handled(e, id))
			ids_add(&h->placed, &h->nplaced, id);
		if (e->njobs && engine_bindwrite_pending(e, id))
			ids_add(&h->bind_writing, &h->nbind_writing, id);
	}
	h->applying = c->do_apply;
}

/* Decide: domains that just started are placed first, and (an applying
 * cycle) start bindings from before a restart released, before the
 * policy runs; then the policy's plan and next state, each item it must
 * leave be this cycle held (plan_item.hold). */
static int cycle_decide(struct engine *e, struct cycle *c)
{
	const struct advice_reservation *res;
	unsigned nres;
	int r;

	/* (the mode as the schedule left it, cycle_acquire) */
	c->do_apply = e->cfg.mode == MODE_ENFORCE && !c->dry_run;
	engine_place_started(e, c->snap, c->dry_run);
	if (e->cfg.mode == MODE_OFF)
		return 0;
	if (c->do_apply)
		engine_place_restore(e, c->snap);
	note_holds(e, c);
	nres = engine_reservations(e, &res);
	r = e->pol.decide(&e->cfg.policy, c->snap, e->ps, c->report != NULL, res, nres, &c->holds, &c->plan,
			  &c->next);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "policy rejected its configuration");
	plan_mem_ways(c->plan, c->snap, &(struct mem_way_cfg){
		.kbal = e->cfg.kernel_balancing, .strict_mems = e->cfg.strict_mems,
		.mover = e->mover != NULL, .mover_on = e->mover_on,
	});
	return 0;
}

/* A planned move not carried out (advise mode, a dry run): said once, not
 * once a cycle (an explicit request, the report, always gets its records). */
static void say_planned(struct engine *e, const struct cycle *c, const struct plan_item *it)
{
	if (logged_repeats(&e->logged, it, c->report != NULL, c->snap->mono_ns, e->cfg.policy.cooldown_ns))
		return;
	engine_log_move(c->snap, it, NULL);
	declog_add(e->dl, declog_make(c->snap, it, e->cfg.mode == MODE_ADVISE && !c->dry_run ? "advised" : "planned",
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
		if (e->mover) {
			uint64_t old = mover_job_of(e->mover, it->guest_id);

			if (old)
				mover_cancel(e->mover, old, MJ_SUPERSEDED);
		}
		/* CPUs first: every move's cpuset.cpus this pass, the memory
		 * of those that must migrate after all of them. */
		apply_cpus(e->app, snap, it, &res, &c->pend[c->npend].p);
		if (c->pend[c->npend].p) {
			c->pend[c->npend++].idx = i;
			return;
		}
		record_move(e, snap, c->next, it, &res, c->report, i);
	} else if (it->kind == PLAN_SKIP) {
		if (logged_repeats(&e->logged, it, c->report != NULL, snap->mono_ns, e->cfg.policy.cooldown_ns))
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

	if (e->spread_cycles)
		e->spread_cycles--;
	if (c->report && plan) {
		c->report->nr_results = nitems;
		c->report->results = xcalloc(nitems ? nitems : 1, sizeof(*c->report->results));
		c->report->attempted = xcalloc(nitems ? nitems : 1, sizeof(bool));
		c->report->applied = c->do_apply;
	}
	if (c->do_apply)
		engine_place_begin(e, c->snap, plan);
	applier_begin_cycle(e->app, c->snap, e->mover && e->mover_on);
	c->pend = xcalloc(nitems ? nitems : 1, sizeof(*c->pend));
	for (unsigned i = 0; i < nitems; i++)
		apply_item(e, c, i);
	for (unsigned k = 0; k < c->npend; k++) {
		const struct plan_item *it = &plan->items[c->pend[k].idx];
		struct apply_result res;

		/* A cycle of big migrations can outlast the watchdog. */
		if (e->watchdog_usec)
			notify_watchdog();
		switch (memory_phase(e, &plan->items[c->pend[k].idx], c->pend[k].p, c->report != NULL, &res)) {
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

	e->first_sight = false;
	for (unsigned i = 0; plan && i < plan->nr_items && !e->first_sight; i++)
		e->first_sight = plan->items[i].kind == PLAN_SKIP && plan->items[i].skip == SKIP_NO_USAGE;
	if (plan)
		logged_update(&e->logged, plan, snap->mono_ns, e->cfg.policy.cooldown_ns);
	if (c->next) {
		pstate_free(e->ps);
		e->ps = c->next;
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
	engine_publish(e, snap, c->plan);
	if (c->report)
		c->report->view = engine_view_get(e);
	log_debug("cycle %llu: %u guests, %u plan items, %.1f ms (acquire %.1f, decide %.1f, apply %.1f)",
		  (unsigned long long)snap->seq, snap->nr_guests, plan ? plan->nr_items : 0,
		  e->stats.last_cycle_s * 1e3, e->stats.last_acquire_s * 1e3,
		  e->stats.last_decide_s * 1e3, e->stats.last_apply_s * 1e3);
}

int engine_cycle(struct engine *e, bool dry_run, struct cycle_report *report)
{
	struct cycle c = { .dry_run = dry_run || e->cfg.dry_run, .report = report, .t0 = clock_mono_ns() };
	int r;

	if (report)
		memset(report, 0, sizeof(*report));
	r = cycle_acquire(e, &c);
	if (r < 0)
		return r;
	r = cycle_decide(e, &c);
	if (r >= 0) {
		c.t2 = clock_mono_ns();
		cycle_apply(e, &c);
		c.t3 = clock_mono_ns();
		cycle_record(e, &c);
	}
	free(c.pend);
	free(c.holds.placed);
	free(c.holds.bind_writing);
	snap_unref(c.snap);
	if (r < 0)
		return r;
	xmalloc_release();
	e->last_cycle_end_ns = clock_mono_ns();
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
