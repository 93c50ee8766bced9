/* cghier.h — where the cgroup controllers we use are mounted.
 *
 * Three layouts exist in the field: cgroup v2 only ("unified"), v1 only
 * ("legacy") and "hybrid" (v1 controllers with a controller-less v2 tree
 * at /sys/fs/cgroup/unified, as on this project's CI machine). Detection
 * probes the cgroupfs root rather than /proc/self/mounts so that a fixture
 * tree describes itself.
 *
 * A guest is named by its path relative to a hierarchy root ("/docker/ab"),
 * the same in every v1 hierarchy, as runtimes create it.
 */
#ifndef NUMAORCH_CGHIER_H
#define NUMAORCH_CGHIER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

enum cg_layout {
	CG_LAYOUT_NONE = 0,
	CG_LAYOUT_V1,
	CG_LAYOUT_V2,
	CG_LAYOUT_HYBRID,
};

enum cg_ctrl {
	CGC_CPUSET = 0,
	CGC_MEMORY,
	CGC_CPUACCT, /* v1 cpuacct.usage; v2 cpu.stat usage_usec */
	CGC_FREEZER,
	CGC_NR,
};

struct cg_hier {
	enum cg_layout layout;
	char root[PATH_MAX];          /* the cgroupfs root probed */
	char unified[PATH_MAX];       /* v2 tree, "" if none */
	char dir[CGC_NR][PATH_MAX];   /* hierarchy root per controller, "" if absent */
	bool v2[CGC_NR];              /* controller lives in the v2 tree */
};

/* Probe CGROUPFS. -ENOENT if it does not exist; a tree with no cpuset
 * controller anywhere succeeds with dir[CGC_CPUSET] = "" (the caller
 * decides whether that is fatal). */
int cgh_detect(const char *cgroupfs, struct cg_hier *out);

const char *cgh_layout_name(enum cg_layout l);
const char *cgh_ctrl_name(enum cg_ctrl c);
bool cgh_has(const struct cg_hier *h, enum cg_ctrl c);

/* Build DIR/REL[/FILE] for controller C. REL starts with '/' ("/" is the
 * root). Returns 0, -ENODEV if the controller is absent, -ENAMETOOLONG. */
int cgh_path(const struct cg_hier *h, enum cg_ctrl c, const char *rel,
	     const char *file, char *buf, size_t bufsz);

/* Read FILE of cgroup REL in controller C's hierarchy (up to 64 KiB),
 * trailing newlines and spaces cut. *OUT (caller frees) on success only;
 * a negative errno otherwise (-ENOENT: gone). */
int cgh_read_value(const struct cg_hier *h, enum cg_ctrl c, const char *rel, const char *file, char **out);

/* A cgroup path is acceptable if it is absolute, has no "." or ".."
 * components, no empty components and no control characters. */
bool cgh_rel_valid(const char *rel);

/* true if REL equals SCOPE or lies below it ("/a/b" is under "/a", "/ab"
 * is not). A scope of "/" contains everything. */
bool cgh_rel_under(const char *rel, const char *scope);

#endif
