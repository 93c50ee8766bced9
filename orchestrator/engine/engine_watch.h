/* engine_watch.h — the watch between cycles (engine_watch.c): a pass
 * when one is due (the source op `drift`), which says when to arm a
 * cycle instead of arming it. Calls engine_view.c (the last snapshot). */
#ifndef NUMAORCH_ENGINE_WATCH_H
#define NUMAORCH_ENGINE_WATCH_H

#include <stdbool.h>
#include <stdint.h>

struct engine;

/* The least time between two cycles the watch prompts. */
#define ENGINE_WATCH_GAP_S 5.0

/* Its next pass, the last cycle it prompted, and whether that cycle is
 * still to run. Written by engine_watch.c alone. */
struct engine_watchst {
	int64_t next_ns, cycle_ns;
	bool pending;
};

/* A pass when one is due; TIMER_FD: the loop's cycle timer (read only:
 * a cycle about to come needs no prompt). Returns in how many seconds a
 * cycle should run (the caller arms it), or NAN: none asked. */
double engine_watch_pass(struct engine *e, int timer_fd);
/* The loop's poll timeout TIMEOUT_MS, shortened to the next pass. */
int engine_watch_timeout_ms(const struct engine *e, int timeout_ms);
/* A cycle begins (engine_cycle.c): the one a pass prompted, if any, is
 * running. */
void engine_watch_cycle_began(struct engine *e);

#endif
