/* engine_int.h — private to the engine's files: the engine's state and
 * what they call of each other.
 *
 *   engine.c        life cycle, sources and mover set-up, the published
 *                   view, configuration and schedule, reservations
 *   engine_loop.c   the loop (signals, timer, triggers) and the call queue
 *   engine_cycle.c  one cycle: acquire, decide, apply, record, publish
 *   engine_place.c  start placement (VMs and containers): applying the
 *                   policy's choice, the bindings' cycle hooks
 *   engine_bind.c   start bindings: kept, saved, released when due
 *   engine_bindwrite.c  a cpuset.mems write on a mover worker
 */
#ifndef NUMAORCH_ENGINE_INT_H
#define NUMAORCH_ENGINE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/store/logged.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/model/pstate.h"
#include "orchestrator/model/resv.h"
#include "orchestrator/actuator/vmplugin.h"

struct call {
	engine_fn fn;
	void *arg;
	int ret;
	bool done, abandoned;
	pthread_cond_t cond;
	struct call *next;
};

struct engine {
	/* base: the configuration as given (file, command line, PUT /v1/policy);
	 * cfg: base with the [schedule] windows active now applied — what
	 * every cycle uses. */
	struct agent_config base;
	struct agent_config cfg;
	uint64_t sched_active;
	bool sched_valid;
	double sched_rate_mib;       /* the mover's rate in force (logged on change) */
	bool rate_known;
	bool notified_ready;          /* READY=1 sent (after the first published cycle) */
	uint64_t watchdog_usec;       /* WatchdogSec= as systemd passed it, 0: none */
	struct host_paths hp;
	struct source_ops src;        /* registered by main */
	struct policy_ops pol;
	struct acquirer *acq;
	struct applier *app;
	const struct vmplugin *vmp; /* the libvirt module, NULL until loaded */
	struct vmsrc *vm;       /* libvirt VM source, NULL if disabled */
	struct vmapply *va;     /* its actuator */
	struct declog *dl;
	struct pstate *ps;
	struct history *hist;         /* per-guest history, readable from any thread */

	/* The mover (NULL only on a fixture root) and the moves whose memory
	 * it is moving: each job's phase 2 is finished when the job ends
	 * (settle_job). Its workers also run every cpuset.mems write that
	 * migrates (engine_bindwrite.c), so it runs with [memory] mover = no
	 * or without the NUMA API too; MOVER_ON says whether it moves pages. */
	struct mover *mover;          /* once started, lives until engine_free */
	bool mover_on;                /* [memory] mover as configured now, and move_pages(2) there */
	unsigned njobs, capjobs;
	struct ejob {
		uint64_t id;
		struct apply_pending *p;
		/* A cpuset.mems write run by a mover worker (a start
		 * binding's, or a move's memory the kernel's way:
		 * engine_bindwrite.c), NULL for a job that moves pages. */
		struct bind_write *bw;
	} *jobs;

	/* Guests whose mems a start placement bound (plan_item.bind_start):
	 * released (widened to WIDE ∪ their mems) once their memory stops
	 * growing (having grown once), their node runs short of room, or
	 * ENGINE_BIND_MAX_S pass.
	 * While any is bound, cycles come every ENGINE_BIND_CYCLE_S.
	 * The set is written to the state directory (bindstate.h) whenever it
	 * changes, so that a binding never outlives the agent: released at a
	 * clean stop (engine_release_bindings), taken back at start. */
	unsigned nbound, capbound;
	struct ebound {
		char id[GUEST_ID_MAX];
		char *cgroup;          /* its cgroup when bound (owned) */
		nodemask_t wide;       /* its mems before the placement */
		nodemask_t bound;      /* the mems it is bound to */
		uint64_t mem;          /* its memory at the last look */
		/* Its memory grew at a look since it was bound: it has begun
		 * its first touches, so a look without growth means they are
		 * done. Until then it is starting (exec, set-up), not done. */
		bool grew;
		int64_t since_ns;      /* CLOCK_MONOTONIC of the placement */
		bool intent;           /* recorded before its write, not yet made */
		bool restored;         /* read back from before a restart */
		/* An intent whose write a mover job runs (engine_bindwrite.c):
		 * kept, neither dropped nor released, until the job is taken. */
		bool writing;
	} *bound;
	bool bound_dirty;      /* the set changed since it was last written */
	/* Guests this cycle's start placement dealt with before the plan is
	 * carried out (engine_place.c): VMs placed, bindings from before a
	 * restart released. */
	unsigned nstarted;
	char (*started)[GUEST_ID_MAX];
	bool first_sight;      /* the last plan decided a guest "next cycle" */
	/* Cycles still to come ENGINE_SPREAD_CYCLE_S apart after one that
	 * moved a busy guest onto CPUs of several nodes: where its threads
	 * run there is measured from its threads' ticks at two scans of it
	 * spread (cgthr.c; the first takes them, the second measures), and
	 * until then neither a cycle nor the watch (agents/drift.h) sees
	 * them land away from its memory. */
	unsigned spread_cycles;
	/* The watch between cycles (engine_watch.c): its next pass, the
	 * last cycle it prompted, and whether that cycle is still to run. */
	int64_t watch_next_ns, watch_cycle_ns;
	bool watch_pending;

	struct gpolstore *gs;    /* per-guest overrides (not owned), NULL: none */
	struct logged_table logged;   /* last recorded per guest (dedup) */

	pthread_mutex_t view_lock;
	struct engine_view *view;
	struct engine_stats stats;
	bool warned_one_node;
	struct log_repeat *warn_rep;   /* the snapshots' warnings, logged once */

	struct resv_list res;        /* room promised to guests about to start */

	/* Persistence of ps and res (engstate.h): the state directory (-1:
	 * none), realtime - monotonic of this process, and what was saved
	 * last (to write only on change). */
	int state_dfd;
	/* engine_run's reload callback (SIGHUP, engine_reload). */
	engine_reload_fn reload;
	void *reload_ctx;
	int64_t clock_offset_ns;
	struct pstate *saved_ps;
	uint64_t saved_res_gen;
	bool saved_once;
	bool triggered;
	int64_t last_cycle_end_ns;   /* CLOCK_MONOTONIC; spaces triggered cycles */
	int64_t heartbeat_ns;        /* the loop's last turn (atomic), 0: not running */

	pthread_t thread;
	bool thread_set;
	int sfd, tfd, efd;
	pthread_mutex_t q_lock;
	struct call *q_head, *q_tail;
	bool stopping;
};

/* engine.c */
/* Save ps and res if they changed since the last save (no-op without a
 * state directory). */
void engine_save_state(struct engine *e);
/* The cycle timer to fire in SECONDS (engine_loop.c). */
void engine_arm_timer(struct engine *e, double seconds);
/* The watch between cycles (engine_watch.c): a pass when one is due; and
 * the loop's poll timeout, shortened to the next pass. */
void engine_watch(struct engine *e);
int engine_watch_timeout_ms(const struct engine *e, int timeout_ms);
/* The least time between two cycles the watch prompts. */
#define ENGINE_WATCH_GAP_S 5.0
/* Start bindings (engine_bind.c). Before a bind_start move's write: the
 * binding recorded (engine_save_bindings writes it) as an intent; after
 * it: made (engine_bound_add), or dropped with the other intents left
 * (engine_bound_drop_intents). */
void engine_bound_intend(struct engine *e, const struct snapshot *snap, const struct plan_item *it);
void engine_bound_add(struct engine *e, const struct snapshot *snap, const struct plan_item *it);
void engine_bound_drop_intents(struct engine *e);
/* The binding of guest ID: its write handed to a mover job (WRITING
 * true), or that job taken (false: dropped if still an intent). */
void engine_bound_writing(struct engine *e, const char *id, bool writing);

/* engine_cycle.c: P (and BW, a start binding's write, or NULL) belongs to
 * mover job ID until the engine takes it as finished (engine_settle_jobs). */
void engine_job_add(struct engine *e, uint64_t id, struct apply_pending *p, struct bind_write *bw);

/* engine_bindwrite.c: a start binding's cpuset.mems write off the engine
 * thread. Submits P's write as a mover job; P then belongs to it, and
 * its "moved" record comes when the job is taken (engine_bindwrite_settle). */
void engine_bindwrite_submit(struct engine *e, struct apply_pending *p);
/* The job JI of E->jobs[I] (taken from the mover): record the move, make
 * or drop the binding, free the job's parts. */
void engine_bindwrite_settle(struct engine *e, struct ejob *job, const struct mover_job_info *ji);
/* Has guest ID a cpuset.mems write in flight (a start binding's or a
 * move's)? Its new plans wait. */
bool engine_bindwrite_pending(const struct engine *e, const char *id);
/* A move's memory the kernel's way (apply_memory: a cpuset.mems write
 * that migrates inside the kernel) on a mover worker: P belongs to the
 * job; its outcome is recorded when the job is taken, as a mover job's
 * (memory_arrived, or how it ended). Returns the job's id. */
uint64_t engine_memwrite_submit(struct engine *e, struct apply_pending *p);
/* An applying cycle's first step: release each binding read back from
 * before a restart whose guest is still bound exactly so (cgroup and
 * mems as recorded); drop, logged, those whose guest is gone or whose
 * mems someone else changed. *RELEASED (free) gets the guests released:
 * the plan's items for them wait for the next cycle. Returns their
 * number. */
unsigned engine_restore_bound(struct engine *e, const struct snapshot *snap, char (**released)[GUEST_ID_MAX]);
/* End of a cycle: release the start bindings that are due (their guests'
 * mems widened again, soft binding), on SNAP; guests PLAN moved this
 * cycle are looked at next cycle. */
void engine_release_bound(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply);
void engine_bound_free(struct engine *e);
/* Write the start bindings (bindstate.h) if they changed; a failure is
 * logged (the set stays dirty: written again next time). */
void engine_save_bindings(struct engine *e);
/* Take back the start bindings saved under the state directory DFD
 * (engine_use_state_dir); a bad file is logged and set aside. */
void engine_load_bindings(struct engine *e, int dfd, const char *dir);
void engine_publish(struct engine *e, const struct snapshot *snap, struct plan *plan);
/* Recompute the settings in force (e->cfg) from e->base and the schedule
 * windows active at this local time. */
void engine_apply_schedule(struct engine *e);

/* engine_cycle.c */
#define ENGINE_BIND_CYCLE_S 2.0
#define ENGINE_BIND_MAX_S 60.0
/* A bound guest whose memory has not grown at all by then is released:
 * it is not about to touch much (an idle container), and bindings keep
 * cycles at ENGINE_BIND_CYCLE_S. */
#define ENGINE_BIND_START_S 10.0
/* (engine.spread_cycles) Two cycles a second apart: the second measures
 * where the scheduler put the threads over a 1 s window (the watch's
 * own), about 2 s after the move. */
#define ENGINE_SPREAD_CYCLE_S 1.0
#define ENGINE_SPREAD_CYCLES 2
/* Seconds until the next scheduled cycle: the interval, or
 * ENGINE_BIND_CYCLE_S while a start placement's binding waits release,
 * or ENGINE_TRIGGER_GAP_S after a plan that left a guest seen for the
 * first time to the next cycle (SKIP_NO_USAGE), or ENGINE_SPREAD_CYCLE_S
 * after a cycle that moved a busy guest onto several nodes
 * (spread_cycles). */
double engine_next_cycle_s(const struct engine *e);
/* Jobs the mover ended: settle their guests' mems, record them. */
void engine_settle_jobs(struct engine *e);
/* The memory mover's settings differ between A and B (on/off, workers,
 * rate, chunk, job timeout, placement): a reload to B must stop its jobs. */
bool engine_mover_settings_differ(const struct agent_config *a, const struct agent_config *b);
/* How the record of a job that ended as ST reads before its settle step:
 * the outcome, and in *WIDE whether the guest's mems stay on old ∪ new
 * (the record's mems_after). A soft binding always does (its mems are
 * widened again after the move); a strict one — a libvirt domain's live
 * nodeset too — unless the job ended done: only then are they narrowed
 * (apply_memory_settle, which clears *WIDE when it narrows). A job that
 * ended early leaves them wide, and its record must not imply the target;
 * a guest that vanished has none. Pure. */
enum apply_status engine_job_outcome(enum mover_state st, bool soft, bool *wide);
const char *engine_move_decision(enum apply_status st);
void engine_log_move(const struct snapshot *snap, const struct plan_item *it, const struct apply_result *res);
/* Count the outcome STATUS of planned move IT in ST, and note its
 * cool-down at NOW_NS in NEXT (may be NULL: none noted) where the outcome
 * keeps one: a move made, refused or failed (retrying every cycle would
 * only hammer the cgroup), or one libvirt cannot do (asking again would
 * only repeat the refusal). A move not carried out for a normal reason
 * (vanished, changed, no room) starts none. Pure. */
void engine_count_outcome(struct engine_stats *st, struct pstate *next, const struct plan_item *it,
			  enum apply_status status, int64_t now_ns);

/* engine_place.c: start placement, the conductor's half. */
/* Place the domains that just started (before the policy runs, so it
 * sees their cool-down); they are handled (engine_place_handled). */
void engine_place_started(struct engine *e, const struct snapshot *snap, bool dry_run);
/* An applying cycle, before the policy decides: the bindings from before
 * a restart released (their guests handled: the plan holds their items,
 * HOLD_JUST_PLACED). */
void engine_place_restore(struct engine *e, const struct snapshot *snap);
/* An applying cycle, before its plan is carried out: each of PLAN's start
 * bindings recorded, on disk, before its write. */
void engine_place_begin(struct engine *e, const struct snapshot *snap, const struct plan *plan);
/* Did this cycle's start placement deal with guest ID already (placed,
 * or its old binding released)? The plan saw it where it was before: its
 * item waits for the next cycle. */
bool engine_place_handled(const struct engine *e, const char *id);
/* What became of a move's phase 2 (its memory). */
enum phase_end {
	PHASE_DONE,       /* RES is the outcome; the caller records it and frees P */
	PHASE_JOB,        /* P belongs to a mover job moving pages; RES is recorded now */
	PHASE_WRITE_JOB,  /* P belongs to a start binding's write job: recorded when taken */
};
/* Phase 2 of a start placement as decided: a VM's (libvirt's one call),
 * or a bound container's write on a mover worker (plan_item.bind_start,
 * its way MEM_WAY_BIND_WRITE; its other ways are every move's,
 * memory_phase). */
enum phase_end engine_place_memory(struct engine *e, struct apply_pending *p, struct apply_result *res);
/* The end of every cycle: the intents whose writes were not made
 * dropped, the bindings that are due released, the set saved. */
void engine_place_end(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply);
/* Count a start placement's outcome: done or failed starts the guest's
 * cool-down in PS at NOW_NS (so the policy leaves it alone until its use
 * is measured, and a refused write is not retried at once); a skip
 * (vanished, changed, no room) does not. Pure. */
void engine_count_place_outcome(struct engine_stats *st, struct pstate *ps, const struct plan_item *it,
				enum apply_status status, int64_t now_ns);

#endif
