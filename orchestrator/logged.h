/* logged.h — what was last written to the decision log for each guest, so
 * that a guard that keeps saying the same thing (a skip, or advise mode's
 * same planned move) is recorded once, not every cycle. Pure.
 */
#ifndef NUMAORCH_LOGGED_H
#define NUMAORCH_LOGGED_H

#include <stdbool.h>

#include "mask.h"
#include "plan.h"
#include "snapshot.h"

struct logged {
	char id[GUEST_ID_MAX];
	enum plan_kind kind;
	enum skip_reason skip;
	enum move_reason reason;
	nodemask_t to_nodes, to_mems;  /* PLAN_MOVE: where it was to go */
	/* When its last planned (not carried out) move was recorded, 0:
	 * none. Kept while it is within the hold even if the guest is
	 * settled in between (then kind is PLAN_SETTLED). */
	int64_t moved_ns;
};

struct logged_table {
	unsigned n;
	struct logged *e;              /* sorted by id */
};

void logged_table_clear(struct logged_table *t);
const struct logged *logged_find(const struct logged_table *t, const char *id);
/* Rebuild the table from PLAN, decided at NOW_NS: entries of guests
 * settled this cycle (no item, or PLAN_SETTLED) are dropped, so a guard
 * that fires again later is recorded again — but for a planned move
 * recorded less than HOLD_NS ago, which is kept. */
void logged_update(struct logged_table *t, const struct plan *plan, int64_t now_ns, int64_t hold_ns);
/* true: IT says what was last recorded for its guest, and need not be
 * recorded again. A skip repeats with the same skip reason and move
 * reason. A move (not carried out: advise mode, dry runs) repeats with
 * the same reason and the same target, and whatever its target or
 * reason while a planned move of the guest was recorded less than
 * HOLD_NS (the cool-down) before NOW_NS: had it been carried out, the
 * guest would now be in its cool-down and not moved again; without
 * this, a planned target that flaps with load jitter was recorded
 * nearly every cycle (dry run on the bench fixture). EXPLICIT (a
 * requested dry run, --once) always records. */
bool logged_repeats(const struct logged_table *t, const struct plan_item *it, bool explicit, int64_t now_ns,
		    int64_t hold_ns);

#endif
