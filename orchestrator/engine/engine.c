/* engine.c — the engine's life: sources, applier and mover set up from
 * the configuration, the view readers see, configuration and schedule
 * changes, reservations. The loop is engine_loop.c, the cycle
 * engine_cycle.c, start placement engine_place.c. */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/store/engstate.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/store/gpolstore.h"
#include "orchestrator/store/history.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/notify.h"
#include "orchestrator/base/numamig.h"
#include "orchestrator/base/strtab.h"
#include "orchestrator/base/xalloc.h"

static void vm_notify(void *ctx)
{
	engine_trigger(ctx);
}

static const char *const libvirt_state_names[] = {
	[LIBVIRT_DISABLED] = "disabled",
	[LIBVIRT_UNAVAILABLE] = "unavailable",
	[LIBVIRT_DISCONNECTED] = "disconnected",
	[LIBVIRT_CONNECTED] = "connected",
};
STRTAB_NAME(engine_libvirt_state_name, enum engine_libvirt_state, libvirt_state_names)

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
		.min_free_share = cfg->policy.min_free_share,
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
			va = e->vmp->apply_new(vm, &e->hp, cfg->libvirt_cpus_without_memory);
			ops = (struct apply_vm_ops){ .move = e->vmp->move, .set_mems = e->vmp->set_mems, .ctx = va };
			applier_set_vm_ops(app, &ops);
		}
	}
	/* The first cycle's rate window starts here, not when that cycle
	 * does, so that the daemon's start-up (API, watchers, state), a
	 * noticeable share of a second on a slow host, counts toward the
	 * first decision's window. A failure is the first snapshot's to
	 * report. */
	if (e->src.prime)
		(void)e->src.prime(acq);
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
				      .chunk_ms = cfg->mover_chunk_ms, .job_timeout_s = cfg->mover_job_timeout_s,
				      .on_target = cfg->mover_on_target };
}

bool engine_mover_settings_differ(const struct agent_config *a, const struct agent_config *b)
{
	struct mover_config x = mover_cfg(a), y = mover_cfg(b);

	return a->mover != b->mover || x.workers != y.workers || x.rate_mib != y.rate_mib ||
	       x.chunk_ms != y.chunk_ms || x.job_timeout_s != y.job_timeout_s || x.on_target != y.on_target;
}

/* Start, reconfigure or stop the mover for CFG. Every live host has
 * one: its workers make the cpuset.mems writes that migrate, off the
 * engine thread, even where pages are not moved by move_pages(2)
 * ([memory] mover = no, no NUMA API). A fixture root's "memory" is files. */
static void mover_setup(struct engine *e, const struct agent_config *cfg)
{
	struct mover_config mc = mover_cfg(cfg);
	bool want = cfg->mover && e->hp.live && numamig_available();
	struct mover *m;
	int r;

	if (e->mover_on && !want)
		log_info("memory mover off: memory moves by cpuset.mems writes, on its workers");
	e->mover_on = false;
	if (!e->hp.live)
		return;
	if (e->mover) {
		mover_set_config(e->mover, &mc);
		e->mover_on = want;
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
	__atomic_store_n(&e->mover, m, __ATOMIC_RELEASE);
	e->mover_on = want;
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

int engine_new(const struct agent_config *cfg, const struct host_paths *hp,
	       const struct engine_parts *parts, struct engine **out)
{
	struct engine *e;
	int r;

	if (!parts || !parts->sources || !parts->policy || !parts->policy->decide || !parts->policy->advise ||
	    !parts->policy->place || !parts->sources->acquirer_new || !parts->sources->snapshot ||
	    !parts->sources->read_meminfo)
		return -EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->src = *parts->sources;
	e->pol = *parts->policy;
	config_copy(&e->cfg, cfg);
	config_copy(&e->base, cfg);
	e->hp = *hp;
	e->sfd = e->tfd = e->efd = -1;
	e->state_dfd = -1;
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
	if (v->plan_owner)
		engine_view_unref(v->plan_owner);
	else
		plan_free(v->plan);
	sched_clear(&v->schedule);
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
	for (unsigned i = 0; i < e->njobs; i++) {
		apply_pending_free(e->jobs[i].p);
		free(e->jobs[i].bw);
	}
	free(e->jobs);
	engine_bound_free(e);
	engine_view_unref(e->view);
	if (e->acq)
		e->src.acquirer_free(e->acq);
	applier_free(e->app);
	vm_free(e);
	declog_close(e->dl);
	pstate_free(e->ps);
	history_free(e->hist);
	logged_table_clear(&e->logged);
	log_repeat_free(e->warn_rep);
	resv_list_clear(&e->res);
	pstate_free(e->saved_ps);
	if (e->state_dfd >= 0)
		close(e->state_dfd);
	config_clear(&e->cfg);
	config_clear(&e->base);
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
int engine_state_dir_fd(struct engine *e) { return e->state_dfd; }

/* Recompute the settings in force from the base configuration and the
 * schedule windows active at this local time; log windows opening and
 * closing. Cheap when nothing changed. */
void engine_apply_schedule(struct engine *e)
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
	config_clear(&e->cfg);
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

uint64_t engine_reserve_placement(struct engine *e, const struct advice_reservation *r,
				  const nodemask_t *cpu_nodes, const nodemask_t *mems, double seconds,
				  const char *label)
{
	int64_t now = clock_mono_ns();

	uint64_t id;

	resv_expire(&e->res, now);
	id = resv_add(&e->res, r, cpu_nodes, mems, now + (int64_t)(seconds * 1e9), label);
	engine_save_state(e);
	return id;
}

bool engine_unreserve(struct engine *e, uint64_t id, const char *label)
{
	bool found = resv_drop(&e->res, id, label);

	engine_save_state(e);
	return found;
}

unsigned engine_reservations(struct engine *e, const struct advice_reservation **out)
{
	resv_expire(&e->res, clock_mono_ns());
	return resv_rooms(&e->res, out);
}
void engine_use_gpolstore(struct engine *e, struct gpolstore *gs)
{
	e->gs = gs;
}

static void view_settings(struct engine *e, struct engine_view *v)
{
	v->mode = e->cfg.mode;
	v->dry_run = e->cfg.dry_run;
	v->interval_s = e->cfg.interval_s;
	v->policy = e->cfg.policy;
	v->rate_mib = e->mover_on ? e->cfg.mover_rate_mib : 0;
	v->base_mode = e->base.mode;
	v->base_interval_s = e->base.interval_s;
	v->base_policy = e->base.policy;
	sched_clear(&v->schedule);
	sched_copy(&v->schedule, &e->base.schedule);
	v->schedule_active = e->sched_active;
}

/* The last cycle's view again, with the settings now in force: readers
 * (GET /v1/policy, /v1/status) see a reload or a PUT at once, not after
 * the next cycle, which may be an interval away. */
static void republish(struct engine *e)
{
	struct engine_view *v, *old;

	pthread_mutex_lock(&e->view_lock);
	old = e->view;
	if (!old) {
		pthread_mutex_unlock(&e->view_lock);
		return;
	}
	v = xcalloc(1, sizeof(*v));
	v->refs = 1;
	v->snap = snap_ref(old->snap);
	v->plan = old->plan;
	v->plan_owner = old->plan_owner ? old->plan_owner : old;
	__atomic_add_fetch(&v->plan_owner->refs, 1, __ATOMIC_RELAXED);
	v->stats = old->stats;
	view_settings(e, v);
	e->view = v;
	pthread_mutex_unlock(&e->view_lock);
	engine_view_unref(old);
}

void engine_publish(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	struct engine_view *v = xcalloc(1, sizeof(*v)), *old;

	v->refs = 1;
	v->snap = snap_ref(snap);
	v->plan = plan;
	v->stats = e->stats;
	view_settings(e, v);
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

int engine_reopen_log(struct engine *e, const char *path)
{
	char err[600];
	int r = declog_reopen(e->dl, path, err, sizeof(err));

	if (r < 0)
		log_error("cannot reopen the %s; records go on to the file open before", err);
	return r;
}

int engine_apply_config(struct engine *e, const struct agent_config *cfg)
{
	/* The sources and the applier are built from these settings. */
	bool rebuild = config_sources_differ(&e->base, cfg);
	int r;

	if (rebuild) {
		r = build_sources(e, cfg);
		if (r < 0)
			return r;
	}
	/* Reopen even when the path is unchanged: SIGHUP after logrotate. */
	engine_reopen_log(e, cfg->decision_log);
	mover_setup(e, cfg);
	config_clear(&e->base);
	config_copy(&e->base, cfg);
	history_set_spacing(e->hist, cfg->history_s / HISTORY_SAMPLES);
	e->sched_valid = false;
	engine_apply_schedule(e);
	log_set_level(cfg->log_level);
	republish(e);
	return 0;
}

static bool pstate_same(const struct pstate *a, const struct pstate *b)
{
	return a && b && a->n == b->n && (a->n == 0 || memcmp(a->e, b->e, a->n * sizeof(*a->e)) == 0);
}

void engine_save_state(struct engine *e)
{
	json_t *j;
	char *text;
	int r;

	if (e->state_dfd < 0 || (e->saved_once && e->saved_res_gen == e->res.gen && pstate_same(e->ps, e->saved_ps)))
		return;
	j = engstate_to_json(e->ps, &e->res, e->clock_offset_ns);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	r = text ? fs_write_atomic_at(e->state_dfd, ENGSTATE_FILE, text, strlen(text), 0640) : -ENOMEM;
	free(text);
	if (r < 0) {
		/* Tried again at the next change; the state in memory is intact. */
		log_errno(LOG_LEVEL_WARN, r, "cannot save the cool-downs and reservations (%s)", ENGSTATE_FILE);
		return;
	}
	pstate_free(e->saved_ps);
	e->saved_ps = pstate_clone(e->ps);
	e->saved_res_gen = e->res.gen;
	e->saved_once = true;
}

/* A state file that is not believed must not stop the agent, nor be
 * lost: renamed to .rejected (whatever its size), and said. */
static void set_state_aside(int dfd, const char *dir, const char *why)
{
	if (renameat(dfd, ENGSTATE_FILE, dfd, ENGSTATE_FILE ".rejected") < 0)
		log_warn("%s/%s: %s; cannot set it aside as %s.rejected (%s), starting without saved cool-downs "
			 "and reservations", dir, ENGSTATE_FILE, why, ENGSTATE_FILE, strerror(errno));
	else
		log_warn("%s/%s: %s; set aside as %s.rejected, starting without saved cool-downs and "
			 "reservations", dir, ENGSTATE_FILE, why, ENGSTATE_FILE);
}

int engine_use_state_dir(struct engine *e, const char *dir, const struct engstate_limits *lim, char *err,
			 size_t errsz)
{
	char *text = NULL, why[400];
	size_t len;
	json_t *j;
	int dfd, r;

	dfd = fs_mkdir_trusted("state directory", dir, 0750, err, errsz);
	if (dfd < 0)
		return dfd;
	if (e->state_dfd >= 0)
		close(e->state_dfd);
	e->state_dfd = dfd;
	e->clock_offset_ns = clock_real_ns() - clock_mono_ns();
	/* Start bindings a stopped agent left: taken back (engine_bind.c). */
	engine_load_bindings(e, dfd, dir);
	/* ~100 bytes a guest that moved: room for far more guests than a host has */
	r = fs_read_file_at(dfd, ENGSTATE_FILE, ENGSTATE_FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot read: %s%s", strerror(-r),
			 r == -EFBIG ? " (over 64 MiB)" : r == -ELOOP ? " (a symlink)" : "");
		set_state_aside(dfd, dir, why);
		return 0;
	}
	j = json_loadb(text, len, 0, NULL);
	if (j) {
		struct pstate *ps = NULL;
		struct resv_list rl = { 0 };

		r = engstate_from_json(j, e->clock_offset_ns, clock_mono_ns(), lim, &ps, &rl, why, sizeof(why));
		json_decref(j);
		if (r == 0) {
			pstate_free(e->ps);
			e->ps = ps;
			for (unsigned i = 0; i < rl.n; i++)
				resv_restore(&e->res, &rl.r[i]);
			if (rl.next_id > e->res.next_id)
				e->res.next_id = rl.next_id;
			log_info("%u cool-down%s and %u reservation%s loaded from %s/%s", ps->n, ps->n == 1 ? "" : "s",
				 rl.n, rl.n == 1 ? "" : "s", dir, ENGSTATE_FILE);
			resv_list_clear(&rl);
			free(text);
			engine_save_state(e);
			return 0;
		}
	} else {
		snprintf(why, sizeof(why), "not JSON");
	}
	set_state_aside(dfd, dir, why);
	free(text);
	return 0;
}
