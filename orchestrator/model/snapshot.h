/* snapshot.h — the immutable picture of the host that one cycle decides on.
 *
 * acquire (agents/) builds a snapshot, finalises it, and from then on it is
 * read-only and shared by reference count between the engine thread, the
 * policy and the REST server. Nothing in here does I/O.
 *
 * Node arrays are indexed by *node index* (0..nr_nodes-1, nodes sorted by
 * id); masks (nodemask_t) are indexed by *node id*. snap_node_index()
 * converts. Memory figures are bytes.
 */
#ifndef NUMAORCH_SNAPSHOT_H
#define NUMAORCH_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "orchestrator/base/cghier.h"
#include "orchestrator/base/mask.h"

#define GUEST_ID_MAX 128
#define GUEST_RUNTIME_MAX 16

/* Most page sizes a node's hugetlb pools come in (x86: 2 MiB, 1 GiB;
 * arm64 with 4 KiB pages: 64 KiB, 2 MiB, 32 MiB, 1 GiB). */
#define SNAP_HP_MAX 4

/* One hugetlb pool of a node: /sys/devices/system/node/nodeN/hugepages/
 * hugepages-<size>kB/{nr,free,surplus}_hugepages. Counts are pages. Its
 * pages are not in MemFree: they were taken from it when reserved. */
struct snap_hpool {
	uint64_t page;         /* bytes a page */
	uint64_t total;        /* nr_hugepages (surplus pages included) */
	uint64_t free;         /* free_hugepages */
	uint64_t surplus;      /* surplus_hugepages */
};

struct snap_node {
	int id;
	cpumask_t cpus;        /* online CPUs of this node */
	unsigned nr_cpus;      /* 0 for a memory-only node */
	uint64_t mem_total;    /* node meminfo MemTotal (0: memoryless node) */
	uint64_t mem_free;     /* node meminfo MemFree */
	/* Memory in flight: what the mover's live jobs are still to take off
	 * this node and to bring onto it, by their guests' memory now
	 * (mover_flows). Room to come and room spoken for: MemFree alone
	 * shows a node that other guests' pages are leaving as full, and
	 * sends a guest that would fit there elsewhere. 0 without a mover,
	 * and in snapshots not made by the engine. */
	uint64_t mem_leaving;
	uint64_t mem_coming;
	double busy;           /* busy fraction of its CPUs over the sample
				* window, 0..1; NAN when not yet measured */
	/* CPUs the agent's own threads used here over that window, left out
	 * of busy (agents/selfload.h); NAN when not measured. */
	double agent_cpus;
	/* Its hugetlb pools by page size, smallest first; 0 when the kernel
	 * has none (no hugetlb, no node directories). */
	unsigned nr_hpools;
	struct snap_hpool hpools[SNAP_HP_MAX];
	/* Its cores and last-level caches (snap_set_cputopo): how many of
	 * each its CPUs are on, and the most CPUs one of its cores holds
	 * (SMT siblings). 0: not known (no topology files, CPUs without
	 * them), and then no placement looks at cores. */
	unsigned nr_cores;
	unsigned nr_llcs;
	unsigned threads_per_core;
};

enum guest_kind {
	GUEST_CONTAINER = 0,
	GUEST_VM,
};

/* Where a guest's locality figure comes from (snap_guest.locality). */
enum loc_source {
	LOC_ONE_NODE = 0, /* its CPUs are on one node: every thread runs there */
	LOC_THREADS,      /* measured: where its threads (vCPUs) ran, by CPU time */
	LOC_ESTIMATE,     /* spread, threads not measured (first sight, idle, too
			   * many threads): its CPUs' nodes weighted by CPU count */
};

/* A thread (vCPU) using at least this many CPUs over the window is busy. */
#define SNAP_BUSY_THREAD_CPU 0.25

enum gpol_mode {
	GPOL_AUTO = 0,   /* consolidate as the global policy says */
	GPOL_PINNED,     /* keep on exactly these nodes */
	GPOL_IGNORE,     /* never touch */
};

/* What a guest's devices (snap_guest.dev_nodes) weigh in its placement. */
enum gpol_devices {
	GPOL_DEV_PREFER = 0, /* a guest that moves goes to a device's node where it fits, and keeps it */
	GPOL_DEV_REQUIRE,    /* only targets holding a device's node; none fits: skipped */
	GPOL_DEV_IGNORE,     /* its devices do not count */
};

enum gpol_source {
	GPOL_SRC_DEFAULT = 0,
	GPOL_SRC_API,
	GPOL_SRC_METADATA, /* libvirt domain XML <metadata> */
};

struct guest_policy {
	enum gpol_mode mode;
	enum gpol_source source;
	nodemask_t nodes; /* GPOL_PINNED only */
	enum gpol_devices devices;
	/* When the operator set it (CLOCK_REALTIME): through the API, in
	 * whole seconds as the store keeps them; in a domain's metadata, the
	 * first read that saw it changed (vmxml_policy_carry). 0: not known
	 * (the default; metadata already there at the agent's start). A pin
	 * set since the guest's last move is an order its cool-down does not
	 * hold (the policy reads it against the snapshot's real_ns and
	 * mono_ns). */
	int64_t set_real_ns;
};

/* Libvirt domain details; NULL for containers. Thread ids are host tids. */
struct snap_vm {
	char uuid[37];
	char name[128];
	pid_t qemu_pid;
	/* The instance measured: libvirt's domain id and the QEMU process's
	 * start time (/proc/PID/stat field 22; with the pid it names one
	 * process for good). A mover job moved this instance's pages, and
	 * only this instance may be narrowed after it (vmapply_set_mems). */
	int domid;               /* -1 if unknown */
	uint64_t qemu_start;     /* 0 if unknown */
	unsigned nr_vcpus;
	pid_t *vcpu_tids;        /* [nr_vcpus], 0 where unknown */
	double *vcpu_use;        /* [nr_vcpus] CPUs used, NAN if unknown */
	unsigned nr_emulator_tids;
	pid_t *emulator_tids;
	unsigned nr_iothreads;
	pid_t *iothread_tids;
	unsigned *iothread_ids;  /* libvirt iothread ids, [nr_iothreads] */
	char numatune_mode[16];  /* "", "strict", "preferred", "interleave", "restrictive" */
	char numatune_nodeset[64];
	char mem_source[16];     /* "numa_stat" or "numa_maps": where mem_node came from */
};

/* A mover job still running for a guest (mover_note_jobs): what a plan
 * needs to tell the move it makes already (snap_job_same_move, hold.h).
 * ID 0: none. */
struct snap_job {
	uint64_t id;
	nodemask_t to;               /* the nodes its pages go to */
	bool has_first;              /* a split job's: up to its bytes onto FIRST first */
	int first;
	bool write;                  /* a cpuset.mems write on a worker, not pages moved */
	bool ended;                  /* in a final state, not yet taken */
	uint64_t bytes_done;
};

/* What the kernel moved of a guest's memory over the window since the
 * previous snapshot (kflow.h): set by kflow_fill, NULL where not
 * measured. Owned by the guest. */
struct snap_kflow {
	double window_s;
	int64_t *delta;        /* [nr_nodes] by node index: bytes arrived (> 0) or left (< 0) */
	uint64_t arrived;      /* sum of the arrivals */
	uint64_t left;         /* sum of the departures */
	uint64_t moved;        /* the smaller of the two: moved between nodes */
	/* Its CPUs were the same at both ends: the window saw its threads
	 * where they are now from its start. */
	bool cpus_steady;
};

/* A cgroup below a guest that carries a cpuset of its own (a pod's
 * container cgroup: always in cgroup v1, in v2 whenever its runtime
 * writes one), with the cgroups below it: the guest's writes give it a
 * value of its own (cgplan.h), so the policy may give it its own part of
 * the guest's target. Only for a guest whose CPUs span several nodes. */
struct snap_part {
	char *cgroup;            /* path relative to the hierarchy roots; owned */
	nodemask_t mems;         /* its effective memory nodes now */
	uint64_t *mem_node;      /* [nr_nodes] bytes (its memory.numa_stat); NULL: not measured */
	uint64_t mem_total;
	/* [nr_nodes] CPUs its threads used on each node over the window
	 * (the guest's per-thread sample, each thread counted for the part
	 * it belongs to); NULL where not measured. */
	double *cpu_node;
	double cpu_use;          /* sum of cpu_node; 0 where not measured */
	unsigned busy_threads;   /* its threads that used >= SNAP_BUSY_THREAD_CPU */
};

struct snap_guest {
	char id[GUEST_ID_MAX];          /* URL- and path-safe, stable */
	enum guest_kind kind;
	char runtime[GUEST_RUNTIME_MAX]; /* docker, kubernetes, podman, runc, lxc,
					  * nspawn, custom, libvirt */
	/* The name its runtime shows: docker's and podman's container
	 * names, a pod's "namespace/name", a VM's domain name; the key of
	 * its id (a container id, a pod uid) where none is known. */
	char name[128];
	/* Kubernetes pods: their namespace and pod name; containerd's
	 * containers: their containerd namespace. "" where none. */
	char ns[64];
	char pod[254];
	/* Another placer owns its placement (the kubelet: a pod with
	 * exclusive CPUs or a NUMA assignment): never moved. OWNER names
	 * it, OWNER_REASON says what it decided; "" when none. */
	char owner[16];
	char owner_reason[200];
	char *cgroup;                   /* path relative to hierarchy roots */
	unsigned nr_threads;
	unsigned nr_procs;
	pid_t main_pid;                 /* first process seen, 0 if none */
	double cpu_use;                 /* CPUs in use over the window; NAN if unknown */
	/* No earlier sample of this guest: cpu_use, if known, is its young
	 * process's average since it started (a container first seen a
	 * second or more after its start), not a window's rate. */
	bool first_sight;
	uint64_t cpu_usage_ns;          /* cumulative counter it came from */
	/* [nr_nodes] by node index: the CPUs of cpu_use that ran on each
	 * node, measured from its threads; NULL where not measured (a guest
	 * on one node, too many threads, no earlier sample). Owned. */
	double *cpu_node;
	/* Threads (VMs: vCPUs) that used ≥ SNAP_BUSY_THREAD_CPU over the
	 * window, when acquire sampled them one by one (busy_measured);
	 * else 0 and false. */
	unsigned busy_threads;
	bool busy_measured;
	uint64_t *mem_node;             /* [nr_nodes] bytes, by node index */
	uint64_t mem_total;             /* sum of mem_node */
	/* Its memory per node could not be read (no memory.numa_stat: a
	 * cgroup in the cpuset hierarchy only; numa_maps unreadable): the
	 * zeros in mem_node are no measurement, and finalize makes
	 * mem_in_cpuset and locality NAN. A flag for the unknown, so the
	 * guests built by hand in tests, zeroed, stay measured. */
	bool mem_unknown;
	/* Its hugetlb memory (huge pages of huge_page bytes): [nr_nodes]
	 * bytes by node index, NULL when it has none; owned. It is counted in
	 * mem_node (and so in mem_total and the locality figures) as well:
	 * memory.numa_stat counts no hugetlb page, so the container source
	 * adds it there, and the VM source's numa_maps figures hold it
	 * already. The rest of mem_node is the ordinary memory, unchanged for
	 * a guest with no hugetlb. Room for these bytes on a node is its free
	 * pages of huge_page (snap_node.hpools), not MemFree. A guest with
	 * huge pages of several sizes: the size holding the most is here, the
	 * others count as ordinary memory (and a warning says so). */
	uint64_t *huge_node;
	uint64_t huge_page;
	uint64_t huge_total;            /* derived: sum of huge_node */
	/* CPU masks are 1 KiB each (NR_CPUS 8192) and nearly every guest
	 * shares its two with many others, so they are interned in the
	 * snapshot (snap_cpumask): never NULL once added, read-only, valid
	 * while the snapshot is. Set them with snap_guest_set_cpus(). */
	const cpumask_t *cpus;          /* effective CPUs now */
	nodemask_t mems;                /* effective memory nodes now */
	const cpumask_t *allowed_cpus;  /* bound for new cpus: parent's effective; empty: any */
	nodemask_t allowed_mems;
	struct guest_policy policy;
	/* The policy without the operator's override (its source's, with
	 * the host's devices default): what applies once the override is
	 * deleted, shown until the next snapshot drops it. */
	struct guest_policy base_policy;
	struct snap_vm *vm;
	/* Its devices: PCI functions passed through to a VM (<hostdev>,
	 * <interface type='hostdev'>, vDPA), devices the kubelet's device
	 * plugins gave a pod's containers. How many were found, and the
	 * nodes (ids) of those that sit on one (a device with numa_node -1
	 * counts, on no node), and the devices a container's cgroup v1
	 * devices controller lets it use (agents/devcg.h). 0 and empty:
	 * none, or none its source can tell (cgroup v2). DEV_ALL: its
	 * device cgroup lets it use every device, which says no node. */
	unsigned nr_devices;
	nodemask_t dev_nodes;
	bool dev_all;

	/* Derived by snap_finalize(), from the fields above. */
	nodemask_t cpu_nodes;           /* nodes whose CPUs intersect cpus */
	/* Memory inside the cpuset's CPU nodes: bytes, and their share of
	 * mem_total (1 if no memory; NAN if mem_unknown). It says nothing about where the
	 * threads of a guest spread over several nodes run: a one-thread
	 * guest on two nodes with its memory on one is 1.0 here and 0 %
	 * local if the thread runs on the other. */
	uint64_t mem_in_cpuset_bytes;
	double mem_in_cpuset;
	/* Locality where the threads run: Σ over nodes k of (share of its
	 * CPU time that ran on k) × (its memory on k, or on the nearest node
	 * with memory when k has none) / mem_total; 1 if no memory, NAN if
	 * mem_unknown. On one
	 * node it equals mem_in_cpuset (but for a memory-less node). The
	 * shares are measured (cpu_node) or estimated (locality_source). */
	double locality;
	enum loc_source locality_source;
	/* Laid by the engine's overlay (snap_policy_overlay.flows): the
	 * mover's live job for this guest when the snapshot was taken. */
	struct snap_job job;
	/* Laid by the engine (kflow_fill): the kernel's flow of its memory
	 * since the previous snapshot; NULL: not measured. */
	struct snap_kflow *kflow;
	/* Its cgroups with a cpuset of their own (struct snap_part), in the
	 * order of their paths; owned. 0 and NULL: none, or not measured. */
	unsigned nr_parts;
	struct snap_part *parts;
};

struct snapshot {
	unsigned refs;                  /* atomic */
	uint64_t seq;
	int64_t mono_ns;                /* CLOCK_MONOTONIC when taken */
	int64_t real_ns;                /* CLOCK_REALTIME when taken */
	double window_s;                /* sample window of rates (busy, cpu_use) */
	/* kernel.numa_balancing: 0 off, > 0 on (its mode bits), -1 unknown.
	 * When on, the kernel moves pages toward the threads touching them:
	 * it places memory inside a guest's node set, which a cpuset cannot. */
	int numa_balancing;
	/* /sys/kernel/mm/numa/demotion_enabled: 1 the kernel demotes cold
	 * pages to slower (e.g. memory-only, CXL) nodes under pressure, 0 it
	 * does not, -1 unknown. With it, or with numa_balancing's tiering
	 * bit (snap_memory_tiering), memory on a node without CPUs is the
	 * kernel's tier: the policy leaves it there. */
	int demotion_enabled;
	/* /proc/vmstat numa_pages_migrated (the kernel's balancing
	 * migrations, host-wide, cumulative pages) when vmstat_read; and its
	 * rate since the previous snapshot (kflow_fill), pages/s, NAN when
	 * not measured. */
	bool vmstat_read;
	uint64_t numa_pages_migrated;
	double kernel_migrated_pps;
	/* The window kflow_fill measured the guests' flows over, seconds;
	 * 0: none (no previous snapshot, the nodes changed). */
	double flow_window_s;
	enum cg_layout layout;

	unsigned nr_nodes;
	struct snap_node *nodes;        /* sorted by id */
	unsigned *distance;             /* [nr_nodes * nr_nodes], by index */
	/* Cores and last-level caches by CPU id (snap_set_cputopo): the
	 * lowest CPU id of the CPU's core (its SMT siblings) and of the CPUs
	 * sharing its last-level cache; -1 where not known. NULL and 0 when
	 * the host showed none (then every node's nr_cores is 0). */
	unsigned nr_cpu_ids;
	int *cpu_core;
	int *cpu_llc;

	unsigned nr_guests;
	struct snap_guest *guests;      /* sorted by id after finalize */
	unsigned guests_cap;

	/* Problems met while acquiring that an operator should see (a
	 * malformed file, a vanished guest); owned strings. */
	unsigned nr_warnings;
	char **warnings;

	/* The distinct CPU masks of the guests (snap_cpumask). */
	cpumask_t **masks;
	unsigned nr_masks, masks_cap;
	unsigned *mask_ht;              /* open addressing: index + 1, 0 empty */
	unsigned mask_ht_cap;           /* power of two */
};

/* A new, empty snapshot with one reference. */
struct snapshot *snap_new(void);
/* A finalized snapshot is read-only: whoever holds it after
 * snap_finalize() holds a const pointer, and references are counted on
 * const pointers (the count is the only thing that changes). */
const struct snapshot *snap_ref(const struct snapshot *s);
/* Drop a reference; frees on the last. Accepts NULL. */
void snap_unref(const struct snapshot *s);

/* Building (before finalize). snap_set_nodes copies nodes and the
 * distance matrix (may be NULL: then 10 on the diagonal, 20 elsewhere). */
void snap_set_nodes(struct snapshot *s, const struct snap_node *nodes, unsigned n,
		    const unsigned *distance);
/* The CPUs' cores and last-level caches (snapshot.cpu_core, cpu_llc:
 * CORE[NR] and LLC[NR] by CPU id, copied; NULL or NR 0: none), and from
 * them each node's nr_cores, nr_llcs and threads_per_core; a node with a
 * CPU whose core is not known gets 0s. Call after snap_set_nodes. */
void snap_set_cputopo(struct snapshot *s, const int *core, const int *llc, unsigned nr);
/* CPU's core (lowest sibling id) and last-level cache (lowest id sharing
 * it); -1 when not known. */
int snap_cpu_core(const struct snapshot *s, int cpu);
int snap_cpu_llc(const struct snapshot *s, int cpu);
/* Append a zeroed guest (mem_node allocated for nr_nodes; call after
 * snap_set_nodes) and return it for the caller to fill. */
struct snap_guest *snap_add_guest(struct snapshot *s);
/* G's huge_node, allocated zeroed for nr_nodes if it has none yet. */
uint64_t *snap_guest_huge(struct snapshot *s, struct snap_guest *g);
/* Room for at least N guests before the array must grow (a hint: never
 * shrinks it). */
void snap_reserve_guests(struct snapshot *s, unsigned n);
/* The snapshot's own copy of MASK, shared by every caller with an equal
 * mask: stable (never moved or freed before the snapshot). */
const cpumask_t *snap_cpumask(struct snapshot *s, const cpumask_t *mask);
/* g->cpus = CPUS, g->allowed_cpus = ALLOWED (NULL: unrestricted), interned. */
void snap_guest_set_cpus(struct snapshot *s, struct snap_guest *g, const cpumask_t *cpus,
			 const cpumask_t *allowed);
void snap_warn(struct snapshot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sort guests by id, and compute derived fields. Two guests with one id
 * but different cgroups both stay: the one whose cgroup sorts first
 * keeps the id, the other gets "-c<hash of its cgroup>" appended (and a
 * warning says so); true duplicates (same id, same cgroup) are dropped
 * (keeps the first, warns). Idempotent. */
void snap_finalize(struct snapshot *s);

/* Per-guest policy overrides (the operator's store): GET fills OUT and
 * returns true for a guest (by its final id) whose policy it overrides. */
struct snap_policy_overlay {
	bool (*get)(void *ctx, const char *id, struct guest_policy *out);
	void *ctx;
	/* What the devices of a guest GET does not override, and whose
	 * source gave it no policy, weigh ([policy] devices). */
	enum gpol_devices devices;
	/* May be NULL: fill each node's mem_leaving/mem_coming, called last,
	 * with the guests final (the engine: its mover's live jobs). */
	void (*flows)(void *ctx, struct snapshot *s);
	void *flows_ctx;
};
/* snap_finalize, with OV's overrides (may be NULL) replacing the
 * policies the sources found, after ids are final: the last change a
 * snapshot sees. */
void snap_finalize_with(struct snapshot *s, const struct snap_policy_overlay *ov);

/* Lookups. -1 / NULL when absent. */
int snap_node_index(const struct snapshot *s, int node_id);
const struct snap_guest *snap_find_guest(const struct snapshot *s, const char *id);
unsigned snap_distance(const struct snapshot *s, unsigned from_idx, unsigned to_idx);
/* The id of the node with memory (mem_total > 0) nearest to the node at
 * index IDX by snap_distance; on a tie the lowest index wins. -1 if no
 * node has memory. *DIST (may be NULL) gets that distance, ~0u on -1.
 * Memory placed for CPUs of a memory-less node goes there. */
int snap_nearest_mem_node(const struct snapshot *s, unsigned idx, unsigned *dist);
/* Node N's hugetlb pool of PAGE bytes a page, or NULL. */
const struct snap_hpool *snap_node_hpool(const struct snap_node *n, uint64_t page);
/* Index of the node holding CPU, or -1. */
int snap_cpu_node_index(const struct snapshot *s, int cpu);
/* Add a part to G (zeroed but for its cgroup, copied, and mem_node,
 * allocated for S's nodes) and return it. */
struct snap_part *snap_guest_add_part(const struct snapshot *s, struct snap_guest *g, const char *cgroup);
/* The part of G whose subtree holds cgroup REL (REL the part's own
 * cgroup or one below it); -1 if none. */
int snap_part_of(const struct snap_guest *g, const char *rel);
/* A part's locality where its threads run (snap_locality_for on its own
 * memory); NAN where its memory or threads were not measured. */
double snap_part_locality(const struct snapshot *s, const struct snap_part *p);

/* A guest's cpu_node from per-node weights W ([nr_nodes], owned, taken
 * over): scaled so they add up to CPU_USE. W is freed and NULL returned
 * when the weights are all zero or CPU_USE is unknown. */
double *snap_node_use(const struct snapshot *s, double *w, double cpu_use);
/* The true locality (see snap_guest.locality) of G if its CPU time ran
 * on the nodes by index in the proportions W[nr_nodes] (any scale; all
 * zero or NULL: 1 if G has no memory, else 0). */
double snap_locality_for(const struct snapshot *s, const struct snap_guest *g, const double *w);
/* Number of nodes that have CPUs. */
unsigned snap_nr_cpu_nodes(const struct snapshot *s);
/* Node ids whose CPUs intersect CPUS. */
void snap_cpus_to_nodes(const struct snapshot *s, const cpumask_t *cpus, nodemask_t *out);
/* Union of the CPUs of the nodes in NODES. */
void snap_nodes_to_cpus(const struct snapshot *s, const nodemask_t *nodes, cpumask_t *out);

/* Guest ids: the runtime prefix, '-', then NAME with every byte outside
 * [A-Za-z0-9._-] replaced by '_'. If anything was replaced or the result
 * would exceed the limit, a '-' and 8 hex digits of a hash of NAME are
 * appended so that distinct names keep distinct ids. */
void snap_make_id(char out[GUEST_ID_MAX], const char *prefix, const char *name);
/* true for strings snap_make_id can produce: 1..127 bytes of
 * [A-Za-z0-9._-], not starting with '.' or '-'. Check ids from requests
 * with this before any use. */
bool snap_id_valid(const char *id);

const char *snap_kind_name(enum guest_kind k);
/* "one_node", "threads", "estimate". */
const char *snap_loc_source_name(enum loc_source s);
const char *gpol_mode_name(enum gpol_mode m);
const char *gpol_source_name(enum gpol_source s);
int gpol_mode_parse(const char *s, enum gpol_mode *out);
/* "prefer", "require", "ignore". */
const char *gpol_devices_name(enum gpol_devices d);
int gpol_devices_parse(const char *s, enum gpol_devices *out);

/* The kernel tiers memory: kernel.numa_balancing's memory-tiering bit
 * (2: hot pages promoted from slow nodes, cold ones demoted to them) or
 * demotion on. Memory on a node without CPUs is then where the kernel
 * put it, and it moves it back when it is hot. */
static inline bool snap_memory_tiering(const struct snapshot *s)
{
	return (s->numa_balancing > 0 && (s->numa_balancing & 2)) || s->demotion_enabled > 0;
}

#endif
