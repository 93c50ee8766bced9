/* engine.h — the cycle loop: acquire → decide → apply → record → publish.
 *
 * One engine thread owns all mutable state (ARCHITECTURE.md, "Threads
 * and state"). Other threads (the REST server) read the latest published
 * view — an immutable, reference-counted bundle of snapshot, plan and
 * counters swapped under a short lock — and ask for changes with
 * engine_call(), which runs a function on the engine thread between
 * cycles and waits for it.
 */
#ifndef NUMAORCH_ENGINE_H
#define NUMAORCH_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/store/config.h"
#include "orchestrator/store/declog.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/policy.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/model/source.h"

struct engine;

/* Upper bounds (seconds) of the cycle-duration histogram's buckets: a
 * cycle's phases take from well under a millisecond (decide) to a
 * minute (apply, when memory moves by cpuset.mems writes). */
#define ENGINE_CYCLE_NR_BUCKETS 14
extern const double engine_cycle_buckets[ENGINE_CYCLE_NR_BUCKETS];

/* Cycle durations observed since start (a Prometheus histogram). */
struct engine_hist {
	uint64_t le[ENGINE_CYCLE_NR_BUCKETS]; /* cumulative: cycles at or under each bound */
	uint64_t count;
	double sum_s;
};

/* engine_stats.cycle_hist[] by phase; engine_cycle_phase_name() names them. */
enum engine_cycle_phase {
	CYCLE_TOTAL = 0,
	CYCLE_ACQUIRE,
	CYCLE_DECIDE,
	CYCLE_APPLY,
	CYCLE_RECORD,   /* state saved, the view published */
	CYCLE_NR_PHASES,
};
const char *engine_cycle_phase_name(enum engine_cycle_phase p);

struct engine_stats {
	uint64_t cycles;
	int64_t last_cycle_real_ns;   /* when the last cycle finished, 0: none yet */
	double last_cycle_s;          /* its duration */
	double last_acquire_s, last_decide_s, last_apply_s;
	struct engine_hist cycle_hist[CYCLE_NR_PHASES]; /* every cycle's, by phase */
	struct engine_hist cycle_cpu_hist[CYCLE_NR_PHASES]; /* the engine thread's CPU time in them */
	uint64_t moves;               /* done, since start */
	uint64_t move_failures;
	uint64_t moves_skipped;       /* vanished/changed/no room at apply time */
	uint64_t migrated_bytes;      /* planned bytes of moves done */
	uint64_t memory_deferred;     /* moves whose memory was left to the kernel's balancing */
	uint64_t watch_cycles;        /* cycles the watch between cycles prompted (engine_watch.c) */
	/* cpusets another placer rewrote after the agent's move, each said
	 * once (conflict.h): by the kubelet, by someone unknown */
	uint64_t placer_conflicts_kubelet;
	uint64_t placer_conflicts_unknown;
	int numa_balancing;           /* kernel.numa_balancing at the last cycle, -1: unknown */
	enum kbal_setting kernel_balancing; /* [memory] kernel_balancing */
	int64_t start_real_ns;
	int64_t start_mono_ns;
	unsigned cpu_nodes;           /* nodes with CPUs in the last snapshot */
	/* The libvirt VM source, as of the last cycle. */
	enum engine_libvirt_state {
		LIBVIRT_DISABLED = 0,     /* [libvirt] enabled = no, or a fixture root */
		LIBVIRT_UNAVAILABLE,      /* enabled, but the module or libvirt's event loop failed */
		LIBVIRT_DISCONNECTED,     /* no connection to libvirtd now; retrying */
		LIBVIRT_CONNECTED,
	} libvirt_state;
	char libvirt_reason[256];     /* why UNAVAILABLE */
	uint64_t libvirt_connects;    /* successful connects, the first included */
	uint64_t libvirt_losses;      /* connections lost */
	double libvirt_last_reconnect_s; /* loss → reconnect, last time; NAN if none */
};

const char *engine_libvirt_state_name(enum engine_libvirt_state s);

/* What readers see. Immutable; hold it with engine_view_get/unref. */
struct engine_view {
	unsigned refs;
	const struct snapshot *snap;  /* NULL before the first cycle */
	struct plan *plan;            /* NULL in mode off or before the first cycle */
	struct engine_stats stats;
	/* The settings in force (with the active schedule windows applied)... */
	enum agent_mode mode;
	bool dry_run;
	double interval_s;
	struct policy_config policy;
	double rate_mib;              /* the mover's MiB/s budget in force, 0: none (or no mover) */
	double mover_rate_mibs;       /* the mover's measured host-wide MiB/s, 0: not yet (policy.in) */
	/* ...and as configured, without the windows. */
	enum agent_mode base_mode;
	double base_interval_s;
	struct policy_config base_policy;
	struct schedule schedule;     /* the windows (copy) */
	uint64_t schedule_active;     /* bit i: schedule.e[i] active at the last cycle */
	/* A view republished with new settings (a reload, PUT /v1/policy)
	 * shares its plan with the view of the cycle that made it: that one
	 * owns the plan and is kept referenced here. NULL: this view owns it. */
	struct engine_view *plan_owner;
};

/* Outcome of one cycle, for --once reporting. */
struct cycle_report {
	struct engine_view *view;     /* the view this cycle published (referenced) */
	unsigned nr_results;
	struct apply_result *results; /* per plan item; filled for applied moves */
	bool *attempted;              /* per plan item: apply_move was called */
	bool applied;                 /* moves were carried out (not dry run/advise) */
};

/* What the engine runs on, registered by the daemon's main (the engine
 * names no source and no policy itself). Both must outlive the engine. */
struct engine_parts {
	const struct source_ops *sources;
	const struct policy_ops *policy;
};

/* CFG and PARTS are copied. HP selects live host or fixture root.
 * -EINVAL if a part is missing. */
int engine_new(const struct agent_config *cfg, const struct host_paths *hp,
	       const struct engine_parts *parts, struct engine **out);
void engine_free(struct engine *e);

/* Run one cycle now on the calling thread (which must be the engine's).
 * DRY_RUN forces no writes for this cycle. REPORT may be NULL. */
int engine_cycle(struct engine *e, bool dry_run, struct cycle_report *report);
void cycle_report_clear(struct cycle_report *r);

/* The loop: cycles every interval until SIGTERM/SIGINT; SIGHUP calls
 * RELOAD (which returns a new config or NULL to keep the old one).
 * Blocks those signals in the calling thread: call it before starting
 * other threads, or block them there too. Returns 0 on a clean stop. */
typedef struct agent_config *(*engine_reload_fn)(void *ctx);
/* Block SIGTERM/SIGINT/SIGHUP and create the loop's fds. Call on the
 * thread that will run engine_run, before starting other threads (they
 * inherit the blocked mask); engine_run calls it if not done. */
int engine_prepare_loop(struct engine *e);
int engine_run(struct engine *e, engine_reload_fn reload, void *ctx);
/* What SIGHUP does (engine thread): a new config from engine_run's
 * RELOAD, swapped in; running migrations go on unless the mover's own
 * settings changed. 0; -ENOENT without a RELOAD (not in engine_run);
 * -EINVAL when RELOAD refused the new config or it could not be applied
 * (the old one stays, the log says why). */
int engine_reload(struct engine *e);
/* Ask the loop to stop (any thread). */
void engine_stop(struct engine *e);

/* Swap in a validated config (engine thread). Rebuilds the sources and
 * the actuator when scopes or parents changed. */
int engine_apply_config(struct engine *e, const struct agent_config *cfg);
/* Reopen the decision log at its configured path (after logrotate moved
 * it; SIGUSR1, and each reload). Logs a failure; the old file then stays
 * in use. Engine thread. Returns 0 or a negative errno. */
int engine_reopen_log(struct engine *e, const char *path);

/* Run FN(e, arg) on the engine thread and wait for it; returns FN's
 * value, or -ETIMEDOUT after TIMEOUT_MS (FN still runs later; ARG must
 * stay valid — callers use heap args with a done flag or wait forever
 * with timeout_ms = 0), -ESHUTDOWN if the engine is stopping. */
typedef int (*engine_fn)(struct engine *e, void *arg);
int engine_call(struct engine *e, engine_fn fn, void *arg, unsigned timeout_ms);

/* Wait until the mover has no job (at most TIMEOUT_S) and record the
 * jobs that ended (numaorchd --once). 0, or -ETIMEDOUT. Engine thread. */
int engine_drain_migrations(struct engine *e, double timeout_s);
/* The agent is stopping (engine_run's end, --once): release every start
 * binding (plan_item.bind_start) it holds — mems back to what they were
 * ∪ the bound ones, recorded "mems_released" with WHY — so that none
 * outlives it. One whose write fails is logged and stays saved in the
 * state directory for the next start. After the mover's jobs stopped. */
void engine_release_bindings(struct engine *e, const char *why);
/* The memory mover (thread-safe itself), NULL when there is none. It
 * lives as long as the engine. */
struct mover;
struct mover *engine_mover(struct engine *e);

struct engine_view *engine_view_get(struct engine *e);
void engine_view_unref(struct engine_view *v);

/* Engine-thread accessors for code run through engine_call. */
struct declog *engine_declog(struct engine *e);
/* The per-guest history (history.h): recorded every cycle, readable from
 * any thread. */
struct history;
struct history *engine_history(struct engine *e);
/* The configuration as given (file, command line, PUT /v1/policy). */
const struct agent_config *engine_config(struct engine *e);
/* The state directory (engine_use_state_dir), or -1 without one. */
int engine_state_dir_fd(struct engine *e);
/* The registered policy (any thread: it is pure and constant). */
const struct policy_ops *engine_policy(struct engine *e);

/* Ask for a cycle soon (any thread). Used when something happened that
 * should not wait for the interval: a libvirt start event, a hook
 * notification. Requests coalesce into one pending cycle, which starts
 * no sooner than ENGINE_TRIGGER_GAP_S (or half the interval, if less)
 * after the last cycle ended. true: this call made the request; false:
 * one was already pending. */
bool engine_trigger(struct engine *e);
#define ENGINE_TRIGGER_GAP_S 1.0

/* CLOCK_MONOTONIC ns of the engine loop's last turn (any thread); 0
 * before the loop runs. The loop turns at least every
 * ENGINE_HEARTBEAT_MS, so an old value means a wedged engine. */
int64_t engine_heartbeat_ns(struct engine *e);
#define ENGINE_HEARTBEAT_MS 1000

/* Room promised to guests about to start (POST /v1/placements with
 * reserve_seconds, and VM initial placement). Engine thread. LABEL (may
 * be NULL) names who it is for, e.g. a domain name or uuid, so a start can
 * consume its own reservation. CPU_NODES and MEMS (may be NULL) remember
 * where the advice put the guest (R's mask holds both, for accounting),
 * so that the start consuming it is placed exactly there. Returns the
 * reservation id (≥ 1). */
uint64_t engine_reserve_placement(struct engine *e, const struct advice_reservation *r,
				  const nodemask_t *cpu_nodes, const nodemask_t *mems, double seconds,
				  const char *label);
/* Drop reservation ID, or the first one with LABEL (ID 0). true if found. */
bool engine_unreserve(struct engine *e, uint64_t id, const char *label);
/* The reservations still valid now (expired ones are dropped first).
 * Returns the count; *out points into engine-owned memory valid until
 * the next engine_reserve_placement/unreserve/cycle on the engine thread. */
unsigned engine_reservations(struct engine *e, const struct advice_reservation **out);

/* The per-guest policy overrides (the REST API's, persisted): looked up
 * for every guest at every cycle, so a change wins over a guest's own
 * (metadata) policy from the next cycle. GS must outlive the engine. */
struct gpolstore;
void engine_use_gpolstore(struct engine *e, struct gpolstore *gs);

/* Keep the cool-downs and the reservations in the state directory DIR
 * across restarts (orchestrator/store/engstate.h): load what an earlier run
 * saved, then save them (atomically) whenever they change. DIR is created
 * and checked as for the per-guest policies. 0, or -errno with ERR
 * filled; a file that is malformed, over ENGSTATE_FILE_MAX, unreadable
 * or past LIM (the host's size; NULL: the format's caps only,
 * engstate.h) is no error: it is renamed to engine-state.json.rejected
 * (logged) and the engine starts without it. Engine thread, before the
 * loop. */
struct engstate_limits;
#define ENGSTATE_FILE_MAX (64u << 20)
int engine_use_state_dir(struct engine *e, const char *dir, const struct engstate_limits *lim, char *err,
			 size_t errsz);

#endif
