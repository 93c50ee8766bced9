#include "engine.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "clock.h"
#include "xalloc.h"
#include "gpolstore.h"
#include "history.h"
#include "kbal.h"
#include "mover.h"
#include "log.h"
#include "numamig.h"
#include "notify.h"
#include "vmplugin.h"

/* What was last written to the decision log for a guest, so a guard that
 * keeps saying the same thing is logged once, not every cycle. */
struct logged {
	char id[GUEST_ID_MAX];
	enum plan_kind kind;
	enum skip_reason skip;
	enum move_reason reason;
	nodemask_t to_nodes, to_mems;  /* PLAN_MOVE: where it was to go */
};

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

	/* The mover (NULL: [memory] mover = no, a fixture root, no NUMA API)
	 * and the moves whose memory it is moving: each job's phase 2 is
	 * finished when the job ends (settle_job). */
	struct mover *mover;          /* once started, lives until engine_free */
	bool mover_on;                /* [memory] mover as configured now */
	unsigned njobs, capjobs;
	struct ejob {
		uint64_t id;
		struct apply_pending *p;
	} *jobs;

	struct gpolstore *gs;    /* per-guest overrides (not owned), NULL: none */
	unsigned nr_logged;
	struct logged *logged;

	pthread_mutex_t view_lock;
	struct engine_view *view;
	struct engine_stats stats;
	bool warned_one_node;
	struct log_repeat *warn_rep;   /* the snapshots' warnings, logged once */

	/* Reservations (parallel arrays; res[] is what the policy reads). */
	unsigned nr_res, cap_res;
	struct advice_reservation *res;
	uint64_t *res_id;
	int64_t *res_expires;
	char **res_label;
	nodemask_t *res_cpus;        /* where the advice put it: CPU nodes ... */
	nodemask_t *res_mems;        /* ... and memory nodes (empty: not known) */
	uint64_t next_res_id;
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

static unsigned place_started(struct engine *e, struct snapshot *snap, bool dry_run,
			      char (**placed)[GUEST_ID_MAX]);

static void vm_notify(void *ctx)
{
	engine_trigger(ctx);
}

const char *engine_libvirt_state_name(enum engine_libvirt_state s)
{
	switch (s) {
	case LIBVIRT_UNAVAILABLE: return "unavailable";
	case LIBVIRT_DISCONNECTED: return "disconnected";
	case LIBVIRT_CONNECTED: return "connected";
	default: return "disabled";
	}
}

static void vm_free(struct engine *e)
{
	if (!e->vmp)
		return;
	if (e->va)
		e->vmp->apply_free(e->va);
	if (e->vm)
		e->vmp->src_free(e->vm);
	e->va = NULL;
	e->vm = NULL;
}

static int build_sources(struct engine *e, const struct agent_config *cfg)
{
	struct acquirer *acq = NULL;
	struct applier *app = NULL;
	struct vmsrc *vm = NULL;
	struct vmapply *va = NULL;
	struct apply_opts ao = {
		.nr_scopes = cfg->cg.nr_scopes,
		.scopes = cfg->cg.scopes,
		.min_free_bytes = cfg->policy.min_free_bytes,
		.freeze_during_migration = cfg->freeze_during_migration,
		.strict_mems = cfg->strict_mems,
		.read_meminfo = e->src.read_meminfo,
	};
	int r;

	r = e->src.acquirer_new(&e->hp, &cfg->cg, &acq);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "cannot read cgroups under %s", e->hp.cgroupfs);
	r = applier_new(&e->hp, e->src.hier(acq), &ao, &app);
	if (r < 0) {
		e->src.acquirer_free(acq);
		return log_errno(LOG_LEVEL_ERROR, r, "cannot set up the cgroup writer (libcgroup)");
	}
	/* VMs only on the live host: a fixture root has no libvirtd. */
	e->stats.libvirt_state = LIBVIRT_DISABLED;
	e->stats.libvirt_reason[0] = '\0';
	if (cfg->libvirt_enabled && e->hp.live) {
		struct vmsrc_config vc = {
			.uri = cfg->libvirt_uri,
			.keepalive_interval = (int)cfg->libvirt_keepalive_interval,
			.keepalive_count = cfg->libvirt_keepalive_count,
			.connect_wait_s = 2.0,
			.nr_scopes = cfg->cg.nr_scopes,
			.scopes = cfg->cg.scopes,
		};
		char err[512];

		e->stats.libvirt_state = LIBVIRT_UNAVAILABLE;
		r = vmplugin_load(cfg->libvirt_module, &e->vmp, err, sizeof(err));
		if (r < 0) {
			log_msg(LOG_LEVEL_WARN, "libvirt VM source disabled: %s", err);
			snprintf(e->stats.libvirt_reason, sizeof(e->stats.libvirt_reason), "%.250s", err);
		} else if ((r = e->vmp->src_new(&vc, &e->hp, e->src.hier(acq), vm_notify, e, &vm)) < 0) {
			log_errno(LOG_LEVEL_WARN, r, "libvirt VM source disabled: libvirt's event loop did not start");
			snprintf(e->stats.libvirt_reason, sizeof(e->stats.libvirt_reason),
				 "libvirt's event loop did not start: %s", strerror(-r));
		} else {
			e->stats.libvirt_reason[0] = '\0';
			e->stats.libvirt_state = LIBVIRT_DISCONNECTED;
			struct guest_source src = { .name = "libvirt", .scan = e->vmp->scan, .ctx = vm };
			struct apply_vm_ops ops;

			e->src.add_source(acq, &src);
			va = e->vmp->apply_new(vm, &e->hp, (enum vm_cpus_without_memory)cfg->libvirt_cpus_without_memory);
			ops = (struct apply_vm_ops){ .move = e->vmp->move, .set_mems = e->vmp->set_mems, .ctx = va };
			applier_set_vm_ops(app, &ops);
		}
	}
	if (e->acq)
		e->src.acquirer_free(e->acq);
	applier_free(e->app);
	vm_free(e);
	e->acq = acq;
	e->app = app;
	e->vm = vm;
	e->va = va;
	return 0;
}

static struct mover_config mover_cfg(const struct agent_config *cfg)
{
	return (struct mover_config){ .workers = cfg->mover_workers, .rate_mib = cfg->mover_rate_mib,
				      .chunk_ms = cfg->mover_chunk_ms, .job_timeout_s = cfg->mover_job_timeout_s };
}

/* Start, reconfigure or stop the mover for CFG. Only a live host with
 * the NUMA API has one: a fixture root's "memory" is files. */
static void mover_setup(struct engine *e, const struct agent_config *cfg)
{
	struct mover_config mc = mover_cfg(cfg);
	bool want = cfg->mover && e->hp.live && numamig_available();
	struct mover *m;
	int r;

	if (e->mover_on && !want)
		log_info("memory mover off: memory moves by cpuset.mems writes");
	e->mover_on = false;
	if (!want)
		return;
	if (e->mover) {
		mover_set_config(e->mover, &mc);
		e->mover_on = true;
		return;
	}
	r = mover_new(&mc, &e->hp, &m);
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "cannot start the memory mover; memory moves by cpuset.mems writes");
		return;
	}
	/* API threads read it (engine_mover). */
	__atomic_store_n(&e->mover, m, __ATOMIC_RELEASE);
	e->mover_on = true;
	log_info("memory mover: %u worker%s, chunks of ~%.0f ms, jobs end after %.0f s, %s", mc.workers,
		 mc.workers == 1 ? "" : "s", mc.chunk_ms, mc.job_timeout_s,
		 mc.rate_mib > 0 ? "rate budget below" : "no rate limit");
	if (mc.rate_mib > 0)
		log_info("memory mover: at most %.0f MiB/s for the whole host", mc.rate_mib);
}

int engine_new(const struct agent_config *cfg, const struct host_paths *hp,
	       const struct engine_parts *parts, struct engine **out)
{
	struct engine *e;
	int r;

	if (!parts || !parts->sources || !parts->policy)
		return -EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->src = *parts->sources;
	e->pol = *parts->policy;
	config_copy(&e->cfg, cfg);
	config_copy(&e->base, cfg);
	e->hp = *hp;
	e->sfd = e->tfd = e->efd = -1;
	pthread_mutex_init(&e->view_lock, NULL);
	pthread_mutex_init(&e->q_lock, NULL);
	e->ps = pstate_new();
	e->hist = history_new(cfg->history_s / HISTORY_SAMPLES);
	e->stats.start_real_ns = clock_real_ns();
	e->stats.start_mono_ns = clock_mono_ns();
	e->stats.libvirt_last_reconnect_s = NAN;
	e->stats.numa_balancing = -1;

	r = build_sources(e, cfg);
	if (r < 0)
		goto fail;
	{
		char err[600];

		r = declog_open(cfg->decision_log, 4096, &e->dl, err, sizeof(err));
		if (r < 0) {
			log_error("cannot open the %s", err);
			goto fail;
		}
	}
	mover_setup(e, cfg);
	*out = e;
	return 0;
fail:
	engine_free(e);
	return r;
}

void engine_view_unref(struct engine_view *v)
{
	if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	snap_unref(v->snap);
	plan_free(v->plan);
	sched_free(&v->schedule);
	free(v);
}

struct engine_view *engine_view_get(struct engine *e)
{
	struct engine_view *v;

	pthread_mutex_lock(&e->view_lock);
	v = e->view;
	if (v)
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->view_lock);
	return v;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	mover_free(e->mover);
	for (unsigned i = 0; i < e->njobs; i++)
		apply_pending_free(e->jobs[i].p);
	free(e->jobs);
	engine_view_unref(e->view);
	if (e->acq)
		e->src.acquirer_free(e->acq);
	applier_free(e->app);
	vm_free(e);
	declog_close(e->dl);
	pstate_free(e->ps);
	history_free(e->hist);
	free(e->logged);
	log_repeat_free(e->warn_rep);
	for (unsigned i = 0; i < e->nr_res; i++)
		free(e->res_label[i]);
	free(e->res);
	free(e->res_id);
	free(e->res_expires);
	free(e->res_label);
	free(e->res_cpus);
	free(e->res_mems);
	config_free(&e->cfg);
	config_free(&e->base);
	if (e->sfd >= 0)
		close(e->sfd);
	if (e->tfd >= 0)
		close(e->tfd);
	if (e->efd >= 0)
		close(e->efd);
	pthread_mutex_destroy(&e->view_lock);
	pthread_mutex_destroy(&e->q_lock);
	free(e);
}

struct declog *engine_declog(struct engine *e) { return e->dl; }
struct history *engine_history(struct engine *e) { return e->hist; }
const struct agent_config *engine_config(struct engine *e) { return &e->base; }

/* Recompute the settings in force from the base configuration and the
 * schedule windows active at this local time; log windows opening and
 * closing. Cheap when nothing changed. */
static void apply_schedule(struct engine *e)
{
	time_t t = time(NULL);
	struct sched_values v;
	uint64_t active;
	struct tm tm;

	localtime_r(&t, &tm);
	sched_effective(&e->base.schedule, tm.tm_wday, tm.tm_hour * 60 + tm.tm_min, &v, &active);
	if (e->sched_valid && active == e->sched_active)
		return;
	for (unsigned i = 0; i < e->base.schedule.n && i < 64; i++) {
		bool was = e->sched_valid && (e->sched_active >> i & 1), is = active >> i & 1;

		if (was != is)
			log_info("schedule: window \"%s\" %s", e->base.schedule.e[i].text,
				 is ? "opens" : "closes");
	}
	config_free(&e->cfg);
	config_copy(&e->cfg, &e->base);
	if (v.set & SCHED_MODE)
		e->cfg.mode = v.mode;
	if (v.set & SCHED_INTERVAL)
		e->cfg.interval_s = v.interval_s;
	if (v.set & SCHED_MAX_MOVES)
		e->cfg.policy.max_moves = v.max_moves;
	if (v.set & SCHED_MAX_MIGRATE)
		e->cfg.policy.max_migrate_bytes = v.max_migrate_bytes;
	if (v.set & SCHED_COOLDOWN)
		e->cfg.policy.cooldown_ns = v.cooldown_ns;
	if (v.set & SCHED_RATE)
		e->cfg.mover_rate_mib = v.rate_mib;
	/* The rate budget refines the per-cycle cap: planning more than the
	 * mover may move in an interval only queues jobs the next plans
	 * supersede. */
	if (e->mover_on && e->cfg.mover_rate_mib > 0) {
		double budget = e->cfg.mover_rate_mib * e->cfg.interval_s * 1048576.0;

		if (budget < (double)e->cfg.policy.max_migrate_bytes)
			e->cfg.policy.max_migrate_bytes = (uint64_t)budget;
	}
	if (e->mover_on) {
		struct mover_config mc = mover_cfg(&e->cfg);

		mover_set_config(e->mover, &mc);
		if (e->rate_known && e->sched_rate_mib != e->cfg.mover_rate_mib) {
			if (e->cfg.mover_rate_mib > 0)
				log_info("memory mover: at most %.0f MiB/s for the whole host now",
					 e->cfg.mover_rate_mib);
			else
				log_info("memory mover: no rate limit now");
		}
	}
	e->sched_rate_mib = e->cfg.mover_rate_mib;
	e->rate_known = true;
	e->sched_active = active;
	e->sched_valid = true;
}
const struct policy_ops *engine_policy(struct engine *e) { return &e->pol; }
struct applier *engine_applier(struct engine *e) { return e->app; }

static void res_remove(struct engine *e, unsigned i)
{
	free(e->res_label[i]);
	e->nr_res--;
	memmove(&e->res[i], &e->res[i + 1], (e->nr_res - i) * sizeof(*e->res));
	memmove(&e->res_id[i], &e->res_id[i + 1], (e->nr_res - i) * sizeof(*e->res_id));
	memmove(&e->res_expires[i], &e->res_expires[i + 1], (e->nr_res - i) * sizeof(*e->res_expires));
	memmove(&e->res_label[i], &e->res_label[i + 1], (e->nr_res - i) * sizeof(*e->res_label));
	memmove(&e->res_cpus[i], &e->res_cpus[i + 1], (e->nr_res - i) * sizeof(*e->res_cpus));
	memmove(&e->res_mems[i], &e->res_mems[i + 1], (e->nr_res - i) * sizeof(*e->res_mems));
}

static void res_expire(struct engine *e)
{
	int64_t now = clock_mono_ns();

	for (unsigned i = 0; i < e->nr_res;)
		if (e->res_expires[i] <= now)
			res_remove(e, i);
		else
			i++;
}

uint64_t engine_reserve_placement(struct engine *e, const struct advice_reservation *r,
				  const nodemask_t *cpu_nodes, const nodemask_t *mems, double seconds,
				  const char *label)
{
	res_expire(e);
	if (e->nr_res == e->cap_res) {
		e->cap_res = e->cap_res ? e->cap_res * 2 : 8;
		e->res = xrealloc(e->res, e->cap_res * sizeof(*e->res));
		e->res_id = xrealloc(e->res_id, e->cap_res * sizeof(*e->res_id));
		e->res_expires = xrealloc(e->res_expires, e->cap_res * sizeof(*e->res_expires));
		e->res_label = xrealloc(e->res_label, e->cap_res * sizeof(*e->res_label));
		e->res_cpus = xrealloc(e->res_cpus, e->cap_res * sizeof(*e->res_cpus));
		e->res_mems = xrealloc(e->res_mems, e->cap_res * sizeof(*e->res_mems));
	}
	e->res[e->nr_res] = *r;
	e->res_id[e->nr_res] = ++e->next_res_id;
	e->res_expires[e->nr_res] = clock_mono_ns() + (int64_t)(seconds * 1e9);
	e->res_label[e->nr_res] = label ? xstrdup(label) : NULL;
	mask_zero(&e->res_cpus[e->nr_res]);
	mask_zero(&e->res_mems[e->nr_res]);
	if (cpu_nodes && mems && !mask_empty(cpu_nodes) && !mask_empty(mems)) {
		e->res_cpus[e->nr_res] = *cpu_nodes;
		e->res_mems[e->nr_res] = *mems;
	}
	e->nr_res++;
	return e->next_res_id;
}

bool engine_unreserve(struct engine *e, uint64_t id, const char *label)
{
	for (unsigned i = 0; i < e->nr_res; i++)
		if ((id && e->res_id[i] == id) ||
		    (!id && label && e->res_label[i] && strcmp(e->res_label[i], label) == 0)) {
			res_remove(e, i);
			return true;
		}
	return false;
}

unsigned engine_reservations(struct engine *e, const struct advice_reservation **out)
{
	res_expire(e);
	*out = e->res;
	return e->nr_res;
}

bool engine_trigger(struct engine *e)
{
	uint64_t one = 1;

	/* Already pending: this request rides on that cycle. */
	if (__atomic_exchange_n(&e->triggered, true, __ATOMIC_ACQ_REL))
		return false;
	if (e->efd >= 0) {
		ssize_t w = write(e->efd, &one, sizeof(one));
		(void)w;
	}
	return true;
}

int64_t engine_heartbeat_ns(struct engine *e)
{
	return __atomic_load_n(&e->heartbeat_ns, __ATOMIC_ACQUIRE);
}

void engine_use_gpolstore(struct engine *e, struct gpolstore *gs)
{
	e->gs = gs;
}

/* A move that was not carried out must not start a cool-down: put the
 * guest's entry in NEXT back to what PREV had. */
static void pstate_revert(struct pstate *next, const struct pstate *prev, const char *id)
{
	const struct pstate_entry *old = prev ? pstate_find(prev, id) : NULL;

	for (unsigned i = 0; i < next->n; i++) {
		if (strcmp(next->e[i].id, id) != 0)
			continue;
		if (old) {
			next->e[i] = *old;
		} else {
			memmove(&next->e[i], &next->e[i + 1], (next->n - i - 1) * sizeof(*next->e));
			next->n--;
		}
		return;
	}
}

static struct logged *logged_find(struct engine *e, const char *id)
{
	for (unsigned lo = 0, hi = e->nr_logged; lo < hi;) {
		unsigned mid = (lo + hi) / 2;
		int c = strcmp(e->logged[mid].id, id);

		if (c == 0)
			return &e->logged[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int logged_cmp(const void *a, const void *b)
{
	return strcmp(((const struct logged *)a)->id, ((const struct logged *)b)->id);
}

/* Rebuild the "last logged" table for the guests in PLAN: entries of
 * guests that were settled this cycle (no item) are dropped, so a guard
 * that fires again later is logged again. */
static void logged_update(struct engine *e, const struct plan *plan)
{
	struct logged *nl = xcalloc(plan->nr_items ? plan->nr_items : 1, sizeof(*nl));
	unsigned n = 0;

	for (unsigned i = 0; i < plan->nr_items; i++) {
		const struct plan_item *it = &plan->items[i];

		if (it->kind == PLAN_SETTLED)
			continue;
		snprintf(nl[n].id, sizeof(nl[n].id), "%s", it->guest_id);
		nl[n].kind = it->kind;
		nl[n].skip = it->skip;
		nl[n].reason = it->reason;
		nl[n].to_nodes = it->to_nodes;
		nl[n].to_mems = it->to_mems;
		n++;
	}
	/* plan items come in ranked order, lookups want id order */
	qsort(nl, n, sizeof(*nl), logged_cmp);
	free(e->logged);
	e->logged = nl;
	e->nr_logged = n;
}

static void publish(struct engine *e, struct snapshot *snap, struct plan *plan)
{
	struct engine_view *v = xcalloc(1, sizeof(*v)), *old;

	v->refs = 1;
	v->snap = snap_ref(snap);
	v->plan = plan;
	v->stats = e->stats;
	v->mode = e->cfg.mode;
	v->dry_run = e->cfg.dry_run;
	v->interval_s = e->cfg.interval_s;
	v->policy = e->cfg.policy;
	v->rate_mib = e->mover_on ? e->cfg.mover_rate_mib : 0;
	v->base_mode = e->base.mode;
	v->base_interval_s = e->base.interval_s;
	v->base_policy = e->base.policy;
	sched_copy(&v->schedule, &e->base.schedule);
	v->schedule_active = e->sched_active;
	pthread_mutex_lock(&e->view_lock);
	old = e->view;
	e->view = v;
	pthread_mutex_unlock(&e->view_lock);
	engine_view_unref(old);

	/* The service manager's view: ready once there is a snapshot to
	 * serve, and a one-line summary after every cycle. */
	{
		char status[200];

		snprintf(status, sizeof(status), "%s: %u guests on %u NUMA nodes; cycle %llu, %llu moves so far",
			 agent_mode_name(e->cfg.mode), snap->nr_guests, snap->nr_nodes,
			 (unsigned long long)e->stats.cycles, (unsigned long long)e->stats.moves);
		if (!e->notified_ready) {
			notify_ready(status);
			e->notified_ready = true;
		} else {
			notify_status("%s", status);
		}
	}
}

static const char *move_decision(enum apply_status st)
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

static void log_move(const struct snapshot *snap, const struct plan_item *it,
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
	if (res->status == APPLY_DONE)
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
static void read_balancing(struct engine *e, const struct snapshot *snap)
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

/* Phase 2 of one move: the memory, by the rule of kbal.h — left to the
 * kernel, handed to the mover, or (no mover, VMs) moved by the cpuset.mems
 * write. Returns true when P now belongs to a mover job. */
static bool memory_phase(struct engine *e, const struct snapshot *snap, struct apply_pending *p,
			 struct apply_result *res)
{
	const struct plan_item *it = apply_pending_item(p);
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	enum kbal_action act = kbal_decide(e->cfg.kernel_balancing, e->stats.numa_balancing,
					   !apply_pending_soft(p), g->cpu_use);
	struct mover_spec spec;
	pid_t *pids = NULL;
	uint64_t id;

	if (act == KBAL_ACT_DEFER) {
		apply_memory_widen(e->app, p, "left to the kernel's NUMA balancing", res);
		if (res->status == APPLY_DONE)
			e->stats.memory_deferred++;
		return false;
	}
	if (!e->mover || !e->mover_on || !apply_pending_movable(p)) {
		apply_memory(e->app, p, res);
		return false;
	}
	memset(&spec, 0, sizeof(spec));
	spec.npids = apply_pending_pids(e->app, p, &pids);
	if (spec.npids == 0) {
		/* No process: nothing to move; the mems change is all. */
		free(pids);
		apply_memory(e->app, p, res);
		return false;
	}
	/* move_pages(2) needs the target inside the task's mems. */
	apply_memory_widen(e->app, p, "to move by the mover", res);
	if (res->status != APPLY_DONE) {
		free(pids);
		return false;
	}
	snprintf(spec.guest, sizeof(spec.guest), "%s", it->guest_id);
	snprintf(spec.cause, sizeof(spec.cause), "%s", move_reason_name(it->reason));
	spec.pids = pids;
	spec.to = it->to_mems;
	spec.bytes = it->migrate_bytes;
	id = mover_submit(e->mover, &spec);
	free(pids);
	{
		size_t n = strlen(res->msg);

		snprintf(res->msg + n, sizeof(res->msg) - n, " (job %llu)", (unsigned long long)id);
	}
	if (e->njobs == e->capjobs) {
		e->capjobs = e->capjobs ? e->capjobs * 2 : 8;
		e->jobs = xrealloc(e->jobs, e->capjobs * sizeof(*e->jobs));
	}
	e->jobs[e->njobs++] = (struct ejob){ .id = id, .p = p };
	return true;
}

/* Jobs the mover ended: narrow a strictly bound guest's mems, record when
 * (and whether) its memory arrived. Engine thread. */
static void settle_jobs(struct engine *e)
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
		char from[NODELIST_BUFSZ], to[NODELIST_BUFSZ], decision[40];
		double mib = (double)ji->bytes_done / 1048576.0;

		for (unsigned i = 0; i < e->njobs; i++)
			if (e->jobs[i].id == ji->id) {
				p = e->jobs[i].p;
				e->jobs[i] = e->jobs[--e->njobs];
				break;
			}
		if (!p)
			continue;
		memset(&res, 0, sizeof(res));
		res.locality_after = NAN;
		res.mems_loosened = apply_pending_soft(p);
		mask_or(&res.mems_after, &apply_pending_snapshot(p)->guests[apply_pending_item(p)->guest_idx].mems,
			&apply_pending_item(p)->to_mems);
		/* Narrowing a strict guest migrates what is left: only once its
		 * pages are in place. A job that ended early leaves its mems
		 * wide (old ∪ new: consistent, never empty). */
		if (ji->state == MJ_DONE)
			apply_memory_settle(e->app, p, &res);
		mask_format(&ji->from, from, sizeof(from));
		mask_format(&ji->to, to, sizeof(to));
		apply_result_set(&res, ji->state == MJ_DONE ? APPLY_DONE : ji->state == MJ_VANISHED ? APPLY_VANISHED :
				 ji->state == MJ_FAILED ? APPLY_FAILED : APPLY_CHANGED, ji->state == MJ_FAILED ? -EIO : 0,
			"job %llu %s: %.1f MiB moved off nodes %s onto %s in %.2f s (%.0f MiB/s), %llu chunks, "
			"longest stall %.1f ms%s%s", (unsigned long long)ji->id, mover_state_name(ji->state), mib,
			from[0] ? from : "-", to, ji->elapsed_s, ji->elapsed_s > 0 ? mib / ji->elapsed_s : 0,
			(unsigned long long)ji->chunks, ji->stall_max_ms, ji->msg[0] ? ": " : "", ji->msg);
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
	settle_jobs(e);
	return idle ? 0 : -ETIMEDOUT;
}

struct mover *engine_mover(struct engine *e)
{
	return __atomic_load_n(&e->mover, __ATOMIC_ACQUIRE);
}

/* Log, record and count the outcome of plan item I. */
static void record_move(struct engine *e, const struct snapshot *snap, struct pstate *next,
			const struct plan_item *it, const struct apply_result *res, struct cycle_report *report,
			unsigned i)
{
	log_move(snap, it, res);
	declog_add(e->dl, declog_make(snap, it, move_decision(res->status), res, false));
	if (report) {
		report->results[i] = *res;
		report->attempted[i] = true;
	}
	switch (res->status) {
	case APPLY_DONE:
		e->stats.moves++;
		e->stats.migrated_bytes += it->migrate_bytes;
		break;
	case APPLY_FAILED:
	case APPLY_FAILED_PARTIAL:
	case APPLY_REFUSED:
		/* Keep the cool-down: retrying a refused write every
		 * cycle would only hammer the cgroup. */
		e->stats.move_failures++;
		break;
	case APPLY_NOT_APPLICABLE:
		/* libvirt refuses this kind of change (its numatune):
		 * asking every cycle would only repeat the refusal. */
		e->stats.moves_skipped++;
		break;
	default:
		e->stats.moves_skipped++;
		pstate_revert(next, e->ps, it->guest_id);
		break;
	}
}

int engine_cycle(struct engine *e, bool dry_run, struct cycle_report *report)
{
	struct snapshot *snap = NULL;
	struct plan *plan = NULL;
	struct pstate *next = NULL;
	int64_t t0 = clock_mono_ns(), t1, t2, t3;
	char (*placed)[GUEST_ID_MAX] = NULL;
	unsigned nplaced, npend = 0;
	struct {
		struct apply_pending *p;
		unsigned idx;
	} *pend;
	bool do_apply;
	int r;

	if (report)
		memset(report, 0, sizeof(*report));
	apply_schedule(e);
	settle_jobs(e);
	dry_run = dry_run || e->cfg.dry_run;
	r = e->src.snapshot(e->acq, e->cfg.sample_s, &snap);
	if (r < 0)
		return log_errno(LOG_LEVEL_ERROR, r, "cannot read the host topology from %s", e->hp.sysfs);
	t1 = clock_mono_ns();

	for (unsigned i = 0; e->gs && i < snap->nr_guests; i++) {
		struct gpol_record rec;

		if (gpolstore_get(e->gs, snap->guests[i].id, &rec))
			snap->guests[i].policy = rec.pol;
	}
	/* The same broken file gives the same warning every cycle: once,
	 * then with a count now and then (47 lines a cycle on one host). */
	if (!e->warn_rep)
		e->warn_rep = log_repeat_new();
	log_repeat_round(e->warn_rep, LOG_LEVEL_WARN, snap->warnings, snap->nr_warnings);

	e->stats.cpu_nodes = snap_nr_cpu_nodes(snap);
	read_balancing(e, snap);
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
	/* Domains that just started are placed now, before the policy runs,
	 * so it sees their cool-down and leaves them be this cycle. */
	nplaced = place_started(e, snap, dry_run, &placed);

	if (e->cfg.mode != MODE_OFF) {
		const struct advice_reservation *res;
		unsigned nres = engine_reservations(e, &res);

		r = e->pol.decide(&e->cfg.policy, snap, e->ps, report != NULL, res, nres, &plan, &next);
		if (r < 0) {
			snap_unref(snap);
			free(placed);
			return log_errno(LOG_LEVEL_ERROR, r, "policy rejected its configuration");
		}
	}
	t2 = clock_mono_ns();

	do_apply = e->cfg.mode == MODE_ENFORCE && !dry_run;
	if (report && plan) {
		report->nr_results = plan->nr_items;
		report->results = xcalloc(plan->nr_items ? plan->nr_items : 1, sizeof(*report->results));
		report->attempted = xcalloc(plan->nr_items ? plan->nr_items : 1, sizeof(bool));
		report->applied = do_apply;
	}
	pend = xcalloc(plan && plan->nr_items ? plan->nr_items : 1, sizeof(*pend));
	for (unsigned i = 0; plan && i < plan->nr_items; i++) {
		const struct plan_item *it = &plan->items[i];
		struct logged *last = logged_find(e, it->guest_id);

		bool just_placed = false;

		/* Placed this cycle: the plan saw it where it was before. */
		for (unsigned k = 0; k < nplaced && !just_placed; k++)
			just_placed = strcmp(placed[k], it->guest_id) == 0;
		if (just_placed)
			continue;
		if (it->kind == PLAN_MOVE) {
			struct apply_result res;

			if (!do_apply) {
				/* Advise mode and dry runs plan the same move every
				 * cycle until something changes: say it once, not
				 * once a cycle (an explicit request, REPORT, always
				 * gets its records). */
				bool same = !report && last && last->kind == PLAN_MOVE && last->reason == it->reason &&
					    mask_equal(&last->to_nodes, &it->to_nodes) &&
					    mask_equal(&last->to_mems, &it->to_mems);

				pstate_revert(next, e->ps, it->guest_id);
				if (same)
					continue;
				log_move(snap, it, NULL);
				declog_add(e->dl, declog_make(snap, it, e->cfg.mode == MODE_ADVISE && !dry_run ?
							  "advised" : "planned", NULL, dry_run));
				continue;
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
			apply_cpus(e->app, snap, it, &res, &pend[npend].p);
			if (pend[npend].p) {
				pend[npend++].idx = i;
				continue;
			}
			record_move(e, snap, next, it, &res, report, i);
		} else if (it->kind == PLAN_SKIP) {
			if (last && last->kind == it->kind && last->skip == it->skip && last->reason == it->reason)
				continue;
			log_debug("not moving %s: %s (%s)", it->guest_id, skip_reason_name(it->skip), it->detail);
			declog_add(e->dl, declog_make(snap, it, "skipped", NULL, dry_run));
		}
	}
	for (unsigned k = 0; k < npend; k++) {
		const struct plan_item *it = &plan->items[pend[k].idx];
		struct apply_result res;

		/* A cycle of big migrations can outlast the watchdog. */
		if (e->watchdog_usec)
			notify_watchdog();
		if (!memory_phase(e, snap, pend[k].p, &res))
			apply_pending_free(pend[k].p);
		record_move(e, snap, next, it, &res, report, pend[k].idx);
	}
	free(pend);
	t3 = clock_mono_ns();
	if (plan)
		logged_update(e, plan);
	if (next) {
		pstate_free(e->ps);
		e->ps = next;
	}

	e->stats.cycles++;
	e->stats.last_cycle_real_ns = clock_real_ns();
	e->stats.last_cycle_s = (double)(t3 - t0) / 1e9;
	e->stats.last_acquire_s = (double)(t1 - t0) / 1e9;
	e->stats.last_decide_s = (double)(t2 - t1) / 1e9;
	e->stats.last_apply_s = (double)(t3 - t2) / 1e9;
	history_record(e->hist, snap);
	publish(e, snap, plan);
	if (report)
		report->view = engine_view_get(e);
	log_debug("cycle %llu: %u guests, %u plan items, %.1f ms (acquire %.1f, decide %.1f, apply %.1f)",
		  (unsigned long long)snap->seq, snap->nr_guests, plan ? plan->nr_items : 0,
		  e->stats.last_cycle_s * 1e3, e->stats.last_acquire_s * 1e3,
		  e->stats.last_decide_s * 1e3, e->stats.last_apply_s * 1e3);
	snap_unref(snap);
	free(placed);
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

static bool same_strv(unsigned na, char *const *a, unsigned nb, char *const *b)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

int engine_apply_config(struct engine *e, const struct agent_config *cfg)
{
	bool rebuild = !same_strv(e->base.cg.nr_scopes, e->base.cg.scopes, cfg->cg.nr_scopes, cfg->cg.scopes) ||
		       !same_strv(e->base.cg.nr_parents, e->base.cg.parents, cfg->cg.nr_parents, cfg->cg.parents) ||
		       !same_strv(e->base.cg.nr_runc_roots, e->base.cg.runc_roots, cfg->cg.nr_runc_roots,
				  cfg->cg.runc_roots) ||
		       e->base.policy.min_free_bytes != cfg->policy.min_free_bytes ||
		       e->base.freeze_during_migration != cfg->freeze_during_migration ||
		       e->base.strict_mems != cfg->strict_mems ||
		       e->base.libvirt_enabled != cfg->libvirt_enabled ||
		       strcmp(e->base.libvirt_uri ? e->base.libvirt_uri : "", cfg->libvirt_uri ? cfg->libvirt_uri : "") ||
		       strcmp(e->base.libvirt_module ? e->base.libvirt_module : "",
			      cfg->libvirt_module ? cfg->libvirt_module : "") ||
		       e->base.libvirt_keepalive_interval != cfg->libvirt_keepalive_interval ||
		       e->base.libvirt_keepalive_count != cfg->libvirt_keepalive_count ||
		       e->base.libvirt_cpus_without_memory != cfg->libvirt_cpus_without_memory;
	int r;

	if (rebuild) {
		r = build_sources(e, cfg);
		if (r < 0)
			return r;
	}
	/* Reopen even when the path is unchanged: SIGHUP after logrotate. */
	{
		char err[600];

		r = declog_reopen(e->dl, cfg->decision_log, err, sizeof(err));
		if (r < 0)
			log_error("cannot reopen the %s; records go on to the file open before", err);
	}
	mover_setup(e, cfg);
	config_free(&e->base);
	config_copy(&e->base, cfg);
	history_set_spacing(e->hist, cfg->history_s / HISTORY_SAMPLES);
	e->sched_valid = false;
	apply_schedule(e);
	log_set_level(cfg->log_level);
	return 0;
}

static void arm_timer(struct engine *e, double seconds)
{
	struct itimerspec its = { 0 };

	if (seconds < 0.001)
		seconds = 0.001;
	its.it_value.tv_sec = (time_t)seconds;
	its.it_value.tv_nsec = (long)((seconds - floor(seconds)) * 1e9);
	timerfd_settime(e->tfd, 0, &its, NULL);
}

static void run_calls(struct engine *e)
{
	for (;;) {
		struct call *c;

		pthread_mutex_lock(&e->q_lock);
		c = e->q_head;
		if (c) {
			e->q_head = c->next;
			if (!e->q_head)
				e->q_tail = NULL;
		}
		pthread_mutex_unlock(&e->q_lock);
		if (!c)
			return;
		c->ret = c->fn(e, c->arg);
		pthread_mutex_lock(&e->q_lock);
		c->done = true;
		if (c->abandoned) {
			pthread_mutex_unlock(&e->q_lock);
			pthread_cond_destroy(&c->cond);
			free(c);
			continue;
		}
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&e->q_lock);
	}
}

int engine_call(struct engine *e, engine_fn fn, void *arg, unsigned timeout_ms)
{
	struct call *c;
	struct timespec until;
	int ret;

	if (e->thread_set && pthread_equal(pthread_self(), e->thread))
		return fn(e, arg);
	c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&e->q_lock);
	if (e->stopping || e->efd < 0) {
		pthread_mutex_unlock(&e->q_lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		return -ESHUTDOWN;
	}
	if (e->q_tail)
		e->q_tail->next = c;
	else
		e->q_head = c;
	e->q_tail = c;
	{
		uint64_t one = 1;
		ssize_t w = write(e->efd, &one, sizeof(one));
		(void)w;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!c->done) {
		if (timeout_ms == 0) {
			pthread_cond_wait(&c->cond, &e->q_lock);
		} else if (pthread_cond_timedwait(&c->cond, &e->q_lock, &until) == ETIMEDOUT && !c->done) {
			c->abandoned = true;
			pthread_mutex_unlock(&e->q_lock);
			return -ETIMEDOUT;
		}
	}
	ret = c->ret;
	pthread_mutex_unlock(&e->q_lock);
	pthread_cond_destroy(&c->cond);
	free(c);
	return ret;
}

void engine_stop(struct engine *e)
{
	uint64_t one = 1;

	__atomic_store_n(&e->stopping, true, __ATOMIC_RELEASE);
	if (e->efd >= 0) {
		ssize_t w = write(e->efd, &one, sizeof(one));
		(void)w;
	}
}

/* Calls still queued when the loop ends get -ESHUTDOWN. */
static void fail_pending(struct engine *e)
{
	pthread_mutex_lock(&e->q_lock);
	e->stopping = true;
	while (e->q_head) {
		struct call *c = e->q_head;

		e->q_head = c->next;
		c->ret = -ESHUTDOWN;
		c->done = true;
		if (c->abandoned) {
			pthread_cond_destroy(&c->cond);
			free(c);
		} else {
			pthread_cond_signal(&c->cond);
		}
	}
	e->q_tail = NULL;
	pthread_mutex_unlock(&e->q_lock);
}

int engine_prepare_loop(struct engine *e)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	e->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pthread_mutex_lock(&e->q_lock);
	e->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_unlock(&e->q_lock);
	if (e->sfd < 0 || e->tfd < 0 || e->efd < 0)
		return -errno;
	e->thread = pthread_self();
	e->thread_set = true;
	return 0;
}

int engine_run(struct engine *e, engine_reload_fn reload, void *ctx)
{
	int r;

	if (e->efd < 0) {
		r = engine_prepare_loop(e);
		if (r < 0)
			return log_errno(LOG_LEVEL_ERROR, r, "cannot set up the event loop");
	}
	arm_timer(e, 0);
	/* WatchdogSec=: the loop wakes at least every half interval and pings
	 * when it does, so a hung engine (not a hung helper thread) is what
	 * systemd notices. */
	e->watchdog_usec = notify_watchdog_usec();
	while (!__atomic_load_n(&e->stopping, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[4] = {
			{ .fd = e->sfd, .events = POLLIN },
			{ .fd = e->tfd, .events = POLLIN },
			{ .fd = e->efd, .events = POLLIN },
			{ .fd = e->mover ? mover_event_fd(e->mover) : -1, .events = POLLIN },
		};
		/* At least once a second: the heartbeat GET /v1/health reads. */
		int timeout = e->watchdog_usec && e->watchdog_usec / 2000 < ENGINE_HEARTBEAT_MS ?
			      (int)(e->watchdog_usec / 2000) : ENGINE_HEARTBEAT_MS;

		__atomic_store_n(&e->heartbeat_ns, clock_mono_ns(), __ATOMIC_RELEASE);
		if (e->watchdog_usec)
			notify_watchdog();
		if (poll(pfd, 4, timeout) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			fail_pending(e);
			return log_errno(LOG_LEVEL_ERROR, r, "poll");
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(e->sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					struct agent_config *nc;

					notify_reloading();
					/* Reload stops running migrations at a chunk
					 * boundary (recorded "memory_stopped"); the
					 * next cycles decide under the new settings. */
					if (e->mover) {
						mover_stop_all(e->mover);
						settle_jobs(e);
					}
					nc = reload ? reload(ctx) : NULL;

					if (nc) {
						if (engine_apply_config(e, nc) == 0)
							log_info("configuration reloaded");
						else
							log_error("new configuration could not be applied; keeping the old one");
						config_free(nc);
						free(nc);
						arm_timer(e, e->cfg.interval_s);
					}
					notify_ready(NULL);
				} else {
					log_info("received %s, stopping", strsignal((int)si.ssi_signo));
					notify_stopping();
					e->stopping = true;
				}
			}
		}
		if (pfd[2].revents & POLLIN) {
			uint64_t v;
			ssize_t rd = read(e->efd, &v, sizeof(v));

			(void)rd;
			run_calls(e);
		}
		if (pfd[3].revents & POLLIN)
			settle_jobs(e);
		if (e->stopping)
			break;
		if (__atomic_load_n(&e->triggered, __ATOMIC_ACQUIRE) && !(pfd[1].revents & POLLIN)) {
			/* Requested cycles (events, hooks) coalesce: one pending
			 * at most, and it starts no sooner than trigger_gap after
			 * the last cycle ended, so a flood of events runs a cycle
			 * a second, not back to back. */
			double gap = e->cfg.interval_s / 2 < ENGINE_TRIGGER_GAP_S ? e->cfg.interval_s / 2 :
				     ENGINE_TRIGGER_GAP_S;
			double since = (double)(clock_mono_ns() - e->last_cycle_end_ns) / 1e9;
			struct itimerspec cur;

			if (!e->last_cycle_end_ns || since >= gap) {
				__atomic_store_n(&e->triggered, false, __ATOMIC_RELEASE);
				engine_cycle(e, false, NULL);
				arm_timer(e, e->cfg.interval_s);
				continue;
			}
			/* Wake when the gap is over, unless the interval's own
			 * cycle comes first; that cycle serves the request. */
			if (timerfd_gettime(e->tfd, &cur) == 0 &&
			    (double)cur.it_value.tv_sec + cur.it_value.tv_nsec / 1e9 > gap - since + 0.001)
				arm_timer(e, gap - since);
			continue;
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t exp;
			ssize_t rd = read(e->tfd, &exp, sizeof(exp));

			(void)rd;
			__atomic_store_n(&e->triggered, false, __ATOMIC_RELEASE);
			engine_cycle(e, false, NULL);
			/* Re-armed relative to the end of the cycle: a slow cycle
			 * (a big migration) never makes cycles pile up. */
			arm_timer(e, e->cfg.interval_s);
		}
	}
	/* SIGTERM: jobs stop at a chunk boundary; their guests keep their
	 * (widened, consistent) mems. */
	if (e->mover) {
		mover_stop_all(e->mover);
		settle_jobs(e);
	}
	fail_pending(e);
	return 0;
}

/* ---- initial placement of starting VMs -----------------------------------
 *
 * A domain the VM source saw start (its STARTED event, or a new instance
 * in a listing after the hook's notification) is placed in the same
 * cycle: on the nodes a reservation labelled with its name, uuid or
 * guest id promised it (the reservation is consumed), else on its pinned
 * nodes, else where policy_advise() — the advice POST /v1/placements
 * gives, other reservations counted as load — says its vCPUs and memory
 * fit best. The decision is recorded with reason "place", and the guest
 * starts its cool-down so the policy leaves it alone until its use is
 * measured.
 */

/* Memory nodes for CPU nodes NODES: those with memory, else the one with
 * memory nearest to them. */
static void place_mems(const struct snapshot *snap, const nodemask_t *nodes, nodemask_t *out)
{
	unsigned best = ~0u;
	int near = -1;

	mask_zero(out);
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (mask_test(nodes, snap->nodes[n].id) && snap->nodes[n].mem_total)
			mask_set(out, snap->nodes[n].id);
	if (!mask_empty(out))
		return;
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		unsigned d;
		int m;

		if (!mask_test(nodes, snap->nodes[n].id))
			continue;
		m = snap_nearest_mem_node(snap, n, &d);
		if (m >= 0 && d < best) {
			best = d;
			near = m;
		}
	}
	if (near >= 0)
		mask_set(out, near);
}

/* A reservation holds CPU nodes and memory nodes in one mask (a guest
 * on a memory-less node has its memory elsewhere), so which of RNODES
 * are CPU nodes is asked again of the same advice, with the reservation
 * itself already given back: its answer is what was promised unless the
 * load changed. If it now lies outside RNODES, the CPU nodes are RNODES
 * without the memory nodes that only serve memory-less ones among them. */
static void place_reserved(struct engine *e, const struct snapshot *snap, const struct vmsrc_placement *pl,
			   const nodemask_t *rnodes, nodemask_t *nodes, nodemask_t *mems)
{
	const struct advice_reservation *rs;
	struct advice_request req = { .cpus = pl->nr_vcpus * e->cfg.libvirt_place_vcpu_load,
				      .mem_bytes = pl->mem_bytes };
	struct advice adv = { .ok = false };
	nodemask_t cpu_nodes, memonly;

	req.nr_reservations = engine_reservations(e, &rs);
	req.reservations = rs;
	if (e->pol.advise(&e->cfg.policy, snap, &req, &adv) == 0 && adv.ok &&
	    mask_subset(&adv.nodes, rnodes) && mask_subset(&adv.mems, rnodes)) {
		*nodes = adv.nodes;
		*mems = adv.mems;
		return;
	}
	mask_zero(&cpu_nodes);
	mask_zero(&memonly);
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (mask_test(rnodes, snap->nodes[n].id) && snap->nodes[n].nr_cpus)
			mask_set(&cpu_nodes, snap->nodes[n].id);
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		int m;

		if (!mask_test(&cpu_nodes, snap->nodes[n].id) || snap->nodes[n].mem_total)
			continue;
		m = snap_nearest_mem_node(snap, n, NULL);
		if (m >= 0)
			mask_set(&memonly, m);
	}
	mask_andnot(nodes, &cpu_nodes, &memonly);
	if (mask_empty(nodes))
		*nodes = cpu_nodes;
	place_mems(snap, rnodes, mems);
}

/* The reservation made for this domain, by label; -1 if none. */
static int place_reservation(struct engine *e, const struct vmsrc_placement *pl)
{
	const char *keys[] = { pl->name, pl->uuid, pl->id };

	res_expire(e);
	for (unsigned i = 0; i < e->nr_res; i++)
		for (unsigned k = 0; k < 3; k++)
			if (e->res_label[i] && keys[k][0] && strcmp(e->res_label[i], keys[k]) == 0)
				return (int)i;
	return -1;
}

static void place_one(struct engine *e, struct snapshot *snap, const struct vmsrc_placement *pl,
		      bool do_apply, bool dry_run)
{
	const struct snap_guest *g = snap_find_guest(snap, pl->id);
	struct plan_item it;
	struct apply_result res;
	cpumask_t cpus;
	nodemask_t nodes, mems;
	char nl[NODELIST_BUFSZ];
	int ri;

	if (!g)
		return;
	memset(&it, 0, sizeof(it));
	snprintf(it.guest_id, sizeof(it.guest_id), "%s", g->id);
	it.guest_idx = (unsigned)(g - snap->guests);
	it.kind = PLAN_MOVE;
	it.reason = REASON_PLACE;
	it.from_nodes = g->cpu_nodes;
	it.from_mems = g->mems;
	it.cpu_demand = pl->nr_vcpus * e->cfg.libvirt_place_vcpu_load;
	it.mem_demand = pl->mem_bytes;
	it.load_before = NAN;
	it.load_after = NAN;
	it.locality_before = g->locality;

	if (g->policy.mode == GPOL_IGNORE) {
		it.kind = PLAN_SKIP;
		it.skip = SKIP_IGNORED;
		snprintf(it.detail, sizeof(it.detail), "started; its policy says ignore: not placed");
		declog_add(e->dl, declog_make(snap, &it, "skipped", NULL, dry_run));
		return;
	}
	ri = place_reservation(e, pl);
	if (ri >= 0) {
		nodemask_t rnodes = e->res[ri].nodes;
		char rl[64];

		bool exact = !mask_empty(&e->res_cpus[ri]);

		snprintf(rl, sizeof(rl), "%s", e->res_label[ri]);
		if (exact) {
			/* Exactly where the advice that made the reservation put it. */
			nodes = e->res_cpus[ri];
			mems = e->res_mems[ri];
		}
		mask_format(exact ? &nodes : &rnodes, nl, sizeof(nl));
		snprintf(it.detail, sizeof(it.detail), "started; placed on nodes %.40s reserved for it (reservation %llu, "
			 "label \"%.60s\")", nl, (unsigned long long)e->res_id[ri], rl);
		res_remove(e, (unsigned)ri);
		if (!exact)
			place_reserved(e, snap, pl, &rnodes, &nodes, &mems);
	} else if (g->policy.mode == GPOL_PINNED) {
		nodes = g->policy.nodes;
		mask_format(&nodes, nl, sizeof(nl));
		snprintf(it.detail, sizeof(it.detail), "started; pinned to nodes %.40s by its %s policy", nl,
			 g->policy.source == GPOL_SRC_API ? "API" : "metadata");
		place_mems(snap, &nodes, &mems);
	} else {
		const struct advice_reservation *rs;
		struct advice_request req = { .cpus = pl->nr_vcpus * e->cfg.libvirt_place_vcpu_load,
					      .mem_bytes = pl->mem_bytes };
		struct advice adv = { .ok = false };

		req.nr_reservations = engine_reservations(e, &rs);
		req.reservations = rs;
		if (e->pol.advise(&e->cfg.policy, snap, &req, &adv) < 0 || !adv.ok) {
			it.kind = PLAN_SKIP;
			it.skip = SKIP_NO_FIT;
			snprintf(it.detail, sizeof(it.detail), "started; not placed: %.160s",
				 adv.detail[0] ? adv.detail : "bad request");
			declog_add(e->dl, declog_make(snap, &it, "skipped", NULL, dry_run));
			log_info("not placing %s (%s): %s", g->id, g->name, it.detail);
			return;
		}
		nodes = adv.nodes;
		mems = adv.mems;
		it.load_after = adv.load_after;
		snprintf(it.detail, sizeof(it.detail), "started; initial placement: %.160s", adv.detail);
	}
	snap_nodes_to_cpus(snap, &nodes, &cpus);
	if (!mask_empty(g->allowed_cpus))
		mask_and(&cpus, &cpus, g->allowed_cpus);
	if (mask_empty(&cpus) || mask_empty(&mems)) {
		it.kind = PLAN_SKIP;
		it.skip = SKIP_OUTSIDE_ALLOWED;
		snprintf(it.detail + strlen(it.detail), sizeof(it.detail) - strlen(it.detail),
			 "; no usable CPUs or memory there");
		declog_add(e->dl, declog_make(snap, &it, "skipped", NULL, dry_run));
		return;
	}
	snap_cpus_to_nodes(snap, &cpus, &it.to_nodes);
	it.to_mems = mems;
	it.to_cpus = &cpus;
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		if (!mask_test(&mems, snap->nodes[n].id))
			it.migrate_bytes += g->mem_node[n];

	if (!do_apply) {
		log_move(snap, &it, NULL);
		declog_add(e->dl, declog_make(snap, &it, e->cfg.mode == MODE_ADVISE && !dry_run ? "advised" :
					      "planned", NULL, dry_run));
		return;
	}
	apply_move(e->app, snap, &it, &res);
	{
		size_t l = strlen(res.msg);

		snprintf(res.msg + l, sizeof(res.msg) - l, "; %.3f s after its start was seen",
			 (double)(clock_mono_ns() - pl->event_ns) / 1e9);
	}
	log_move(snap, &it, &res);
	declog_add(e->dl, declog_make(snap, &it, move_decision(res.status), &res, false));
	switch (res.status) {
	case APPLY_DONE:
		e->stats.moves++;
		e->stats.migrated_bytes += it.migrate_bytes;
		pstate_note_move(e->ps, g->id, snap->mono_ns);
		break;
	case APPLY_FAILED:
	case APPLY_FAILED_PARTIAL:
	case APPLY_REFUSED:
		e->stats.move_failures++;
		pstate_note_move(e->ps, g->id, snap->mono_ns);
		break;
	default:
		e->stats.moves_skipped++;
		break;
	}
}

static unsigned place_started(struct engine *e, struct snapshot *snap, bool dry_run,
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
