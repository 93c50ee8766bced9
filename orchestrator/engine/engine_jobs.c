/* engine_jobs.c — the mover and its jobs: the mover set up from the
 * configuration (engine_jobs_setup), the table of the jobs the engine
 * handed it (each job's phase 2 is finished when the job ends:
 * engine_settle_jobs), a move's pages handed to it
 * (engine_jobs_to_mover), and the cpuset.mems writes its workers run:
 *
 * A start binding's cpuset.mems write, off the engine thread.
 * A start placement (plan_item.bind_start) narrows a young container's
 * mems to its target so that what it touches from then on lands there.
 * cgroup v2 migrates on every mems change, inside the write: what the
 * guest touched off the target before the write moves then, while the
 * writer waits for as long as the memory takes, in which, on the engine
 * thread, no other guest would be decided or moved.
 *
 * So, with the mover running, the engine writes the CPUs (phase 1, as
 * every move) and the start placement's memory step (engine_place_memory)
 * hands the mems write to a mover worker as a job of its own
 * (mover_spec.write). It shows in GET /v1/migrations like any job;
 * queued, it can be cancelled, superseded or stopped (then nothing was
 * written: the guest keeps its CPUs on the target and its old mems,
 * consistent); once running, the write ends when the kernel is done.
 * A writer process makes it (cgw_write_file_in_child), so that SIGTERM
 * need not wait for the kernel: the agent records the job stopped
 * (engine_jobs_leave_writes) and exits, the writer finishing the write.
 * The binding stays an intent on disk (bindstate.h) until the job is
 * taken, the guest's new plans wait for it, and its "moved" record is
 * written then, with the whole move's duration.
 */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/actuator/cgwrite.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/numamig.h"
#include "orchestrator/base/xalloc.h"

/* Start, reconfigure or stop the mover for CFG. Every live host has
 * one: its workers make the cpuset.mems writes that migrate, off the
 * engine thread, even where pages are not moved by move_pages(2)
 * ([memory] mover = no, no NUMA API). A fixture root's "memory" is files. */
void engine_jobs_setup(struct engine *e, const struct agent_config *cfg)
{
	struct mover_config mc = engine_mover_config(cfg);
	bool want = cfg->mover && e->hp.live && numamig_available();
	struct mover *m;
	int r;

	if (e->jobs.mover_on && !want)
		log_info("memory mover off: memory moves by cpuset.mems writes, on its workers");
	e->jobs.mover_on = false;
	if (!e->hp.live)
		return;
	if (e->jobs.mover) {
		mover_set_config(e->jobs.mover, &mc);
		e->jobs.mover_on = want;
		return;
	}
	r = mover_new(&mc, &e->hp, &m);
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "cannot start the memory mover; memory moves by cpuset.mems writes "
			  "on the engine thread");
		return;
	}
	mover_set_meminfo(m, e->src.read_meminfo);
	/* API threads read it (engine_mover). */
	__atomic_store_n(&e->jobs.mover, m, __ATOMIC_RELEASE);
	e->jobs.mover_on = want;
	if (!want) {
		log_info("memory mover off: memory moves by cpuset.mems writes, on %u worker%s", mc.workers,
			 mc.workers == 1 ? "" : "s");
		return;
	}
	log_info("memory mover: %u worker%s%s, chunks of ~%.0f ms, jobs end after %.0f s, %s", mc.workers,
		 mc.workers == 1 ? "" : "s", mc.on_target ? " on the target nodes' CPUs" : "", mc.chunk_ms,
		 mc.job_timeout_s,
		 mc.rate_mib > 0 ? "rate budget below" : "no rate limit");
	if (mc.rate_mib > 0)
		log_info("memory mover: at most %.0f MiB/s for the whole host", mc.rate_mib);
}

struct mover *engine_mover(struct engine *e)
{
	return __atomic_load_n(&e->jobs.mover, __ATOMIC_ACQUIRE);
}

static void job_add(struct engine *e, uint64_t id, struct apply_pending *p, struct bind_write *bw)
{
	if (e->jobs.n == e->jobs.cap) {
		e->jobs.cap = e->jobs.cap ? e->jobs.cap * 2 : 8;
		e->jobs.v = xrealloc(e->jobs.v, e->jobs.cap * sizeof(*e->jobs.v));
	}
	e->jobs.v[e->jobs.n++] = (struct ejob){ .id = id, .p = p, .bw = bw };
}

struct bind_write {
	struct applier *app;     /* lives until mover_stop_all (reload, stop) */
	struct apply_pending *p;
	bool bind;               /* a start binding's (else a move's memory) */
	struct apply_result res; /* the worker's, read after the job is taken */
};

/* Mover worker thread. */
static int bind_write_run(void *ctx, char *msg, size_t msgsz)
{
	struct bind_write *bw = ctx;

	/* In a writer process: at SIGTERM the agent need not wait for the
	 * kernel's migration (cgw_write_file_in_child). */
	cgw_child_writes(true);
	apply_memory(bw->app, bw->p, &bw->res);
	cgw_child_writes(false);
	switch (bw->res.status) {
	case APPLY_DONE:
		return 0;
	case APPLY_VANISHED:
		snprintf(msg, msgsz, "%s", bw->res.msg);
		return -ENOENT;
	default:
		snprintf(msg, msgsz, "%s", bw->res.msg);
		return bw->res.err < 0 ? bw->res.err : -EIO;
	}
}

static uint64_t submit(struct engine *e, struct apply_pending *p, bool bind)
{
	const struct plan_item *it = apply_pending_item(p);
	struct bind_write *bw = xcalloc(1, sizeof(*bw));
	struct mover_spec spec;
	uint64_t id;

	bw->app = e->app;
	bw->p = p;
	bw->bind = bind;
	memset(&spec, 0, sizeof(spec));
	snprintf(spec.guest, sizeof(spec.guest), "%s", it->guest_id);
	snprintf(spec.cause, sizeof(spec.cause), "%s", move_reason_name(it->reason));
	spec.to = it->to_mems;
	spec.bytes = it->migrate_bytes;
	spec.first = -1;
	spec.write = bind_write_run;
	spec.write_ctx = bw;
	/* Before the submit: a worker may take the job at once, and the
	 * binding must not be dropped as an unmade intent meanwhile. */
	if (bind)
		engine_bound_writing(e, it->guest_id, true);
	id = mover_submit(e->jobs.mover, &spec);
	log_debug("guest %s: %s cpuset.mems write to a mover worker (job %llu)", it->guest_id,
		  bind ? "start binding's" : "its memory's", (unsigned long long)id);
	job_add(e, id, p, bw);
	return id;
}

void engine_bindwrite_submit(struct engine *e, struct apply_pending *p)
{
	submit(e, p, true);
}

uint64_t engine_memwrite_submit(struct engine *e, struct apply_pending *p)
{
	return submit(e, p, false);
}

/* Did job JI end before its write ran? */
static bool never_ran(const struct mover_job_info *ji)
{
	return ji->state != MJ_DONE && ji->state != MJ_FAILED && ji->state != MJ_VANISHED;
}

/* The outcome of a write that never ran: the CPUs are on the target, the
 * mems as they were (a consistent cpuset); STATUS and the message's NOTE
 * say what that makes of the move. */
static void not_made(struct apply_result *res, const struct snapshot *snap, const struct plan_item *it,
		     const struct mover_job_info *ji, enum apply_status status, const char *note)
{
	memset(res, 0, sizeof(*res));
	res->locality_after = NAN;
	res->mems_loosened = true;
	res->mems_after = snap->guests[it->guest_idx].mems;
	apply_result_set(res, status, 0, "%s (job %llu %s before it ran): mems stay as they were", note,
			 (unsigned long long)ji->id, mover_state_name(ji->state));
}

/* A move's memory write taken from the mover: its record, as a page
 * job's (the move's own "moved" record was made when it was handed on). */
static void memwrite_settle(struct engine *e, struct ejob *job, const struct mover_job_info *ji)
{
	struct bind_write *bw = job->bw;
	const struct snapshot *snap = apply_pending_snapshot(job->p);
	const struct plan_item *it = apply_pending_item(job->p);
	struct apply_result res = bw->res;
	char decision[40];

	if (never_ran(ji)) {
		not_made(&res, snap, it, ji, APPLY_CHANGED, "its cpuset.mems write was not made");
	} else {
		size_t n = strlen(res.msg);

		snprintf(res.msg + n, sizeof(res.msg) - n, " (job %llu: the kernel migrated inside the cpuset.mems "
			 "write, %.2f s)", (unsigned long long)ji->id, ji->elapsed_s);
	}
	res.duration_s = ji->elapsed_s;
	snprintf(decision, sizeof(decision), "memory_%s", ji->state == MJ_DONE && res.status == APPLY_DONE ?
		 "arrived" : ji->state == MJ_DONE ? "failed" : mover_state_name(ji->state));
	log_info("guest %s: memory %s", it->guest_id, res.msg);
	declog_add(e->dl, declog_make(snap, it, decision, &res, false));
	apply_pending_free(job->p);
	free(bw);
	job->p = NULL;
	job->bw = NULL;
}

static void bindwrite_settle(struct engine *e, struct ejob *job, const struct mover_job_info *ji)
{
	struct bind_write *bw = job->bw;
	const struct snapshot *snap = apply_pending_snapshot(job->p);
	const struct plan_item *it = apply_pending_item(job->p);
	struct apply_result res = bw->res;

	if (!bw->bind) {
		memwrite_settle(e, job, ji);
		return;
	}
	if (never_ran(ji)) {
		/* nothing bound */
		not_made(&res, snap, it, ji, APPLY_DONE, "cpus moved; its start binding's cpuset.mems write was not made");
		/* the record's window holds the CPU write (check_decisions) */
		res.duration_s = apply_pending_age_s(job->p);
	} else {
		/* The whole move, as the engine thread's write measured it:
		 * from its CPU write to the end of the mems write. */
		size_t n = strlen(res.msg);

		snprintf(res.msg + n, sizeof(res.msg) - n, " (job %llu, %.2f s in the write)",
			 (unsigned long long)ji->id, ji->elapsed_s);
	}
	engine_log_move(snap, it, &res);
	declog_add(e->dl, declog_make(snap, it, engine_move_decision(res.status), &res, false));
	if (res.status == APPLY_DONE && ji->state == MJ_DONE)
		engine_bound_add(e, snap, it);
	else
		engine_bound_writing(e, it->guest_id, false);
	engine_count_outcome(&e->stats, NULL, it, res.status, 0);
	engine_save_bindings(e);
	apply_pending_free(job->p);
	free(bw);
	job->p = NULL;
	job->bw = NULL;
}

bool engine_bindwrite_pending(const struct engine *e, const char *id)
{
	for (unsigned i = 0; i < e->jobs.n; i++)
		if (e->jobs.v[i].bw && strcmp(apply_pending_item(e->jobs.v[i].p)->guest_id, id) == 0)
			return true;
	return false;
}

enum phase_end engine_jobs_to_mover(struct engine *e, struct apply_pending *p, pid_t *pids, unsigned npids,
			       struct apply_result *res)
{
	const struct plan_item *it = apply_pending_item(p);
	struct mover_spec spec;
	nodemask_t *pid_to;
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
	pid_to = apply_pending_pid_targets(e->app, p, pids, npids);
	spec.pid_to = pid_to;
	spec.bytes = it->migrate_bytes;
	spec.first = it->first_bytes ? it->first_node : -1;
	spec.first_bytes = it->first_bytes;
	spec.wait_room = apply_pending_room_wait(p);
	spec.min_free_bytes = e->conf.cfg.policy.min_free_bytes;
	spec.min_free_share = e->conf.cfg.policy.min_free_share;
	id = mover_submit(e->jobs.mover, &spec);
	free(pids);
	free(pid_to);
	n = strlen(res->msg);
	if (spec.wait_room)
		snprintf(res->msg + n, sizeof(res->msg) - n, " (job %llu; %s: it waits for the room)",
			 (unsigned long long)id, apply_pending_room_note(p));
	else
		snprintf(res->msg + n, sizeof(res->msg) - n, " (job %llu)", (unsigned long long)id);
	job_add(e, id, p, NULL);
	return PHASE_JOB;
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

double engine_mover_rate(const struct engine *e)
{
	return mover_rate_mibs(&e->jobs.rate);
}

/* Jobs the mover ended: narrow a strictly bound guest's mems, record when
 * (and whether) its memory arrived. Engine thread. */
void engine_settle_jobs(struct engine *e)
{
	struct mover_job_info *fin;
	unsigned n;

	if (!e->jobs.mover)
		return;
	n = mover_take_finished(e->jobs.mover, &fin);
	for (unsigned k = 0; k < n; k++) {
		const struct mover_job_info *ji = &fin[k];
		struct apply_pending *p = NULL;
		struct apply_result res;
		char from[NODELIST_BUFSZ], to[NODELIST_BUFSZ], decision[40], narrow[NODELIST_BUFSZ + 240], how[96] = "";
		char p99[32];
		double mib = (double)ji->bytes_done / 1048576.0;
		enum apply_status outcome;
		bool narrow_later = false;
		int settle = 0;

		mover_rate_add(&e->jobs.rate, ji->started_real_ns, ji->ended_real_ns, ji->bytes_done);

		for (unsigned i = 0; i < e->jobs.n && !p; i++) {
			struct ejob job = e->jobs.v[i];

			if (job.id != ji->id)
				continue;
			e->jobs.v[i] = e->jobs.v[--e->jobs.n];
			if (job.bw) {
				bindwrite_settle(e, &job, ji);
				break;
			}
			p = job.p;
		}
		if (!p)
			continue;
		/* A job that ran to its end measured what the move cost: its
		 * guest's cool-down (auto) is sized by that from now (a
		 * superseded or cancelled one belongs to a move since made or
		 * refused). */
		if (ji->state == MJ_DONE || ji->state == MJ_PARTIAL || ji->state == MJ_EXPIRED)
			engine_state_job_cost(e, ji->guest, policy_job_cooldown(&e->conf.cfg.policy, ji->elapsed_s));
		memset(&res, 0, sizeof(res));
		res.locality_after = NAN;
		outcome = engine_job_outcome(ji->state, apply_pending_soft(p), &res.mems_loosened);
		mask_or(&res.mems_after, &apply_pending_snapshot(p)->guests[apply_pending_item(p)->guest_idx].mems,
			&apply_pending_item(p)->to_mems);
		/* Narrowing a strict guest migrates what is left: only once its
		 * pages are in place. A job that ended early leaves its mems
		 * wide (old ∪ new: consistent, never empty), and its record
		 * says so (mems_after). */
		/* The narrowing is a cpuset write: with a migrating write in
		 * flight it would wait in the kernel for that migration, so
		 * the mems stay wide (a later plan narrows them). */
		if (ji->state == MJ_DONE && !apply_pending_soft(p) && engine_jobs_writes_running(e)) {
			narrow_later = true;
			res.mems_loosened = true;
		} else if (ji->state == MJ_DONE) {
			settle = apply_memory_settle(e->app, p, &res);
		}
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
		else if (narrow_later)
			snprintf(narrow, sizeof(narrow), "; its mems not narrowed to %s, they stay on both: another "
				 "guest's cpuset.mems write is migrating, which the narrowing would wait for", to);
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

unsigned engine_jobs_leave_writes(struct engine *e)
{
	unsigned left = 0;

	for (unsigned i = 0; e->jobs.mover && i < e->jobs.n; i++) {
		const struct ejob *job = &e->jobs.v[i];
		const struct plan_item *it;
		struct mover_job_info ji;
		struct apply_result res;
		char to[NODELIST_BUFSZ];

		if (!job->bw || !mover_get(e->jobs.mover, job->id, &ji) || ji.state != MJ_RUNNING)
			continue;
		/* The worker still uses P and its result: neither is read nor
		 * freed here. */
		it = apply_pending_item(job->p);
		memset(&res, 0, sizeof(res));
		res.locality_after = NAN;
		res.mems_after = it->to_mems;
		res.duration_s = ji.elapsed_s;
		mask_format(&it->to_mems, to, sizeof(to));
		apply_result_set(&res, APPLY_CHANGED, 0, "job %llu stopped: the agent stopped %.2f s into %s cpuset.mems "
				 "write to %s; the kernel finishes it in the writer process, which ends then%s",
				 (unsigned long long)ji.id, ji.elapsed_s, job->bw->bind ? "its start binding's" : "its",
				 to, job->bw->bind ? "; the binding stays saved, released at the next start" : "");
		log_info("guest %s: memory %s", it->guest_id, res.msg);
		declog_add(e->dl, declog_make(apply_pending_snapshot(job->p), it, "memory_stopped", &res, false));
		left++;
	}
	return left;
}

const char *engine_jobs_migrating_write(const struct engine *e, uint64_t *job)
{
	for (unsigned i = 0; i < e->jobs.n; i++)
		if (e->jobs.v[i].bw) {
			*job = e->jobs.v[i].id;
			return apply_pending_item(e->jobs.v[i].p)->guest_id;
		}
	*job = 0;
	return NULL;
}

bool engine_jobs_writes_running(const struct engine *e)
{
	for (unsigned i = 0; i < e->jobs.n; i++)
		if (e->jobs.v[i].bw)
			return true;
	return false;
}

int engine_drain_migrations(struct engine *e, double timeout_s)
{
	bool idle = true;

	if (!e->jobs.mover)
		return 0;
	idle = mover_wait_idle(e->jobs.mover, timeout_s);
	engine_settle_jobs(e);
	return idle ? 0 : -ETIMEDOUT;
}

bool engine_jobs_free(struct engine_jobs *j)
{
	/* A worker still in a write uses its job's P and write: left, as the
	 * mover is, to the process's exit. */
	if (!mover_free(j->mover))
		return false;
	for (unsigned i = 0; i < j->n; i++) {
		apply_pending_free(j->v[i].p);
		free(j->v[i].bw);
	}
	free(j->v);
	return true;
}
