/* conflict.h — another placer rewriting a cpuset the agent wrote: the
 * kubelet's CPU Manager reconciles every container's cpuset.cpus back to
 * what it decided, and fighting it would move the guest every cycle.
 * The engine notes each cpuset.cpus it wrote (a move carried out, a
 * new container's start placement as much as a rebalancing move); on
 * each snapshot a guest whose CPUs are no longer those, the agent not
 * having written since, was rewritten by someone else: a conflict, said
 * once and held from further moves (HOLD_CONFLICT) until its CPUs change
 * again, the guest goes, or the agent restarts (the table is in memory
 * only). Pure: no I/O, no clock.
 */
#ifndef NUMAORCH_CONFLICT_H
#define NUMAORCH_CONFLICT_H

#include <stdbool.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

/* What the agent wrote into one guest's cpuset, and what it found there
 * since. */
struct conflict_entry {
	char id[GUEST_ID_MAX];
	cpumask_t wrote_cpus;
	nodemask_t wrote_mems;
	bool conflict;        /* rewritten by another placer: held */
	cpumask_t found_cpus; /* with conflict: the CPUs found instead */
	nodemask_t found_mems;
};

struct conflict_table {
	struct conflict_entry *e;
	unsigned n, cap;
};

enum conflict_state {
	CONFLICT_NONE = 0, /* not rewritten (or not written by the agent) */
	CONFLICT_NEW,      /* rewritten since the agent's write: say it, once */
	CONFLICT_HELD,     /* the rewrite already said, still in place: held */
};

/* The agent wrote CPUS (and MEMS) into guest ID's cpuset: the cpuset to
 * expect from now on (any earlier conflict of the guest is over). */
void conflict_note_write(struct conflict_table *t, const char *id, const cpumask_t *cpus, const nodemask_t *mems);
/* Whether G (in a snapshot taken after every write noted) was rewritten
 * by someone else: CONFLICT_NEW the first time its CPUs are found other
 * than written, CONFLICT_HELD while they stay as then found; once they
 * change again the guest is forgotten (CONFLICT_NONE: free to be moved,
 * its next move noted anew). G's CPUs unknown (NULL): CONFLICT_NONE. */
enum conflict_state conflict_check(struct conflict_table *t, const struct snap_guest *g);
/* Forget guest ID: its write failed (its CPUs may have been restored),
 * it started anew under the same id, or whoever rewrote it is no placer
 * the agent yields to. */
void conflict_forget(struct conflict_table *t, const char *id);
/* Forget the guests SNAP no longer has. */
void conflict_prune(struct conflict_table *t, const struct snapshot *snap);
const struct conflict_entry *conflict_find(const struct conflict_table *t, const char *id);
/* Who rewrote G's cpuset: "kubelet" for a Kubernetes pod's container
 * (its runtime kubernetes, or a pod name), else "unknown". */
const char *conflict_placer(const struct snap_guest *g);
void conflict_table_clear(struct conflict_table *t);

#endif
