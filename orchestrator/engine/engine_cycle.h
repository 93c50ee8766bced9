/* engine_cycle.h — one cycle (engine_cycle.c; engine_cycle in engine.h):
 * acquire, decide, apply, record. Calls engine_place.c, engine_jobs.c,
 * engine_bind.c, engine_watch.c (a cycle begins), engine_record.c,
 * engine_view.c, engine_state.c and engine_conf.c. */
#ifndef NUMAORCH_ENGINE_CYCLE_H
#define NUMAORCH_ENGINE_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/log.h"
#include "orchestrator/model/conflict.h"
#include "orchestrator/store/logged.h"

struct engine;

/* (engine_cyclest.spread_cycles) Two cycles a second apart: the second
 * measures where the scheduler put the threads over a 1 s window (the
 * watch's own), about 2 s after the move. */
#define ENGINE_SPREAD_CYCLE_S 1.0
#define ENGINE_SPREAD_CYCLES 2

/* What a cycle leaves for the next. Written by engine_cycle.c alone;
 * LAST_END_NS read by engine_loop.c (it spaces triggered cycles). */
struct engine_cyclest {
	bool first_sight;      /* the last plan decided a guest "next cycle" */
	/* The last plan held a move for a migrating write in flight
	 * (HOLD_MIGRATING_WRITE): read by engine_loop.c, which runs a cycle
	 * as soon as the last such write has been taken. */
	bool deferred;
	/* Cycles still to come ENGINE_SPREAD_CYCLE_S apart after one that
	 * moved a busy guest onto CPUs of several nodes: where its threads
	 * run there is measured from its threads' ticks at two scans of it
	 * spread (cgthr.c; the first takes them, the second measures), and
	 * until then neither a cycle nor the watch (agents/drift.h) sees
	 * them land away from its memory. */
	unsigned spread_cycles;
	struct logged_table logged;   /* last recorded per guest (dedup) */
	bool warned_one_node;
	struct log_repeat *warn_rep;   /* the snapshots' warnings, logged once */
	int64_t last_end_ns;   /* CLOCK_MONOTONIC of the last cycle's end, 0: none */
	/* The cpusets the cycle's moves wrote, and those another placer
	 * rewrote since (conflict.h): in memory, so a restart forgets. */
	struct conflict_table conflicts;
	/* The snapshot each guest's kernel flow is measured against
	 * (kflow_fill): the first cycle's, then the one that ended the last
	 * window of KFLOW_MIN_WINDOW_S or more. NULL before the first. */
	const struct snapshot *prev_snap;
	bool prev_spent;     /* this cycle's snapshot replaces it */
};

void engine_cyclest_free(struct engine_cyclest *cs);
/* Seconds until the next scheduled cycle: the interval, or
 * ENGINE_BIND_CYCLE_S while a start placement's binding waits release,
 * or ENGINE_TRIGGER_GAP_S after a plan that left a guest seen for the
 * first time to the next cycle (SKIP_NO_USAGE), or ENGINE_SPREAD_CYCLE_S
 * after a cycle that moved a busy guest onto several nodes
 * (spread_cycles). */
double engine_next_cycle_s(const struct engine *e);

#endif
