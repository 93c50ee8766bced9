/* source.h — what the core knows of the sources that read the host
 * (agents/: topology and load, the cgroup scan, the libvirt module): the
 * configuration of the container scan, the guest-source hook, and the
 * interface (struct source_ops) that agents/acquire.c implements and the
 * daemon's main registers with the engine. The engine and the applier
 * call the sources only through it.
 */
#ifndef NUMAORCH_SOURCE_H
#define NUMAORCH_SOURCE_H

#include <stdint.h>

#include "orchestrator/base/cghier.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/model/snapshot.h"

/* Which cgroups the container source considers (agents/cgscan.h). */
struct cgscan_config {
	/* Only guests at or under these cgroup paths are discovered (and so
	 * ever touched). NULL/0 means "/". */
	unsigned nr_scopes;
	char **scopes;
	/* Parent cgroups whose every child is a guest (runtime "custom"). */
	unsigned nr_parents;
	char **parents;
	/* runc state roots (absolute host paths, prefixed with the fixture
	 * root by the scanner when not live). Default: <rundir>/runc. */
	unsigned nr_runc_roots;
	char **runc_roots;
	/* containerd's runc roots: each holds one runc root per containerd
	 * namespace (<root>/<namespace>/<id>/state.json). Prefixed like
	 * runc_roots. Default: <rundir>/containerd/runc. */
	unsigned nr_containerd_roots;
	char **containerd_roots;
	/* dockerd's data root (its --data-root or "data-root"), where each
	 * container's config.v2.json gives its name (an absolute host path,
	 * prefixed like runc_roots). NULL: "data-root" in docker_config,
	 * else <vardir>/lib/docker. */
	char *docker_root;
	/* dockerd's configuration file (its --config-file), read for its
	 * "data-root" when docker_root is not set (an absolute host path,
	 * prefixed like runc_roots). NULL: /etc/docker/daemon.json. */
	char *docker_config;
	/* The kubelet's root, where its CPU and Memory Manager checkpoints
	 * are (an absolute host path, prefixed like runc_roots). NULL:
	 * <vardir>/lib/kubelet. */
	char *kubelet_root;
	/* The CPUs the kubelet reserves (its reservedSystemCPUs, a CPU
	 * list), left out of the shared pool its other pods may use; NULL:
	 * reservedSystemCPUs from the kubelet's config.yaml, if any. */
	char *kubelet_reserved;
};

/* A further guest source (the libvirt VM source). scan() appends guests
 * to SNAP (nodes are set) and returns 0 or a negative errno; a failing
 * source is reported as a snapshot warning, the others still count. */
struct guest_source {
	const char *name;
	int (*scan)(void *ctx, struct snapshot *snap, int64_t now_ns);
	void *ctx;
};

/* What a watch pass between cycles found (agents/drift.h): how many
 * guests' CPU counters it read, how many have stepped away from what the
 * last cycle decided on (two windows in a row, the same way), and the
 * first of them with its use then (REF) and now, in CPUs. */
struct drift_report {
	/* counters read; guests whose use stepped; threads read (of
	 * the guests watched for where their threads run) */
	unsigned read, stepped, threads;
	char first[GUEST_ID_MAX];
	double first_ref, first_now;
	/* Guests whose threads ran away from their memory (agents/drift.h):
	 * the first one's locality at the cycle and over the last window. */
	unsigned away;
	char away_first[GUEST_ID_MAX];
	double away_ref, away_now;
};

/* The host reader: topology, load and containers, plus the guest
 * sources added to it (agents/acquire.h documents each call). */
struct acquirer;

struct source_ops {
	int (*acquirer_new)(const struct host_paths *hp, const struct cgscan_config *cg,
			    struct acquirer **out);
	void (*acquirer_free)(struct acquirer *a);
	/* The acquirer does not own SRC->ctx. */
	void (*add_source)(struct acquirer *a, const struct guest_source *src);
	const struct cg_hier *(*hier)(const struct acquirer *a);
	/* A snapshot finalised with OV's policy overrides (OV may be NULL),
	 * one reference, the caller's: read-only (const) from here on. */
	int (*snapshot)(struct acquirer *a, double prime_s, const struct snap_policy_overlay *ov,
			const struct snapshot **out);
	/* Optional: take the first counters now, so the first snapshot's
	 * rate window (prime_s) overlaps the daemon's start-up. */
	int (*prime)(struct acquirer *a);
	/* Re-read MemTotal/MemFree of NODES[NR] (the applier's room re-check
	 * just before a move; agents/topo.h topo_read_meminfo). */
	int (*read_meminfo)(const struct host_paths *hp, struct snap_node *nodes, unsigned nr);
	/* Optional: one watch pass over LAST's guests (drift_report).
	 * MOVED (NULL: none), indexed as LAST's guests: those the cycle
	 * that took LAST then moved, whose threads no longer run where
	 * LAST saw them (their use is still watched, not where they run). */
	void (*drift)(struct acquirer *a, const struct snapshot *last, const bool *moved, struct drift_report *out);
	/* Optional: take every counter again now, so that the next snapshot's
	 * rates are over the time since (at least its PRIME_S): a cycle the
	 * watch prompts decides on the guest's use now, not on the interval's
	 * average. */
	int (*rewindow)(struct acquirer *a);
};

#endif
