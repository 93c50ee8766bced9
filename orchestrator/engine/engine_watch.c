/* engine_watch.c — the watch between cycles: every `[agent] watch`
 * seconds the sources read each guest's CPU counter (agents/drift.h); a
 * guest whose use has stepped away from what the last cycle decided on,
 * or (spread over nodes) whose threads now run away from its memory,
 * gets a cycle on a fresh, short window instead of waiting for the
 * interval. Runs on the engine thread, from its loop, which arms the
 * cycle a pass asks for (engine_watch, engine_loop.c). */
#include "orchestrator/engine/engine_int.h"

#include <math.h>
#include <stdlib.h>
#include <sys/timerfd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/xalloc.h"

/* Seconds until the engine's timer fires (its next cycle), or INFINITY. */
static double timer_left_s(int tfd)
{
	struct itimerspec cur;

	if (timerfd_gettime(tfd, &cur) < 0 || (cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0))
		return INFINITY;
	return (double)cur.it_value.tv_sec + (double)cur.it_value.tv_nsec / 1e9;
}

/* The guests of V's snapshot that its plan moved (indexed as the
 * snapshot's guests; NULL: none): their threads now run where the move
 * put them, which the snapshot does not know (agents/drift.h). Every
 * move the plan holds, applied or not: one not carried out (a dry run,
 * a guest gone) only waits for the next cycle's snapshot to be
 * watched. */
static bool *moved_after(const struct engine_view *v)
{
	bool *moved = NULL;

	if (!v->plan || v->plan->seq != v->snap->seq)
		return NULL;
	for (unsigned i = 0; i < v->plan->nr_items; i++) {
		const struct plan_item *it = &v->plan->items[i];

		if (it->kind != PLAN_MOVE || it->guest_idx >= v->snap->nr_guests)
			continue;
		if (!moved)
			moved = xcalloc(v->snap->nr_guests, sizeof(*moved));
		moved[it->guest_idx] = true;
	}
	return moved;
}

int engine_watch_timeout_ms(const struct engine *e, int timeout_ms)
{
	double left;

	if (!(e->conf.cfg.watch_s > 0) || !e->src.drift || !e->watch.next_ns)
		return timeout_ms;
	left = (double)(e->watch.next_ns - clock_mono_ns()) / 1e6;
	if (left < 1)
		return 1;
	return left < timeout_ms ? (int)ceil(left) : timeout_ms;
}

double engine_watch_pass(struct engine *e, int timer_fd)
{
	int64_t now = clock_mono_ns();
	struct engine_view *v;
	struct drift_report rep;
	double since;
	int r;

	if (!(e->conf.cfg.watch_s > 0) || !e->src.drift || !e->src.rewindow)
		return NAN;
	if (!e->watch.next_ns) {
		e->watch.next_ns = now + (int64_t)(e->conf.cfg.watch_s * 1e9);
		return NAN;
	}
	if (now < e->watch.next_ns)
		return NAN;
	e->watch.next_ns = now + (int64_t)(e->conf.cfg.watch_s * 1e9);
	/* A prompted cycle is on its way, or the interval's own comes
	 * before a prompted one could: nothing to add. */
	if (e->watch.pending || timer_left_s(timer_fd) <= e->conf.cfg.watch_s + e->conf.cfg.sample_s)
		return NAN;
	v = engine_view_get(e);
	if (!v)
		return NAN;
	if (v->snap) {
		bool *moved = moved_after(v);

		e->src.drift(e->acq, v->snap, moved, &rep);
		free(moved);
	} else {
		rep.stepped = rep.away = 0;
	}
	engine_view_unref(v);
	if (!rep.stepped && !rep.away)
		return NAN;
	/* A host whose guests keep changing gets a cycle every
	 * ENGINE_WATCH_GAP_S at most: the watch costs at most one cycle's
	 * scan twice (the fresh window's counters, then the snapshot) per
	 * gap, whatever the guests do. */
	since = e->watch.cycle_ns ? (double)(now - e->watch.cycle_ns) / 1e9 : INFINITY;
	if (since < ENGINE_WATCH_GAP_S) {
		if (rep.stepped)
			log_debug("watch: %u guest%s stepped (%s %.2f -> %.2f CPUs); the last prompted cycle was %.1f s ago",
				  rep.stepped, rep.stepped == 1 ? "" : "s", rep.first, rep.first_ref, rep.first_now, since);
		else
			log_debug("watch: %u guest%s away from their memory (%s locality %.2f -> %.2f where its threads "
				  "run); the last prompted cycle was %.1f s ago", rep.away, rep.away == 1 ? "" : "s",
				  rep.away_first, rep.away_ref, rep.away_now, since);
		return NAN;
	}
	r = e->src.rewindow(e->acq);
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "watch: cannot take fresh counters; the guests wait for the interval");
		return NAN;
	}
	if (rep.away)
		/* Where its threads run, not how much they run: a guest spread
		 * over nodes whose threads the scheduler moved away from its
		 * memory (agents/drift.h). */
		log_info("guest %s: its threads run away from its memory since the last cycle (locality %.2f -> %.2f "
			 "where they ran%s): a cycle on a fresh %.1f s window", rep.away_first, rep.away_ref,
			 rep.away_now, rep.away + rep.stepped > 1 ? ", and more guests changed" : "", e->conf.cfg.sample_s);
	else if (rep.stepped > 1)
		log_info("guest %s: CPU use %.2f -> %.2f since the last cycle (and %u more guests): a cycle on a "
			 "fresh %.1f s window", rep.first, rep.first_ref, rep.first_now, rep.stepped - 1, e->conf.cfg.sample_s);
	else
		log_info("guest %s: CPU use %.2f -> %.2f since the last cycle: a cycle on a fresh %.1f s window",
			 rep.first, rep.first_ref, rep.first_now, e->conf.cfg.sample_s);
	e->watch.pending = true;
	e->watch.cycle_ns = now;
	e->stats.watch_cycles++;
	return e->conf.cfg.sample_s;
}

void engine_watch_cycle_began(struct engine *e)
{
	e->watch.pending = false;
}
