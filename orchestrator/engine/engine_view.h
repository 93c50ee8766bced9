/* engine_view.h — the published view (engine_view.c): what readers on
 * other threads see of the last cycle (engine_view_get, engine.h), and
 * the service manager's status line. A leaf: calls no other engine file. */
#ifndef NUMAORCH_ENGINE_VIEW_H
#define NUMAORCH_ENGINE_VIEW_H

#include <pthread.h>
#include <stdbool.h>

struct engine;
struct engine_view;
struct plan;
struct snapshot;

/* Written by engine_view.c alone; read by no other file. */
struct engine_viewst {
	pthread_mutex_t lock;
	struct engine_view *cur;
	bool notified_ready;          /* READY=1 sent (after the first published cycle) */
};

void engine_viewst_init(struct engine_viewst *v);
void engine_viewst_free(struct engine_viewst *v);
/* Publish SNAP and PLAN (taken) with the engine's stats and the settings
 * in force (it reads e->stats and e->conf); MOVER_ON: the mover moves
 * pages (its rate is shown only then). */
void engine_publish(struct engine *e, const struct snapshot *snap, struct plan *plan, bool mover_on);
/* The last cycle's view again, with the settings now in force: readers
 * (GET /v1/policy, /v1/status) see a reload or a PUT at once, not after
 * the next cycle, which may be an interval away. */
void engine_republish(struct engine *e, bool mover_on);

#endif
