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
};

struct logged_table {
	unsigned n;
	struct logged *e;              /* sorted by id */
};

void logged_table_clear(struct logged_table *t);
const struct logged *logged_find(const struct logged_table *t, const char *id);
/* Rebuild the table from PLAN: entries of guests settled this cycle (no
 * item, or PLAN_SETTLED) are dropped, so a guard that fires again later
 * is recorded again. */
void logged_update(struct logged_table *t, const struct plan *plan);
/* true: IT says what was last recorded for its guest, and need not be
 * recorded again. A skip repeats with the same skip reason and move
 * reason; a move (not carried out: advise mode, dry runs) with the same
 * reason and the same target. EXPLICIT (a requested dry run, --once)
 * always records. */
bool logged_repeats(const struct logged_table *t, const struct plan_item *it, bool explicit);

#endif
