/* engine_jobs.h — the mover and the jobs the engine handed it
 * (engine_jobs.c): moves' pages, and the cpuset.mems writes run on its
 * workers (a start binding's, or a move's memory the kernel's way).
 * Calls engine_bind.c (a start binding's write made or not),
 * engine_record.c and engine_conf.c. */
#ifndef NUMAORCH_ENGINE_JOBS_H
#define NUMAORCH_ENGINE_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/store/config.h"

struct engine;
struct bind_write;

/* Written by engine_jobs.c alone. MOVER and MOVER_ON are read by the
 * files above it (the loop polls its event fd, the cycle lays its live
 * jobs on the snapshot and cancels a superseded one, the view shows its
 * rate), N by engine_cycle.c. */
struct engine_jobs {
	/* The mover (NULL only on a fixture root, or when it cannot start).
	 * Its workers also run every cpuset.mems write that migrates, so it
	 * runs with [memory] mover = no or without the NUMA API too;
	 * MOVER_ON says whether it moves pages. Once started, it lives
	 * until engine_free. */
	struct mover *mover;
	bool mover_on;                /* [memory] mover as configured now, and move_pages(2) there */
	unsigned n, cap;
	struct ejob {
		uint64_t id;
		struct apply_pending *p;
		/* A cpuset.mems write run by a mover worker (a start
		 * binding's, or a move's memory the kernel's way), NULL for a
		 * job that moves pages. */
		struct bind_write *bw;
	} *v;
	/* What the mover moved per second, from its jobs' records as they
	 * are settled: sizes the auto budgets (engine_mover_rate). */
	struct mover_rate rate;
};

/* What became of a move's phase 2 (its memory). */
enum phase_end {
	PHASE_DONE,       /* RES is the outcome; the caller records it and frees P */
	PHASE_JOB,        /* P belongs to a mover job moving pages; RES is recorded now */
	PHASE_WRITE_JOB,  /* P belongs to a start binding's write job: recorded when taken */
};

/* Start, reconfigure or stop the mover for CFG. */
void engine_jobs_setup(struct engine *e, const struct agent_config *cfg);
/* false: a cpuset.mems write was still in the kernel (mover_free); J, the
 * mover and what its jobs use are left to the process's exit. */
bool engine_jobs_free(struct engine_jobs *j);
/* At exit, after the mover stopped its other jobs: record each write job
 * still in the kernel (memory_stopped; its writer process finishes it).
 * Returns how many. */
unsigned engine_jobs_leave_writes(struct engine *e);
/* Is a cpuset.mems write handed to a mover worker queued or running?
 * While one is, any cpuset write the engine thread made would wait in
 * the kernel until its migration ends (the kernel flushes its pending
 * cpuset migrations before a cpuset write returns): the engine makes
 * none (HOLD_MIGRATING_WRITE, engine_cycle.c). */
bool engine_jobs_writes_running(const struct engine *e);
/* The guest of the first such write, and its job in *JOB; NULL (*JOB 0):
 * none. */
const char *engine_jobs_migrating_write(const struct engine *e, uint64_t *job);
/* Hand P's pages to the mover (PIDS: its processes, taken); widens its
 * mems first. PHASE_JOB: P is the job's; PHASE_DONE: RES says why not. */
enum phase_end engine_jobs_to_mover(struct engine *e, struct apply_pending *p, pid_t *pids, unsigned npids,
				    struct apply_result *res);
/* A start binding's cpuset.mems write off the engine thread. Submits P's
 * write as a mover job; P then belongs to it, and its "moved" record
 * comes when the job is taken (engine_settle_jobs). */
void engine_bindwrite_submit(struct engine *e, struct apply_pending *p);
/* A move's memory the kernel's way (apply_memory: a cpuset.mems write
 * that migrates inside the kernel) on a mover worker: P belongs to the
 * job; its outcome is recorded when the job is taken, as a mover job's
 * (memory_arrived, or how it ended). Returns the job's id. */
uint64_t engine_memwrite_submit(struct engine *e, struct apply_pending *p);
/* Has guest ID a cpuset.mems write in flight (a start binding's or a
 * move's)? Its new plans wait. */
bool engine_bindwrite_pending(const struct engine *e, const char *id);
/* The mover's measured host-wide MiB/s (mover_rate_mibs); 0: not yet. */
double engine_mover_rate(const struct engine *e);
/* Jobs the mover ended: settle their guests' mems, record them. */
void engine_settle_jobs(struct engine *e);
/* How the record of a job that ended as ST reads before its settle step:
 * the outcome, and in *WIDE whether the guest's mems stay on old ∪ new
 * (the record's mems_after). A soft binding always does (its mems are
 * widened again after the move); a strict one — a libvirt domain's live
 * nodeset too — unless the job ended done: only then are they narrowed
 * (apply_memory_settle, which clears *WIDE when it narrows). A job that
 * ended early leaves them wide, and its record must not imply the target;
 * a guest that vanished has none. Pure. */
enum apply_status engine_job_outcome(enum mover_state st, bool soft, bool *wide);

#endif
