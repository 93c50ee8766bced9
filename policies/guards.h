/* guards.h — private to policies/: the working copy of a host that one
 * policy_decide() or policy_advise() call reasons about, node-set
 * evaluation (the fit checks) and candidate generation.
 *
 * Everything here is pure: it reads a snapshot and a config and writes
 * only the caller's context. Node sets are handled as arrays of node
 * *indices* (into snapshot->nodes) while being built and as nodemask_t
 * (by node *id*) once evaluated, as plan items carry them.
 */
#ifndef NUMAORCH_POLICIES_GUARDS_H
#define NUMAORCH_POLICIES_GUARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../orchestrator/model/policy.h"

#define MIB (1024ULL * 1024ULL)

/* Scoring weights among candidate sets of the same (minimal) size; lower
 * score wins. With travel = Σ over the nodes s its memory leaves of
 * bytes(s) × d(s, mems(T)) / TRAVEL_UNIT_DIST, d the mean distance from s
 * to the nodes of mems(T), each distance counted as at least
 * TRAVEL_UNIT_DIST (the bytes to migrate × the distance they travel,
 * counted in bytes moved to a node at the kernel's default distance for
 * another node):
 *   score = util_after
 *         + W_MIGRATE × travel / guest memory
 *         + W_TRAVEL × travel in GiB / max(cpu_use, min_cpu)
 *         + W_DISTANCE × (mean distance within the set / 10 − 1)
 * A full migration to a node at distance 20 or nearer costs 0.5 of
 * utilisation, across sockets (21..32) 0.53..0.8. A nearer node costs no
 * less: copying a page, its faults and the guest's wait for it are the
 * same next door, and a migration priced below the load it relieves
 * would pull a guest off the node that holds its memory and its threads
 * (a local fit, util ≤ 1) onto an idle sibling node for half a node's
 * load — CPUs go to the memory when that node can hold them
 * (test_twosocket_cpus_to_memory). The second term weighs the bytes themselves against what
 * the guest does with them: a guest busy with one CPU pays 0.02 a GiB
 * moved at distance 20, one using next to nothing (min_cpu) ten times
 * that, so a tiny guest never drags gigabytes anywhere when its CPUs can
 * go to its memory instead. A cross-socket pair (distance 21..32) costs
 * 0.55..1.1, a same-socket pair (11..12) 0.05..0.1, so a guest stays
 * within a socket unless the other socket is much emptier, and prefers
 * the nodes its memory is already on. */
#define TRAVEL_UNIT_DIST 20.0
#define W_MIGRATE 0.5
#define W_TRAVEL 0.02
#define W_DISTANCE 0.5

/* Where a node has more than one last-level cache (pctx.by_llc), a
 * one-node set whose caches have no free cores enough for the guest's
 * busy threads in any one of them scores this much worse (pcand.llc_split):
 * among sets about as good, the one where cores.c can keep its threads in
 * one cache wins, and no load or migration the score weighs is traded
 * for it beyond a few % of a node. */
#define W_LLC 0.05

/* A local fit (pcand.local_fit) may pass a full node by this much: the
 * node's busy figure holds a few % that are no guest's (the host's own
 * work, rounding of ticks), so two one-thread guests using just under a
 * CPU each can read a little over a full 2-CPU node. */
#define LOCAL_FIT_SLACK 0.05

/* Hosts up to this many nodes get pctx.tfac (a table of nn² doubles). */
#define TFAC_MAX_NODES 64

/* Comparisons of utilisation against limits tolerate rounding. */
#define UTIL_EPS 1e-9

struct pctx {
	const struct policy_config *cfg;
	const struct snapshot *s;
	/* The bound a measured kernel flow must finish within for a guest's
	 * CPUs to stay where it brings the memory (plan_holds.follow_bound_s). */
	double follow_s;
	unsigned nn;
	double *busy;        /* busy CPUs per node index, working copy (NAN → 0) */
	double *busy_base;   /* what pctx_reset() starts busy from (pctx_settle) */
	/* Of busy, the part that floaters not yet placed put there
	 * (pctx_float; struct gview): others count it as free. */
	double *fbusy;
	double *fbusy_start; /* fbusy before any commit (pctx_reset) */
	/* pctx_float ran: floaters' shares are in fbusy. When the host is too
	 * busy for anything to float (policy_decide) they are not, and a
	 * floater's own share must come off its node like anyone's: counted
	 * as another's load there, six crowded guests on four nodes would
	 * take the least loaded nodes in turn and two land on one node while
	 * the fourth stands empty (test_oversubscribed_local_least_loaded). */
	bool floated;
	int64_t *free;       /* free bytes per node index, working copy */
	/* Of free, what moves accepted this cycle will free when their
	 * memory has left (pctx_commit): the applier checks the node's real
	 * free memory before it submits a migration, so a move that needs
	 * this credit is refused this cycle and retried in the next. */
	int64_t *credit;
	/* The free memory kept on each node index: policy_reserve of its
	 * MemTotal, fixed for the cycle (pctx_init). */
	int64_t *keep;
	/* Free bytes of each node index's hugetlb pools, working copy:
	 * [n * SNAP_HP_MAX + i] for the node's pool i (snap_node.hpools). */
	int64_t *hfree;
	unsigned *wlo, *whi; /* word range [wlo, whi) holding each node's CPUs */
	int *idx_of_id;      /* [MASK_MAX_NODES]: node index of an id, -1 if none */
	unsigned version;    /* bumped by every pctx_commit() */
	/* The plan keeps no settled item (policy_decide without verbose):
	 * the sentence saying why a guest is settled is not written, as
	 * nothing would read it. */
	bool terse;

	/* Scratch for one guest at a time, each [nn]. */
	unsigned *set;
	unsigned *uni;
	unsigned *distsum;
	unsigned *midx;      /* the node indices of a set's mems (travel_of) */
	/* [a * nn + b]: what a byte leaving node index a for b alone costs in
	 * travel (distance at least TRAVEL_UNIT_DIST, over it); NULL beyond
	 * TFAC_MAX_NODES nodes (travel_of then computes it each time). */
	double *tfac;
	bool *inset;
	bool *univ;
	/* The guest view's arrays (see struct gview). */
	double *own;
	unsigned *acpus;
	bool *memok;
	/* Candidates of one guest. */
	unsigned nr_cands, cands_cap;
	struct pcand *cands;
	/* The CPUs' load by core for the moves' exact CPUs (cores.h); NULL
	 * where cores play no part. */
	struct coreload *cores;
	/* [nn]: the floaters' memory on each node index as the snapshot has
	 * it (pctx_float_memory); NULL: not counted (advice). Equal choices
	 * go to the nodes holding less of the others' (pctx_others). */
	uint64_t *gmem;
	/* A node shows SMT siblings (threads_per_core > 1 with its cores
	 * known): the host where cores and CPUs differ. */
	bool smt;
	/* [nn] the load of floaters not yet placed that is expected on each
	 * node (pctx_shift: their CPUs go to their memory), and what
	 * pctx_reset() starts it from; NULL on a host without SMT siblings.
	 * A floater's load counts as free room where it runs (fbusy); counted
	 * by cores, its busy threads are on the node holding its memory: a
	 * guest does not take that node's free cores to leave it none
	 * (without it, two guests can each take the node holding the other's
	 * memory, both migrate, and one then shares its cores:
	 * test_smt_swap_cpus_to_memory). */
	double *shift, *shift_start;
	/* Sets are counted by cores (pset_eval, pcand.cores_short): set by
	 * decide_auto for one guest's candidates, on SMT hosts only; cleared
	 * where that guest is decided by CPUs after all, and after it. */
	bool by_cores;
	/* A node has more than one last-level cache with its cores known
	 * (pctx_init), and sets are weighed by them (W_LLC): set by
	 * policy_decide where x->cores is counted, by the advice when the
	 * request names its busy threads. */
	bool llc, by_llc;
};

/* One guest as the policy sees it (or an advice request). */
struct gview {
	double cpu_use;          /* CPUs it uses now; 0 when unknown/new */
	double cpu_demand;       /* with headroom and floor */
	uint64_t mem_total;
	uint64_t mem_demand;     /* with headroom */
	const uint64_t *mem_node;/* bytes by node index, NULL: none yet */
	/* Its hugetlb memory (snap_guest.huge_node, a part of mem_node) and
	 * their page size; NULL and 0 without. */
	const uint64_t *huge_node;
	uint64_t huge_total, huge_page;
	const double *own;       /* [nn] its share of each node's busy CPUs */
	const unsigned *acpus;   /* [nn] CPUs of the node it may be given */
	const bool *memok;       /* [nn] node allowed for its memory */
	nodemask_t cur_nodes;    /* CPU nodes now (empty: new guest) */
	/* The CPUs its use is counted on in pctx.cores (its cpuset); NULL:
	 * none (advice). */
	const cpumask_t *cpus;
	/* Its busy threads (measured, else estimated from its demand): a set
	 * never grows for CPU beyond the nodes they can fill — a one-thread
	 * guest on two nodes runs on one of them, and its memory can only be
	 * local there. 0: no limit (advice for a guest not started yet). */
	unsigned busy_thr;
	/* Free to run on every node it may use, able to leave one of them,
	 * its placement automatic: the scheduler puts its threads wherever
	 * there is room, and the policy is about to give it fewer nodes. Where
	 * its load is now is chance, not a property of the node: while it
	 * waits to be placed, other guests count its load as free room
	 * (pctx_float). Without this, on a host where every container starts
	 * unrestricted, each one finds the node holding its memory busy with
	 * another one that is about to leave, and migrates instead: more
	 * migrations than the placement needs (test_floaters_make_room). */
	bool floater;
	/* A floater with more than half of its memory on node index
	 * mem_major (with CPUs; else -1): its load is expected there
	 * (pctx_shift). */
	int mem_major;
	/* Beside the kernel's NUMA balancing (on), the kernel measured
	 * bringing a busy guest's memory to its threads (kflow_judge: it
	 * follows them, fast enough) with no more left to bring than it
	 * brought: the nodes its busy threads ran on (measured, own ≥
	 * SNAP_BUSY_THREAD_CPU), which a set keeping them pays no migration
	 * for in its score (pset_eval). Empty: not so. */
	nodemask_t follow_nodes;
	bool follow_any;         /* follow_nodes is not empty (asked per set) */
};

/* The evaluation of one node set T for one guest. */
struct pcand {
	nodemask_t nodes;        /* CPU nodes of T */
	nodemask_t mems;         /* mems(T) */
	unsigned k;              /* |T| */
	unsigned nr_cpus;        /* Σ CPUs of T's nodes */
	unsigned nr_to_cpus;     /* Σ CPUs the guest may be given on T */
	double util_after;       /* (Σ (busy − own) + demand) / Σ CPUs */
	double mean_dist;        /* mean pairwise distance over T ∪ mems(T) */
	double score;
	uint64_t room;           /* Σ max(0, free − reserve) over mems(T) */
	uint64_t already;        /* guest memory already on mems(T) */
	uint64_t migrate;        /* guest memory not on mems(T) */
	/* migrate × the distance it travels: Σ over the nodes s it leaves of
	 * bytes(s) × (mean distance from s to mems(T)) / TRAVEL_UNIT_DIST, in
	 * bytes; and
	 * the farthest of those distances (0: nothing moves). */
	double travel;
	unsigned travel_far;
	/* Of migrate, its hugetlb pages, and the free pages of their size on
	 * mems(T) in bytes: they fit only there, not in the free memory
	 * (room). huge_ok: none to move or enough free pages. */
	uint64_t huge_migrate;
	uint64_t huge_room;
	bool huge_ok;
	bool allowed_ok;         /* mems(T) non-empty within allowed_mems */
	bool cpu_ok;
	bool mem_ok;
	bool busy_nan;           /* a node of T had no busy figure (taken as 0) */
	/* Fits but for CPU load, and its CPUs already hold the guest's busy
	 * threads: a candidate only when no set fits (the host is too busy
	 * for headroom anywhere), to be placed local on the least-loaded
	 * nodes rather than spread or left alone. */
	bool crowded;
	/* Crowded, and its memory fits only without the growth headroom:
	 * room for what must move and its footprint (mem_total, not
	 * mem_demand) on mems(T). When nothing fits with headroom a
	 * one-node set that holds its threads is local at once; growing it
	 * for the headroom's few MiB would spread a 2-thread guest over two
	 * nodes, a thread on each, half of its memory remote. */
	bool bare_mem;
	/* Fits but for the CPU headroom, with all (but a negligible part) of
	 * the guest's memory already on mems(T) (beside the kernel's
	 * balancing, more than half: it brings the rest), and its use — without
	 * headroom — fits the CPUs left: (Σ other busy + use) / CPUs ≤ 1. Its
	 * threads run there without waiting and local at once, where the set
	 * that fits with headroom would need its memory moved (two one-thread
	 * guests whose memory is on one 2-CPU node:
	 * test_memtight_both_to_their_memory). Its use counts at least one
	 * CPU per busy thread (three one-thread guests on two CPUs use 0.67
	 * each, and do not fit). Counted as fitting; util_after and the score
	 * then use the use without headroom, so an idle remote set wins only
	 * when its load, plus W_MIGRATE for the move, is lower still. */
	bool local_fit;
	/* Counted by cores (pctx.by_cores), the guest's busy threads and the
	 * busy threads already on T outnumber T's cores: not cpu_ok. */
	bool cores_short;
	/* Weighed by caches (pctx.by_llc), a one-node set where no one
	 * last-level cache has a free core for each of the guest's busy
	 * threads: W_LLC in its score. */
	bool llc_split;
};

/* Any bit set: cheaper than mask_empty(), which counts every bit (the
 * library is built without -mpopcnt). */
static inline bool words_any(const uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i])
			return true;
	return false;
}
#define MASK_ANY(m) words_any((m)->w, MASK_WORDS(m))

/* Bits set in W, inline: without -mpopcnt __builtin_popcountll is a
 * call into libgcc, made for every node of every guest view. */
static inline unsigned pop64(uint64_t w)
{
	w -= (w >> 1) & 0x5555555555555555ULL;
	w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL);
	w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned)((w * 0x0101010101010101ULL) >> 56);
}

static inline bool pcand_fits(const struct pcand *c)
{
	return c->allowed_ok && c->cpu_ok && c->mem_ok;
}

/* Build the working copy. pctx_fini accepts a zeroed context. */
void pctx_init(struct pctx *x, const struct policy_config *cfg, const struct snapshot *s);
void pctx_fini(struct pctx *x);
/* Back to the snapshot's loads and free memory (before any reservation
 * or commit); the version keeps counting. */
void pctx_reset(struct pctx *x);
void pctx_reserve(struct pctx *x, const struct advice_reservation *r);
/* Make the nodes' busy CPUs agree with the guests' own shares OWNED[n]
 * (the sum of every guest's gview own[n]): see guards.c. The base of
 * every later pctx_reset(). */
void pctx_settle(struct pctx *x, const double *owned);

/* Count floater G's load as floating: add its own share to fbusy, for
 * this working copy and every pctx_reset() of it. pctx_commit() takes it
 * out again when G is placed. */
void pctx_float(struct pctx *x, const struct gview *g);
/* pctx_float for every floater at once: FLOATED[n] is the sum of their
 * own shares of node index n, added in the order pctx_float would have
 * added them one by one onto a working copy where nothing floats yet. */
void pctx_float_sum(struct pctx *x, const double *floated);
/* Busy CPUs of node index N other than the guest's own share and the
 * load of floaters not yet placed, ≥ 0. */
double pctx_other_busy(const struct pctx *x, const struct gview *g, unsigned n);
/* The load floater G, not placed yet, is expected to bring to node index
 * N (gview.mem_major) while floaters' load floats (pctx.floated). */
double pctx_shift(const struct pctx *x, const struct gview *g, unsigned n);
/* Add G's expected shift into x->shift and its start (a no-op where
 * shift is NULL); after pctx_float or pctx_float_sum. */
void pctx_expect(struct pctx *x, const struct gview *g);
/* Count floater G's memory per node into x->gmem (allocated on first
 * use). */
void pctx_float_memory(struct pctx *x, const struct gview *g);
/* Floaters' memory other than G's on node index N (x->gmem), 0 when not
 * counted. A floater's load counts as free room until it is placed, so
 * nothing else says that it will run by its memory (CPUs go to the
 * memory): a guest taking that node when another would do as well
 * pushes it off its memory. */
uint64_t pctx_others(const struct pctx *x, const struct gview *g, unsigned n);
/* Room for new memory on node index N: max(0, free − its reserve), the
 * reserve being policy_reserve(min_free_bytes, min_free_share, MemTotal). */
uint64_t pctx_room(const struct pctx *x, unsigned n);
/* The kernel's NUMA balancing migrates pages on fault (bit 0 of
 * snapshot.numa_balancing; kbal_kernel_moves's test, which policies/ may
 * not link). */
bool kernel_migrates_on_fault(const struct snapshot *s);
/* With the kernel's balancing migrating on fault, does a set whose move
 * migrates MIGRATE of a guest's MEM_TOTAL hold the larger part of it
 * (its threads there, the kernel brings the rest back on fault)? */
bool kernel_brings_back(const struct snapshot *s, uint64_t migrate, uint64_t mem_total);
/* Free bytes in node index N's pool of PAGE-byte huge pages (0: none). */
uint64_t pctx_hroom(const struct pctx *x, unsigned n, uint64_t page);

/* Evaluate the set of node indices IDX[0..K) for G. MEMS_OVERRIDE (node
 * ids, may be NULL) replaces the rule "memory nodes of T" (pinned guests
 * name their memory nodes); memory-less nodes in it are ignored. */
void pset_eval(const struct pctx *x, const struct gview *g, const unsigned *idx, unsigned k,
	       const nodemask_t *mems_override, struct pcand *out);
/* Evaluate a set given as a mask of node ids. */
void pset_eval_mask(const struct pctx *x, const struct gview *g, const nodemask_t *nodes,
		    const nodemask_t *mems_override, struct pcand *out);

/* Candidate generation into x->cands (cleared first): for every node of
 * the universe USABLE (by index) as a seed, grow by the nearest helpful
 * node until the set fits; then, within CUR (the guest's current CPU
 * nodes, may be empty), the same for proper subsets; then CUR itself.
 * Growth for CPU stops once the set's CPUs hold the guest's busy threads
 * (gview.busy_thr); such a set that fits but for CPU load is kept as
 * crowded (pcand.crowded). Returns the smallest size among the fitting
 * sets, 0 if none fits. *allowed_block is set when some set was rejected
 * only because its memory nodes fall outside allowed_mems. */
unsigned pcands_generate(struct pctx *x, const struct gview *g, const bool *usable,
			 bool *allowed_block);
/* The smallest size among the crowded candidates of the last
 * pcands_generate(), 0 if none. */
unsigned pcands_crowded_min(const struct pctx *x);
/* true if the CPUs of G on C already hold its busy threads without C's
 * smallest node (C is more nodes than its threads can fill). */
bool pcand_more_than_threads(const struct pctx *x, const struct gview *g, const struct pcand *c);

/* true if A is a better choice than B among sets of equal size: lower
 * score, then less to migrate, then lower util_after, then lower node
 * ids. */
bool pcand_better(const struct pcand *a, const struct pcand *b);

/* Apply a move of G to C in the working copy: its CPU share leaves its
 * current nodes and lands on C's (in proportion to the CPUs it may use
 * there); its memory outside mems(C) is freed on its nodes, and what it
 * needs on mems(C) beyond what is already there (its demand, headroom
 * included) is reserved there, in proportion to room. The memory it
 * leaves is credited to its old nodes only when the move does not itself
 * depend on credit (its migration fits the nodes' free memory without
 * it): two guests that each need the room the other leaves would both be
 * refused at apply time, every cycle, and stay spread over every node. */
void pctx_commit(struct pctx *x, const struct gview *g, const struct pcand *c);

/* Format a node mask for a detail sentence ("0-3", "…" if too long). */
void fmt_nodes(const nodemask_t *m, char *buf, size_t bufsz);

#endif
