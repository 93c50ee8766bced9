/* engine_bindwrite.c — a start binding's cpuset.mems write, off the
 * engine thread.
 *
 * A start placement (plan_item.bind_start) narrows a young container's
 * mems to its target so that what it touches from then on lands there.
 * cgroup v2 migrates on every mems change, inside the write: what the
 * guest touched off the target before the write moves then, while the
 * writer waits: seconds under load (tests/numa-vm/results/start-place/),
 * in which, on the engine thread, no other guest was decided or moved.
 *
 * So, with the mover running, the engine writes the CPUs (phase 1, as
 * every move) and the start placement's memory step (engine_place_memory)
 * hands the mems write to a mover worker as a job of its own
 * (mover_spec.write). It shows in GET /v1/migrations like any job;
 * queued, it can be cancelled, superseded or stopped (then nothing was
 * written: the guest keeps its CPUs on the target and its old mems,
 * consistent); once running, the write ends when the kernel is done.
 * The binding stays an intent on disk (bindstate.h) until the job is
 * taken, the guest's new plans wait for it, and its "moved" record is
 * written then, with the whole move's duration, as the engine thread
 * wrote it before.
 */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/xalloc.h"

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

	apply_memory(bw->app, bw->p, &bw->res);
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
	id = mover_submit(e->mover, &spec);
	log_debug("guest %s: %s cpuset.mems write to a mover worker (job %llu)", it->guest_id,
		  bind ? "start binding's" : "its memory's", (unsigned long long)id);
	engine_job_add(e, id, p, bw);
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

void engine_bindwrite_settle(struct engine *e, struct ejob *job, const struct mover_job_info *ji)
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
	for (unsigned i = 0; i < e->njobs; i++)
		if (e->jobs[i].bw && strcmp(apply_pending_item(e->jobs[i].p)->guest_id, id) == 0)
			return true;
	return false;
}
