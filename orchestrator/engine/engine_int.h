/* engine_int.h — private to the engine's files: struct engine, made of
 * the parts each file owns, and those files' own headers.
 *
 * The files call each other as a tree, top to bottom (no file calls one
 * that reaches it back: make check-layers checks it on the objects):
 *
 *   engine.c                 life, configuration changes, the run
 *   └ engine_loop.c          the loop and the call queue
 *     ├ engine_watch.c       the watch between cycles
 *     └ engine_cycle.c       one cycle (also calls engine_watch.c)
 *       └ engine_place.c     start placement
 *         └ engine_jobs.c    the mover and its jobs, the workers' writes
 *           └ engine_bind.c  start bindings
 *   leaves: engine_record.c (an outcome's log line, decision, counts),
 *           engine_view.c (the published view), engine_conf.c (the
 *           settings in force), engine_state.c (cool-downs,
 *           reservations, saved)
 *
 * (a file may also call any file further down the tree than its
 * children: the cycle calls jobs, bind, view... directly.) Each part of
 * the state is a struct declared in its owner's header, with what that
 * file offers; another file changes it only through those functions, and
 * reads of a part's fields from elsewhere are said in its header.
 */
#ifndef NUMAORCH_ENGINE_INT_H
#define NUMAORCH_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/actuator/vmplugin.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/engine/engine_bind.h"
#include "orchestrator/engine/engine_conf.h"
#include "orchestrator/engine/engine_cycle.h"
#include "orchestrator/engine/engine_jobs.h"
#include "orchestrator/engine/engine_loop.h"
#include "orchestrator/engine/engine_place.h"
#include "orchestrator/engine/engine_record.h"
#include "orchestrator/engine/engine_state.h"
#include "orchestrator/engine/engine_view.h"
#include "orchestrator/engine/engine_watch.h"

struct engine {
	/* engine.c's: the handles every file works with, set up and
	 * replaced by engine.c alone (engine_new, engine_apply_config,
	 * engine_run) and only read elsewhere. */
	struct host_paths hp;
	struct source_ops src;        /* registered by main */
	struct policy_ops pol;
	struct acquirer *acq;
	struct applier *app;
	/* Appliers a reload replaced while a mover worker's cpuset.mems
	 * write still used them: freed with the engine. */
	struct applier **old_app;
	unsigned nold_app;
	const struct vmplugin *vmp; /* the libvirt module, NULL until loaded */
	struct vmsrc *vm;       /* libvirt VM source, NULL if disabled */
	struct vmapply *va;     /* its actuator */
	struct declog *dl;
	struct history *hist;         /* per-guest history, readable from any thread */
	struct gpolstore *gs;    /* per-guest overrides (not owned), NULL: none */
	uint64_t watchdog_usec;       /* WatchdogSec= as systemd passed it, 0: none */
	/* engine_run's reload callback (SIGHUP, engine_reload). */
	engine_reload_fn reload;
	void *reload_ctx;
	/* The counters GET /v1/status shows (engine_view.c publishes them):
	 * each counted where it happens, by the file that makes it happen
	 * (engine_record.c's count functions for outcomes, the cycle its
	 * timings and the host's facts, the watch its cycles, engine.c the
	 * libvirt source's state at set-up). */
	struct engine_stats stats;

	/* The parts, each its file's. */
	struct engine_conf conf;      /* engine_conf.c */
	struct engine_viewst pub;     /* engine_view.c */
	struct engine_state st;       /* engine_state.c */
	struct engine_jobs jobs;      /* engine_jobs.c */
	struct engine_binds binds;    /* engine_bind.c */
	struct engine_placest place;  /* engine_place.c */
	struct engine_cyclest cyc;    /* engine_cycle.c */
	struct engine_watchst watch;  /* engine_watch.c */
	struct engine_loopst loop;    /* engine_loop.c */
};

#endif
