/* hostpaths.h — the filesystem roots every reader of the host goes
 * through, so tests can point the agent at a fixture tree (STYLE.md §3).
 */
#ifndef NUMAORCH_HOSTPATHS_H
#define NUMAORCH_HOSTPATHS_H

#include <limits.h>
#include <stdbool.h>

struct host_paths {
	char sysfs[PATH_MAX];    /* "/sys" */
	char procfs[PATH_MAX];   /* "/proc" */
	char cgroupfs[PATH_MAX]; /* "/sys/fs/cgroup" */
	char rundir[PATH_MAX];   /* "/run": runtimes' state (runc state.json) */
	char vardir[PATH_MAX];   /* "/var": runtimes' names (docker, podman, pod logs) */
	/* true when these are the running host's own trees; false for a
	 * fixture root given with --root (then nothing live is touched:
	 * libcgroup and libnuma are not used, writes go to plain files). */
	bool live;
};

/* The running host's paths. */
void host_paths_default(struct host_paths *hp);
/* Paths under a fixture root: ROOT/sys, ROOT/proc, ROOT/sys/fs/cgroup,
 * ROOT/run, ROOT/var. Returns -ENOENT if ROOT is not a directory, -ENAMETOOLONG. */
int host_paths_from_root(struct host_paths *hp, const char *root);

#endif
