/* cgwrite.h — the one place cgroup files are written.
 *
 * On the live host cpuset writes go through libcgroup (cgroup_modify_cgroup
 * on a one-value struct cgroup, so the order of writes stays ours); the
 * freeze switch is written directly (see cgw_write). Against a
 * fixture tree (--root) they go to plain files under that tree, because
 * libcgroup only knows the mounts of the running system (cgwfixture.h:
 * the test build's version of that writer can refuse and record writes).
 *
 * Every write is checked against the scopes first: a cgroup outside them
 * is refused with -EPERM before anything is opened (the agent never
 * touches a cgroup outside its configured scope).
 */
#ifndef NUMAORCH_CGWRITE_H
#define NUMAORCH_CGWRITE_H

#include <stdbool.h>
#include <sys/types.h>

#include "orchestrator/base/cghier.h"

struct cgw;

/* SCOPES as in cgscan_config (NULL/0 = "/"). Copies them. LIVE selects
 * libcgroup; libcgroup is initialised here (-ENODEV if it finds no
 * cgroup mounts). */
int cgw_new(const struct cg_hier *h, bool live, unsigned nr_scopes, char *const *scopes,
	    struct cgw **out);
void cgw_free(struct cgw *w);

/* Write VALUE to FILE of cgroup REL in controller C's hierarchy.
 * Returns 0 or the kernel's negative errno (-EBUSY, -EINVAL, -ENOSPC,
 * -EACCES, ...); -ENOENT if the cgroup is gone; -EPERM if REL is outside
 * the scopes; -EINVAL for an invalid REL. */
int cgw_write(struct cgw *w, enum cg_ctrl c, const char *rel, const char *file, const char *value);

/* Live cpuset writes made on the calling thread from now until it calls
 * this again with false are made in a writer process (cgw_write_file_in_child).
 * A mover worker sets it around the cpuset.mems write it runs. */
void cgw_child_writes(bool on);

/* Write VALUE to the file PATH in a short-lived child process, which
 * opens, writes and exits with the errno, and wait for it. A cpuset.mems
 * write migrates the guest's pages inside the kernel for as long as they
 * take and nothing interrupts it, and a process does not end while one of
 * its threads is in such a write: made by a child, it leaves the agent
 * free to exit, the child finishing the kernel's write on its own. The
 * child keeps no descriptor of the agent's (it may outlive it). Returns 0,
 * the write's negative errno, -EINTR if the child was killed. *PID (may
 * be NULL): the child's, once started. */
int cgw_write_file_in_child(const char *path, const char *value, pid_t *pid);

/* Number of writes performed (tests check that dry runs write nothing). */
unsigned long cgw_write_count(const struct cgw *w);

/* true if REL is inside the scopes. */
bool cgw_in_scope(const struct cgw *w, const char *rel);

#endif
