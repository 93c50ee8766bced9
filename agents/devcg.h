/* devcg.h — a container's devices from the cgroup v1 devices controller,
 * for the container scan (agents/cgscan.c) where the kubelet's checkpoint
 * names none.
 *
 * devices.list holds the rules the container's runtime wrote, one a line:
 * "TYPE MAJ:MIN ACCESS" (TYPE a, b or c; MAJ and MIN a number or "*";
 * ACCESS of r, w, m). Each char or block device it may read or write is
 * looked up in sysfs, under the injectable root: /sys/dev/char/MAJ:MIN
 * (or /sys/dev/block/...) and its "device" link, up to the nearest
 * ancestor with a numa_node (a PCI function), as devnode.c does for vDPA.
 * Left out: what every container gets (null, zero, full, random, urandom,
 * tty, console, ptmx, the pts, tun), rules that give only mknod (m), and
 * devices with no bus device behind them (virtual ones). "a *:* rwm" —
 * or a wildcard major with read or write — is every device: "all", on no
 * one node. A wildcard minor of another major is every device of that
 * major sysfs lists.
 *
 * On cgroup v2 the rules are a BPF program attached to the cgroup, which
 * the agent cannot read back: nothing is known there (numaorchd(8)).
 *
 * Acquisition is a hot path: the scan reads a guest's devices.list when
 * it first sees it and then every DEVCG_REREAD_NS (the first re-read of
 * guests first seen together spread over half of that), and the sysfs
 * look-ups of a list's text are made once, cached by the text (the
 * containers of one runtime mostly share the same list).
 */
#ifndef NUMAORCH_DEVCG_H
#define NUMAORCH_DEVCG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/base/mask.h"

/* A guest's devices.list is read again after this long: the rules are set
 * when a container is made and seldom changed after. */
#define DEVCG_REREAD_NS (30LL * 1000000000LL)
/* Distinct lists whose meaning is kept (least recently used goes). */
#define DEVCG_CACHE_MAX 64
/* Devices of one wildcard minor looked up, at most. */
#define DEVCG_WILD_MAX 256

/* What a devices.list means. */
struct devcg_res {
	unsigned nr;      /* devices beyond every container's, with a bus device */
	nodemask_t nodes; /* the nodes of those that sit on one */
	bool all;         /* it may use every device: no one node is its */
};

struct devcg_cache;

/* An empty cache of list meanings for the host whose sysfs HP names
 * (copied). */
struct devcg_cache *devcg_cache_new(const struct host_paths *hp);
void devcg_cache_free(struct devcg_cache *c);

/* The meaning of devices.list text TEXT into *OUT: from the cache when
 * the same text was seen, else parsed and looked up in sysfs and kept.
 * 0, or -EINVAL for a line that is not a rule (nothing is kept). */
int devcg_resolve(struct devcg_cache *c, const char *text, struct devcg_res *out);

/* The same, uncached (for tests and the cache itself). */
int devcg_parse(const struct host_paths *hp, const char *text, struct devcg_res *out);

/* Look-ups the cache made in sysfs since it was made (tests: a list seen
 * again costs none). */
unsigned devcg_cache_lookups(const struct devcg_cache *c);

#endif
