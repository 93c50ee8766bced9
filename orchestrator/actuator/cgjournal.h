/* cgjournal.h — carries out a cgroup write plan (cgplan.h) and undoes it:
 * the acting half of a container move (irqbalance's activate.c to
 * cgplan.c's placement.c).
 *
 * Every write goes through the cgroup writer (cgwrite.h: scopes, libcgroup)
 * after reading the value it replaces; a write of the value already there
 * is not made and not journaled. The journal keeps what each write
 * replaced so that a failed step, or a later phase of the same move, can
 * put everything back (cgj_revert).
 */
#ifndef NUMAORCH_CGJOURNAL_H
#define NUMAORCH_CGJOURNAL_H

#include "orchestrator/base/cghier.h"
#include "orchestrator/actuator/cgplan.h"
#include "orchestrator/actuator/cgwrite.h"

struct cgj {
	unsigned n, cap;
	struct cgplan_done *e;     /* the writes made, oldest first */
};

/* Frees the journal's entries (not J); J is empty after. */
void cgj_clear(struct cgj *j);

/* Carry out P's steps, in order, on the cgroups SUB (the guest's subtree,
 * pre-order) in the cpuset hierarchy of H through W. A step on a cgroup
 * gone is skipped as its gone rule says. Returns 0, or the failing step's
 * negative errno with *FAILED its index (the steps before it stay made,
 * in the journal). -EINVAL for a step with an empty value (nothing is
 * written: never an empty cpuset). */
int cgj_run(struct cgj *j, const struct cg_hier *h, struct cgw *w, char *const *sub, const struct cgplan *p,
	    unsigned *failed);

/* Write back what the journal's writes replaced, in cgplan_revert_order's
 * order; *WRITES counts the writes tried. The journal is kept (its size
 * is the move's forward writes). Returns 0 if everything was restored (a
 * cgroup gone is nothing to restore), else the last error (logged). */
int cgj_revert(const struct cgj *j, const struct cg_hier *h, struct cgw *w, char *const *sub,
	       unsigned *writes);

#endif
