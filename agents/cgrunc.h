/* cgrunc.h — containers that runc knows: its state directories
 * (<root>/<id>/state.json) name each container's cgroup, whatever its
 * cgroupsPath said. containerd runs runc with one root per namespace
 * (<root>/<namespace>/<id>/state.json, /run/containerd/runc by default):
 * its containers are named by those, runtime "containerd". Loaded once
 * per scan; the walk asks it by cgroup.
 */
#ifndef NUMAORCH_CGRUNC_H
#define NUMAORCH_CGRUNC_H

#include <stdbool.h>

#include "../orchestrator/model/snapshot.h"

struct cgrunc_ent {
	char *rel;                /* its cgroup, relative to the cpuset root */
	char id[128];             /* runc's id (cgname_copy'd) */
	char runtime[GUEST_RUNTIME_MAX]; /* "runc" or "containerd" */
	char ns[64];              /* containerd's namespace, "" for runc's */
};

struct cgrunc {
	struct cgrunc_ent *e;     /* sorted by rel */
	unsigned n;
};

/* Read every container of the runc state roots ROOTS (NR; absolute, as
 * this process sees them), and of every namespace's root below the
 * containerd roots NS_ROOTS (NNS), whose cpuset cgroup lies under
 * CPUSET_HOST (the cpuset root as the host names it: state.json records
 * host paths; V2: the unified tree). Replaces what R held. A present but
 * broken state file adds a snap_warn() to SNAP; an absent root is
 * nothing. */
void cgrunc_load(struct cgrunc *r, char *const *roots, unsigned nr, char *const *ns_roots, unsigned nns,
		 const char *cpuset_host, bool v2, struct snapshot *snap);

/* The container whose cgroup is REL, NULL if none. */
const struct cgrunc_ent *cgrunc_find(const struct cgrunc *r, const char *rel);

/* Frees R's entries (not R); R is empty after. */
void cgrunc_clear(struct cgrunc *r);

#endif
