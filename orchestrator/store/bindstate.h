/* bindstate.h — the start bindings that must not outlive the agent, as
 * JSON under the state directory.
 *
 * A start placement binds a young container's cpuset.mems to its target
 * node until its memory stops growing (engine_bind.c, struct ebound). If
 * the agent stops while a guest is bound, nothing else would ever widen
 * it: the guest stays strict on one node and fails allocations or is
 * OOM-killed when that node fills. So the engine writes the bound set
 * (guest id, cgroup, mems before, mems bound, when) here whenever it
 * changes — before the binding write, so that a kill between the two
 * leaves no binding unrecorded — and reads it back at start
 * (engine_use_state_dir). Times on disk are CLOCK_REALTIME ns. Pure.
 */
#ifndef NUMAORCH_BINDSTATE_H
#define NUMAORCH_BINDSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

#define BINDSTATE_FILE "start-bindings.json"

struct bindstate_entry {
	char id[GUEST_ID_MAX];
	char *cgroup;          /* relative to the hierarchy roots, "/..." */
	nodemask_t wide;       /* its mems before the binding */
	nodemask_t bound;      /* the mems it was bound to */
	int64_t since_real_ns; /* CLOCK_REALTIME of the binding */
};

struct bindstate {
	unsigned n;
	struct bindstate_entry *e;
};

/* The N entries E as JSON text (caller frees), NULL without memory. */
char *bindstate_format(const struct bindstate_entry *e, unsigned n);
/* Parse TEXT (LEN bytes) into OUT (bindstate_clear). A file that is not
 * the format at all is -EINVAL with ERR saying why, and OUT empty; an
 * entry that is bad (no guest, a cgroup that is not an absolute path
 * without "." or ".." components, mems that are not a non-empty node
 * list) is left out, and
 * *NBAD counts it, with ERR saying what the first one was. Returns 0 or
 * -EINVAL. */
int bindstate_parse(const char *text, size_t len, struct bindstate *out, unsigned *nbad, char *err,
		    size_t errsz);
void bindstate_clear(struct bindstate *b);

#endif
