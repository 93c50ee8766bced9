/* cgwatch.h — notices, between the engine's full scans, that the guests
 * under the watched cgroup directories changed, and prompts a cycle.
 *
 * A thread holds an inotify watch on every directory under the container
 * source's scopes in the cpuset hierarchy (a new directory is watched as
 * it appears; a scope that does not exist yet is waited for on its
 * nearest existing ancestor, which only new directories wake; so is one
 * whose removal inotify reports. cgroup v1's cgroupfs sends a removed
 * directory no IN_IGNORED, only its parent an IN_DELETE: a directory
 * removed inside a scope is forgotten (watch removed) on that IN_DELETE;
 * a removed scope whose parent is not watched is found again at reload).
 * A directory created or removed, a process attached
 * (cgroup.procs, tasks) or a cpuset rewritten by someone (cpuset.cpus,
 * cpuset.mems) calls PROMPT, which must be cheap and thread-safe
 * (engine_trigger: requests coalesce into one cycle, at most one a
 * second). The full scan stays the truth; the watcher only says "look
 * now" — so a lost event (a full queue, a watch limit) costs latency, not
 * correctness: the interval still comes.
 *
 * The agent's own cpuset writes prompt one more cycle too, which finds
 * the guest settled (cool-down) and writes nothing: it does not loop.
 */
#ifndef NUMAORCH_CGWATCH_H
#define NUMAORCH_CGWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cgscan.h"
#include "../orchestrator/base/cghier.h"

typedef void (*cgwatch_prompt_fn)(void *ctx);

struct cgwatch;

/* Watch the subtrees of CFG's scopes (and configured parents) in H's
 * cpuset hierarchy; MAX_WATCHES caps the directories watched (0: 65536),
 * past it new directories are left to the interval (logged once).
 * -ENODEV without a cpuset hierarchy, -errno of inotify_init1 or
 * pthread_create. */
int cgwatch_start(const struct cg_hier *h, const struct cgscan_config *cfg, unsigned max_watches,
		  cgwatch_prompt_fn prompt, void *ctx, struct cgwatch **out);
/* Stop the thread, close the watches. NULL is fine. */
void cgwatch_stop(struct cgwatch *w);

struct cgwatch_stats {
	unsigned watches;        /* directories watched now */
	uint64_t prompts;        /* events that prompted a cycle */
	uint64_t overflows;      /* queue overflows (then the tree is walked again) */
	bool limited;            /* MAX_WATCHES was reached */
};
void cgwatch_get_stats(struct cgwatch *w, struct cgwatch_stats *out);

/* Pure: does an inotify event of MASK on NAME (in a watched directory)
 * say the guests may have changed? */
bool cgwatch_event_prompts(uint32_t mask, const char *name);

#endif
