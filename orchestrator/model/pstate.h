/* pstate.h — what the policy remembers between cycles, per guest: when it
 * was last moved and how long that holds it (its cool-down). A record of what happened: the engine
 * owns it, hands it to the policy as the previous state, takes the next
 * state back (the previous entries of the guests still there), and notes
 * in it the moves it carried out (plan_item_note_cooldown). Pure: an array
 * sorted by id.
 */
#ifndef NUMAORCH_PSTATE_H
#define NUMAORCH_PSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/model/snapshot.h"

struct pstate_entry {
	char id[GUEST_ID_MAX];
	int64_t last_move_ns;     /* snapshot mono_ns of its last move */
	unsigned nr_moves;
	/* Its last move was only its memory following its threads inside a
	 * multi-node pin, the cpuset unchanged (plan_item.follow). The
	 * cool-down lets the first such pull after a move through, not a
	 * second one (policies/consolidate.c decide_pinned). */
	bool last_follow;
	/* How long its last move holds it still (plan_item.cooldown_ns,
	 * sized by the move's cost under cooldown = auto); 0: not known
	 * (policy_guest_cooldown). */
	int64_t cooldown_ns;
};

struct pstate {
	unsigned n;
	struct pstate_entry *e;
};

struct pstate *pstate_new(void);
void pstate_free(struct pstate *s);
const struct pstate_entry *pstate_find(const struct pstate *s, const char *id);
struct pstate *pstate_clone(const struct pstate *s);
/* Record that guest ID was moved at NOW (used by the engine when a planned
 * move was actually applied, and by tests). Keeps the array sorted. */
void pstate_note_move(struct pstate *s, const char *id, int64_t now_ns);
/* The same for a move that was only memory following its threads inside
 * its pin (last_follow set; pstate_note_move clears it). */
void pstate_note_follow(struct pstate *s, const char *id, int64_t now_ns);
/* Set the length of guest ID's cool-down (after one of the two above;
 * nothing if ID has no entry). */
void pstate_note_cooldown(struct pstate *s, const char *id, int64_t cooldown_ns);

#endif
