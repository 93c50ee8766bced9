/* engine_view.c — the view readers see: published after every cycle
 * (engine_publish) and again with new settings (engine_republish), taken
 * by any thread (engine_view_get), freed with its last reference. */
#include "orchestrator/engine/engine.h"

#include <stdio.h>
#include <stdlib.h>

#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/notify.h"
#include "orchestrator/base/xalloc.h"

void engine_viewst_init(struct engine_viewst *v)
{
	pthread_mutex_init(&v->lock, NULL);
}

void engine_viewst_free(struct engine_viewst *v)
{
	engine_view_unref(v->cur);
	pthread_mutex_destroy(&v->lock);
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

	pthread_mutex_lock(&e->pub.lock);
	v = e->pub.cur;
	if (v)
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->pub.lock);
	return v;
}

static void view_settings(struct engine *e, struct engine_view *v, bool mover_on)
{
	v->mode = e->conf.cfg.mode;
	v->dry_run = e->conf.cfg.dry_run;
	v->interval_s = e->conf.cfg.interval_s;
	/* the auto budgets as the last decision sized them */
	policy_resolve(&e->conf.cfg.policy, &v->policy);
	v->mover_rate_mibs = e->conf.cfg.policy.in.rate_mibs;
	v->rate_mib = mover_on ? e->conf.cfg.mover_rate_mib : 0;
	v->base_mode = e->conf.base.mode;
	v->base_interval_s = e->conf.base.interval_s;
	v->base_policy = e->conf.base.policy;
	sched_clear(&v->schedule);
	sched_copy(&v->schedule, &e->conf.base.schedule);
	v->schedule_active = e->conf.sched_active;
}

void engine_republish(struct engine *e, bool mover_on)
{
	struct engine_view *v, *old;

	pthread_mutex_lock(&e->pub.lock);
	old = e->pub.cur;
	if (!old) {
		pthread_mutex_unlock(&e->pub.lock);
		return;
	}
	v = xcalloc(1, sizeof(*v));
	v->refs = 1;
	v->snap = snap_ref(old->snap);
	v->plan = old->plan;
	v->plan_owner = old->plan_owner ? old->plan_owner : old;
	__atomic_add_fetch(&v->plan_owner->refs, 1, __ATOMIC_RELAXED);
	v->stats = old->stats;
	view_settings(e, v, mover_on);
	e->pub.cur = v;
	pthread_mutex_unlock(&e->pub.lock);
	engine_view_unref(old);
}

void engine_publish(struct engine *e, const struct snapshot *snap, struct plan *plan, bool mover_on)
{
	struct engine_view *v = xcalloc(1, sizeof(*v)), *old;

	v->refs = 1;
	v->snap = snap_ref(snap);
	v->plan = plan;
	v->stats = e->stats;
	view_settings(e, v, mover_on);
	pthread_mutex_lock(&e->pub.lock);
	old = e->pub.cur;
	e->pub.cur = v;
	pthread_mutex_unlock(&e->pub.lock);
	engine_view_unref(old);

	/* The service manager's view: ready once there is a snapshot to
	 * serve, and a one-line summary after every cycle. */
	{
		char status[200];

		snprintf(status, sizeof(status), "%s: %u guests on %u NUMA nodes; cycle %llu, %llu moves so far",
			 agent_mode_name(e->conf.cfg.mode), snap->nr_guests, snap->nr_nodes,
			 (unsigned long long)e->stats.cycles, (unsigned long long)e->stats.moves);
		if (!e->pub.notified_ready) {
			notify_ready(status);
			e->pub.notified_ready = true;
		} else {
			notify_status("%s", status);
		}
	}
}
