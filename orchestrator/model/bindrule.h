/* bindrule.h — when a start binding ends: a young container's mems bound
 * to its target by its start placement (plan_item.bind_start) are
 * released once it has first-touched what it will. A pure rule over the
 * binding's facts at one look; the engine keeps the bindings and makes
 * the release write (engine_bind.c). No I/O, no clock.
 */
#ifndef NUMAORCH_BINDRULE_H
#define NUMAORCH_BINDRULE_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

/* The longest a start binding lasts. */
#define BIND_MAX_S 60.0
/* A bound guest whose memory has not grown at all by then is released:
 * it is not about to touch much (an idle container), and bindings keep
 * cycles short. */
#define BIND_START_S 10.0

/* One binding at one look. */
struct bind_facts {
	uint64_t mem_now;   /* the guest's memory now */
	uint64_t mem_last;  /* at the last look (at the binding, the first time) */
	/* Its memory grew at an earlier look: it has begun its first
	 * touches, so a look without growth means they are done. */
	bool grew;
	double age_s;       /* since it was bound */
	/* A node it is bound to is below the free memory the policy keeps
	 * (bind_node_short): bound, it could not spill. */
	bool node_short;
};

/* The verdict of one look: WHY it is released, or NULL (kept); when kept,
 * the facts to carry to the next look (GREW, MEM). */
struct bind_verdict {
	const char *why;
	bool grew;
	uint64_t mem;
};

/* Growth below this between two looks is noise (page cache, a stack),
 * not first touches: 1 % of MEM_LAST, at least 2 MiB. */
uint64_t bind_slack(uint64_t mem_last);
/* Release when a node it is bound to runs short of room (the kernel would
 * reclaim and then OOM-kill inside the cpuset), after BIND_MAX_S, after
 * BIND_START_S without growing, or once its memory stopped growing after
 * growing at an earlier look. A guest that has not grown yet is still
 * starting (exec, set-up): released then, its first touches would go
 * unbound, wherever its own policy puts them. */
void bind_rule(const struct bind_facts *f, struct bind_verdict *out);
/* Is a node of MEMS with memory in SNAP below RESERVE(node) free, the
 * reserve as policy_reserve(MIN_FREE_BYTES, MIN_FREE_SHARE, its total)? */
bool bind_node_short(const struct snapshot *snap, const nodemask_t *mems, uint64_t min_free_bytes,
		     double min_free_share);

#endif
