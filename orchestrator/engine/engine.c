/* engine.c — the engine's life, the top of its files: sources, applier
 * and mover set up from the configuration, configuration changes (a
 * reload, a PUT), the state directory taken, and the run: the loop's
 * turns (engine_loop.c) with the signals handled here. The cycle is
 * engine_cycle.c; the files below, engine_int.h. */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
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
#include "orchestrator/base/strtab.h"
#include "orchestrator/base/xalloc.h"

/* libvirt's event thread: a domain started or stopped. */
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
	/* A write on a mover worker (engine_jobs.c) goes on with the
	 * applier it was handed: kept until the engine ends. */
	if (e->app && e->jobs.mover && engine_jobs_writes_running(e)) {
		e->old_app = xrealloc(e->old_app, (e->nold_app + 1) * sizeof(*e->old_app));
		e->old_app[e->nold_app++] = e->app;
	} else {
		applier_free(e->app);
	}
	vm_free(e);
	e->acq = acq;
	e->app = app;
	e->vm = vm;
	e->va = va;
	return 0;
}

int engine_new(const struct agent_config *cfg, const struct host_paths *hp,
	       const struct engine_parts *parts, struct engine **out)
{
	struct engine *e;
	int r;

	if (!parts || !parts->sources || !parts->policy || !parts->policy->decide || !parts->policy->advise ||
	    !parts->sources->acquirer_new || !parts->sources->snapshot ||
	    !parts->sources->read_meminfo)
		return -EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->src = *parts->sources;
	e->pol = *parts->policy;
	engine_conf_init(&e->conf, cfg);
	e->hp = *hp;
	engine_loopst_init(&e->loop);
	engine_state_init(&e->st);
	engine_viewst_init(&e->pub);
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
	engine_jobs_setup(e, cfg);
	*out = e;
	return 0;
fail:
	engine_free(e);
	return r;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	/* A write left in the kernel still uses the applier. */
	bool writes_left = !engine_jobs_free(&e->jobs);

	engine_binds_free(&e->binds);
	engine_place_free(&e->place);
	engine_viewst_free(&e->pub);
	if (e->acq)
		e->src.acquirer_free(e->acq);
	if (!writes_left) {
		applier_free(e->app);
		for (unsigned i = 0; i < e->nold_app; i++)
			applier_free(e->old_app[i]);
		free(e->old_app);
	}
	vm_free(e);
	declog_close(e->dl);
	history_free(e->hist);
	engine_cyclest_free(&e->cyc);
	engine_state_free(&e->st);
	engine_conf_clear(&e->conf);
	engine_loopst_free(&e->loop);
	free(e);
}

struct declog *engine_declog(struct engine *e) { return e->dl; }
struct history *engine_history(struct engine *e) { return e->hist; }
const struct agent_config *engine_config(struct engine *e) { return &e->conf.base; }

const struct policy_ops *engine_policy(struct engine *e) { return &e->pol; }

void engine_use_gpolstore(struct engine *e, struct gpolstore *gs)
{
	e->gs = gs;
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
	bool rebuild = config_sources_differ(&e->conf.base, cfg);
	int r;

	if (rebuild) {
		r = build_sources(e, cfg);
		if (r < 0)
			return r;
	}
	/* Reopen even when the path is unchanged: SIGHUP after logrotate. */
	engine_reopen_log(e, cfg->decision_log);
	engine_jobs_setup(e, cfg);
	engine_conf_set_base(&e->conf, cfg);
	history_set_spacing(e->hist, cfg->history_s / HISTORY_SAMPLES);
	engine_apply_schedule(&e->conf, e->jobs.mover, e->jobs.mover_on);
	log_set_level(cfg->log_level);
	engine_republish(e, e->jobs.mover_on);
	return 0;
}

int engine_use_state_dir(struct engine *e, const char *dir, const struct engstate_limits *lim, char *err,
			 size_t errsz)
{
	int dfd = fs_mkdir_trusted("state directory", dir, 0750, err, errsz);

	if (dfd < 0)
		return dfd;
	engine_state_set_dir(e, dfd);
	/* Start bindings a stopped agent left: taken back (engine_bind.c). */
	engine_load_bindings(e, dfd, dir);
	engine_state_load(e, dfd, dir, lim);
	return 0;
}

int engine_reload(struct engine *e)
{
	struct agent_config *nc;
	int r = -ENOENT;

	notify_reloading();
	nc = e->reload ? e->reload(e->reload_ctx) : NULL;
	if (nc) {
		/* Running migrations go on: a reload is also logrotate's, and
		 * the settings that made them did not change. Only new mover
		 * settings stop them at a chunk boundary (recorded
		 * "memory_stopped"), and the next cycles decide under those. */
		if (e->jobs.mover && engine_mover_settings_differ(&e->conf.base, nc)) {
			log_info("reload: the memory mover's settings changed; stopping its running jobs");
			mover_stop_all(e->jobs.mover);
			engine_settle_jobs(e);
		}
		r = engine_apply_config(e, nc);
		if (r == 0) {
			log_info("configuration reloaded");
		} else {
			log_error("new configuration could not be applied; keeping the old one");
			r = -EINVAL;
		}
		config_free(nc);
		engine_arm_timer(e, engine_next_cycle_s(e));
	} else if (e->reload) {
		r = -EINVAL;
	}
	notify_ready(NULL);
	return r;
}

/* A signal the loop read: SIGHUP reloads, SIGUSR1 reopens the decision
 * log, the others stop the agent. */
static void on_signal(struct engine *e, int sig)
{
	if (sig == SIGHUP) {
		engine_reload(e);
	} else if (sig == SIGUSR1) {
		/* logrotate's signal: the files reopened, nothing
		 * re-read and no migration stopped. */
		if (engine_reopen_log(e, e->conf.base.decision_log) == 0)
			log_info("received SIGUSR1: decision log reopened");
	} else {
		log_info("received %s, stopping", strsignal(sig));
		notify_stopping();
		engine_loop_halt(e);
	}
}

int engine_run(struct engine *e, engine_reload_fn reload, void *ctx)
{
	short rev[ENGINE_LOOP_NFD];
	unsigned writing = 0;
	int r, sig;

	e->reload = reload;
	e->reload_ctx = ctx;

	if (e->loop.efd < 0) {
		r = engine_prepare_loop(e);
		if (r < 0)
			return log_errno(LOG_LEVEL_ERROR, r, "cannot set up the event loop");
	}
	engine_arm_timer(e, 0);
	/* WatchdogSec=: the loop wakes at least every half interval and pings
	 * when it does, so a hung engine (not a hung helper thread) is what
	 * systemd notices. */
	e->watchdog_usec = notify_watchdog_usec();
	while (!engine_loop_stopping(e)) {
		r = engine_loop_wait(e, rev);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		if (rev[ENGINE_LOOP_SIGNALS] & POLLIN)
			while ((sig = engine_loop_signal(e)) > 0)
				on_signal(e, sig);
		if (engine_loop_dispatch(e, rev))
			break;
	}
	/* SIGTERM: jobs stop at a chunk boundary; their guests keep their
	 * (widened, consistent) mems. */
	if (e->jobs.mover) {
		/* A short write (a young guest's start binding) is let end, for
		 * its guest to be released as usual, within half of the second
		 * the agent has to stop in. */
		if (mover_stop_all(e->jobs.mover))
			mover_wait_idle(e->jobs.mover, 0.5);
		engine_settle_jobs(e);
		writing = engine_jobs_leave_writes(e);
	}
	/* No start binding outlives the agent (engine_bind.c), but every
	 * cpuset write waits in the kernel until a migrating one ends: with a
	 * write left there the bindings stay saved, for the next start. */
	if (writing) {
		log_info("%u cpuset.mems write%s left to finish in the kernel; start bindings kept for the next "
			 "start", writing, writing == 1 ? "" : "s");
		engine_save_bindings(e);
	} else {
		engine_release_bindings(e, "the agent stopped");
	}
	engine_loop_fail_pending(e);
	return 0;
}
