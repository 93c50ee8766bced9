/* cgplan.h — which cgroup writes a container move makes, in which order,
 * and how they are undone: the pure half of the applier (apply.c decides
 * the values, cgjournal.c carries the steps out and reverts them).
 * No I/O here; unit-tested on tables (tests/unit/test_cgplan.c).
 *
 * A guest's cgroups are its subtree in pre-order: index 0 is the guest,
 * every cgroup comes before its descendants. The kernel's rules the
 * order serves: in v1 a child's cpus/mems must
 * lie within its parent's (a wider child is EACCES, a parent narrower than
 * a child EBUSY) and an empty set with tasks attached is ENOSPC, so a set
 * is widened first (old ∪ new) on the guest and on every cgroup of its
 * subtree that has children, top-down, then narrowed from the deepest
 * cgroup up; in v2 the guest's write is all there is (descendants are
 * limited by the kernel), except for descendants that set their own value
 * (a runtime's container cgroup with its own cpuset.mems): those are
 * written as in v1, or their own value would keep their pages where they
 * are. No step ever writes an empty set.
 */
#ifndef NUMAORCH_CGPLAN_H
#define NUMAORCH_CGPLAN_H

#include <stdbool.h>

/* What a step's failure on a cgroup that went away means. */
enum cgplan_gone {
	CGPLAN_GONE_FAILS = 0,   /* the move fails (the guest itself) */
	CGPLAN_ENOENT_SKIPS,     /* -ENOENT: a descendant went away, nothing to write */
	CGPLAN_GONE_SKIPS,       /* -ENOENT/-ENODEV/-ESRCH: the same, for a setting */
};

struct cgplan_step {
	unsigned sub;            /* index into the guest's subtree */
	const char *file;        /* a static name: "cpuset.cpus", ... */
	const char *value;       /* the caller's string; never empty */
	enum cgplan_gone gone;
};

struct cgplan {
	unsigned n, cap;
	struct cgplan_step *s;
};

/* One write that was made, with what it replaced (the journal's entry). */
struct cgplan_done {
	unsigned sub;
	const char *file;
	char *old;               /* owned by the journal */
};

/* Frees P's steps (not P); P is empty and reusable after. */
void cgplan_clear(struct cgplan *p);

/* Append the writes that set FILE to NEWV over a subtree of NSUB cgroups
 * whose depths below the guest are DEPTH[] (pre-order; NULL: every
 * descendant a child of the guest): v2 the guest only; v1 the guest and,
 * in pre-order, every cgroup with children to UNIONV (old ∪ new: widen),
 * then every cgroup deepest-first to NEWV (narrow; a descendant gone is
 * skipped). Values are referenced, not copied. -EINVAL (nothing added)
 * if a value the plan would write is empty or NSUB is 0. */
int cgplan_add_set(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const char *file,
		   const char *unionv, const char *newv);
/* The same, where OWN[i] (NULL: none) says descendant i sets its own FILE
 * in v2: then the guest and those descendants are written in v1's order
 * (widen top-down to UNIONV, narrow deepest-first to NEWV), the others
 * left to inherit. v1 ignores OWN: every cgroup is written. */
int cgplan_add_set_own(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const bool *own,
		       const char *file, const char *unionv, const char *newv);

/* The same, where cgroup I of the subtree with NEWS[I] set (UNIONS[I]
 * with it; both arrays NULL, or neither) gets a value of its own: a
 * pod's container given its own part of the pod's target (plan_part).
 * Such a cgroup is written in v2 too. The order is the one above: the
 * guest widens first (to UNIONV), then in pre-order each cgroup with
 * children to its union (its own, which lies within its parent's), then
 * every written cgroup after all its descendants to its new value (its
 * own, within its parent's new one), so v1's rules hold at every step.
 * -EINVAL if a value to write is empty. */
int cgplan_add_set_each(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const bool *own,
			const char *file, const char *unionv, const char *newv, const char *const *unions,
			const char *const *news);

/* v1: pages follow a mems change only with cpuset.memory_migrate=1 on
 * every cgroup of the subtree (in pre-order). */
void cgplan_add_memory_migrate(struct cgplan *p, unsigned nsub);

/* The order in which to restore the N writes of DONE after a failure:
 * newest first (the forward order replayed backwards, which the kernel
 * accepts for the reason it accepted the forward one). In v1 an empty old
 * value is not written back (it would empty a set; a v1 cpuset that was
 * empty had no tasks to keep); in v2 empty means "inherit" and is
 * restored. Writes indices into DONE to ORDER (room for N); returns how
 * many. */
unsigned cgplan_revert_order(const struct cgplan_done *done, unsigned n, bool v2, unsigned *order);

#endif
