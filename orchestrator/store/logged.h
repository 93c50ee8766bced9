/* logged.h — what was last written to the decision log for each guest, so
 * that a guard that keeps saying the same thing (a skip, or advise mode's
 * same planned move) is recorded once, not every cycle. Pure.
 */
#ifndef NUMAORCH_LOGGED_H
#define NUMAORCH_LOGGED_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/plan.h"
#include "orchestrator/model/snapshot.h"

struct logged {
	char id[GUEST_ID_MAX];
	/* The last skip recorded (has_skip): its reasons. Forgotten when
	 * the guest is settled. */
	bool has_skip;
	enum skip_reason skip;
	enum move_reason skip_move_reason;
	/* Every skip (skip reason, move reason) recorded since skips_ns,
	 * while within the hold: two that alternate with the load's jitter
	 * (max_moves, then no_fit, …) are each recorded once. */
	uint64_t skips[2];
	int64_t skips_ns;
	/* The last planned (not carried out) move recorded (moved_ns != 0):
	 * its reason, target and time. Kept while within the hold, even
	 * when the guest is settled in between. */
	enum move_reason reason;
	nodemask_t to_nodes, to_mems;
	int64_t moved_ns;
};

struct logged_table {
	unsigned n;
	struct logged *e;              /* sorted by id */
};

void logged_table_clear(struct logged_table *t);
const struct logged *logged_find(const struct logged_table *t, const char *id);
/* Rebuild the table from PLAN, decided at NOW_NS, whose records were
 * just written as logged_repeats() said: each guest's last recorded skip
 * and last recorded planned move. A guest settled this cycle (no item,
 * or PLAN_SETTLED) forgets its skip, so a guard that fires again later
 * is recorded again; its planned move is kept while within HOLD_NS. */
void logged_update(struct logged_table *t, const struct plan *plan, int64_t now_ns, int64_t hold_ns);
/* true: IT says what was last recorded for its guest, and need not be
 * recorded again. A skip repeats the last recorded skip with the same
 * skip reason and move reason (a planned move in between does not make
 * it news: a guest the move budget holds back every other cycle is
 * recorded once), or any skip with the same reasons recorded within the
 * hold since the first skip recorded in it. A move (not carried out: advise mode, dry runs)
 * repeats the last recorded one with the same reason and target, and
 * whatever its target or reason while that was recorded less than
 * HOLD_NS (the cool-down) before NOW_NS: had it been carried out, the
 * guest would now be in its cool-down and not moved again; without this,
 * a planned target that flaps with load jitter would be recorded nearly
 * every cycle. EXPLICIT (a requested dry run,
 * --once) always records moves. */
bool logged_repeats(const struct logged_table *t, const struct plan_item *it, bool explicit, int64_t now_ns,
		    int64_t hold_ns);

#endif
