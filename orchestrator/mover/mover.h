/* mover.h — migrates a guest's memory off the engine thread.
 *
 * A job is one guest's pages: its processes, the nodes the pages must
 * leave and the nodes they go to. Worker threads ([memory] workers of
 * them) walk each process's mappings
 * (/proc/PID/maps) in chunks, ask move_pages(2) where each page of a
 * chunk is and move the ones outside the target. A chunk's size adapts so
 * that each move call stays near [memory] chunk_ms where that does not
 * cost the move its rate (mover_cost_next); the guest itself waits only
 * for the page it touches while that page moves. A host-wide rate budget
 * ([memory] rate_mib) paces all workers together. A job whose processes
 * go to different targets (mover_spec.pid_to: a pod split over its
 * containers) is walked by as many workers at once as it has targets and
 * free workers — each target's processes by one, on that target's CPUs —
 * and is still one job: one record, one end, one guest's.
 *
 * move_pages(2) refuses a node outside the task's cpuset mems: the
 * applier widens them to old ∪ new (which migrates nothing) before it
 * submits a job (apply_memory_widen).
 *
 * A job ends done (every page it could find is on the target), vanished
 * (its processes exited), superseded (a new job for the guest), cancelled
 * (DELETE /v1/migrations/{id}), stopped (SIGTERM, reload), expired
 * ([memory] job_timeout) or failed. Cancellation is seen at the next
 * chunk boundary. Finished jobs are reported once to the engine
 * (mover_take_finished; the event fd becomes readable) and kept a while
 * for the API.
 *
 * Thread-safe: the engine submits and takes, the API lists and cancels.
 */
#ifndef NUMAORCH_MOVER_H
#define NUMAORCH_MOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/mask.h"
#include "orchestrator/model/snapshot.h"

enum mover_state {
	MJ_QUEUED = 0,
	MJ_RUNNING,
	MJ_DONE,
	MJ_VANISHED,
	MJ_SUPERSEDED,
	MJ_CANCELLED,
	MJ_STOPPED,
	MJ_EXPIRED,
	MJ_FAILED,
	/* Walked to the end, waited for and swept what it could not see, and
	 * still LEFT_MIN_BYTES or more of its anonymous memory off the target
	 * (numa_maps): the record says how much, the mems stay wide. */
	MJ_PARTIAL,
	MJ_NR_STATES
};

const char *mover_state_name(enum mover_state s);
bool mover_state_final(enum mover_state s);

struct mover_config {
	unsigned workers;        /* 1..16 */
	double rate_mib;         /* MiB/s for the whole host, 0: no limit */
	double chunk_ms;         /* target duration of one move call */
	double job_timeout_s;
	/* Run a job's worker on the CPUs of its target nodes (the copy then
	 * writes local memory), within the daemon's own CPUs. */
	bool on_target;
};

struct mover_spec {
	char guest[GUEST_ID_MAX];
	char cause[32];          /* why it moves (the plan's reason): a metrics label */
	unsigned npids;
	const pid_t *pids;       /* copied */
	nodemask_t to;           /* where the pages go (never empty) */
	/* Where each process's pages go instead ([npids], copied; each
	 * within TO), NULL: all to TO. A pod's job whose containers have
	 * targets of their own (plan_part): each process's pages go to its
	 * container's nodes. */
	const nodemask_t *pid_to;
	uint64_t bytes;          /* what the plan expects to move (progress, ETA) */
	/* A guest whose memory does not fit one node, its threads on one
	 * (policy: split): up to first_bytes of its pages off node FIRST —
	 * from TO's other nodes too — go to FIRST before anything else, so
	 * the threads' node holds the largest share it has room for.
	 * first_bytes 0: no such node (FIRST is then ignored). */
	int first;
	uint64_t first_bytes;
	/* The applier found the room for it partly still to come (other
	 * jobs' pages leaving the target, snap_node.mem_leaving): before
	 * each move call the job waits until the call's target nodes have
	 * room for it above MIN_FREE_BYTES (MemFree, mover_set_meminfo),
	 * so no page lands on a node without room; it waits only while
	 * another job is moving pages (mover_peer_frees), and otherwise,
	 * still without room, it fails at once. */
	bool wait_room;
	uint64_t min_free_bytes; /* the reserve, at most this share of a node */
	double min_free_share;   /* (policy_reserve) */
	/* A job that is one call, not page moves: a worker calls
	 * WRITE(WRITE_CTX, MSG, MSGSZ) once — a start binding's cpuset.mems
	 * write, inside which the kernel migrates what the guest touched
	 * (engine_cycle.c) — so that the engine thread does not wait for it.
	 * It returns 0 (the job ends done), -ENOENT or -ESRCH (vanished), or
	 * another negative errno (failed, MSG says why). Once running it
	 * cannot be stopped (a kernel write), and mover_stop_all does not
	 * wait for it; queued, it can be superseded,
	 * cancelled or stopped like any job. NPIDS and PIDS are unused; the
	 * caller owns WRITE_CTX until the job is taken as finished. */
	int (*write)(void *ctx, char *msg, size_t msgsz);
	void *write_ctx;
};

/* One node a job moves pages off. FOUND is what its census counted there
 * when the job started (its processes' /proc/PID/numa_maps: pages off
 * the target, every page with relocate_all, moverfixture.h); DONE is what has since been
 * moved from there onto the target (a source the census did not see, the
 * pages came later, has FOUND 0). */
struct mover_source {
	int node;
	int to;                  /* the target node they go to (mover_pick_target; FIRST for a split job) */
	uint64_t found, done;    /* bytes */
};

/* Sources a job keeps apart; pages on further nodes count in its totals
 * (other_found/other_done) only. */
#define MOVER_MAX_SOURCES 64

struct mover_job_info {
	uint64_t id;
	char guest[GUEST_ID_MAX];
	char cause[32];
	nodemask_t from, to;     /* from: the nodes pages were found on to move off */
	enum mover_state state;
	uint64_t bytes_expected; /* what the plan expected (memory.numa_stat) */
	uint64_t bytes_done;     /* pages now on the target that were not */
	bool census;             /* the sources' FOUND are known (the job has started) */
	/* A split job (mover_spec.first): its pages go to FIRST while FIRST
	 * has room, so its sources' target is FIRST; pages it moves onto
	 * FIRST from its other target nodes are not in the census (they are
	 * on the target already): their source's DONE grows, FOUND stays 0. */
	bool has_first;
	int first;
	unsigned nsources;
	struct mover_source sources[MOVER_MAX_SOURCES]; /* in the order first seen */
	uint64_t other_found, other_done;
	/* After its walk (mover_settle_step): what the kernel's NUMA
	 * balancing moved onto the target on fault while the job waited, and
	 * what migrate_pages(2) moved of what was left (pages the walk's
	 * move_pages(2) calls could not see: on 6.1 kernels it answers
	 * EFAULT for a page marked for a NUMA hinting fault). Both are in
	 * BYTES_DONE; LEFT_END what numa_maps still showed off the target. */
	uint64_t kernel_bytes, swept_bytes, left_end;
	/* A write job (mover_spec.write): its pages are moved by the kernel
	 * inside the write, not by this mover's calls, so BYTES_DONE stays 0
	 * and CHUNKS 0. */
	bool write;
	uint64_t chunks;         /* move calls made */
	double stall_max_ms;     /* the longest move call */
	double stall_p99_ms;     /* the 99th percentile of its calls, once it ended (NAN: no call) */
	int64_t queued_real_ns, started_real_ns, ended_real_ns; /* 0: not yet */
	double elapsed_s;        /* running time so far (or in all) */
	char msg[320];           /* the error that ended it, or "" */
};

/* Chunk stall histogram bounds, ms. */
#define MOVER_NR_BUCKETS 10
extern const double mover_stall_buckets_ms[MOVER_NR_BUCKETS];

#define MOVER_NR_CAUSES 12
struct mover_stats {
	unsigned running, queued;
	uint64_t jobs_by_state[MJ_NR_STATES]; /* finished jobs by how they ended */
	unsigned nr_causes;
	struct {
		char cause[32];
		uint64_t bytes;
	} moved[MOVER_NR_CAUSES];
	uint64_t stall_count;
	double stall_sum_s;
	uint64_t stall_le[MOVER_NR_BUCKETS]; /* cumulative: calls at or under each bound */
	uint64_t query_count;        /* move_pages(2) calls that only asked where pages are */
	double query_sum_s;
};

struct mover;

/* Starts CFG->workers threads. HP: where /proc is. */
int mover_new(const struct mover_config *cfg, const struct host_paths *hp, struct mover **out);
/* Stops every job at a chunk boundary, joins the threads. NULL is fine.
 * false: a write job was still running (mover_stop_all); the mover and
 * its threads are then left to the process's exit, not freed. */
bool mover_free(struct mover *m);
/* New rate, chunk size, timeout, and more workers (never fewer until restart). */
void mover_set_config(struct mover *m, const struct mover_config *cfg);

/* Queue a job; a live job of the same guest is superseded. Returns its
 * id (≥ 1). */
uint64_t mover_submit(struct mover *m, const struct mover_spec *spec);
/* End job ID at its next chunk boundary as WHY (MJ_CANCELLED,
 * MJ_SUPERSEDED, MJ_STOPPED). 0, -ENOENT if unknown, -EALREADY if it
 * already ended. */
int mover_cancel(struct mover *m, uint64_t id, enum mover_state why);
/* The live job of GUEST, 0 if none. */
uint64_t mover_job_of(struct mover *m, const char *guest);
/* Stop every live job (SIGTERM, reload) and wait until none runs but
 * write jobs (mover_spec.write) already running: nothing stops those and
 * they are not waited for. Returns how many of them still run. */
unsigned mover_stop_all(struct mover *m);
/* Wait until no job is queued or running, at most TIMEOUT_S; true if idle. */
bool mover_wait_idle(struct mover *m, double timeout_s);

/* Every job known (live, then the most recent finished ones), a copy the
 * caller frees. Returns the count. */
unsigned mover_list(struct mover *m, struct mover_job_info **out);
/* One job; false if unknown. */
bool mover_get(struct mover *m, uint64_t id, struct mover_job_info *out);
/* Jobs that ended since the last call (caller frees). */
unsigned mover_take_finished(struct mover *m, struct mover_job_info **out);
/* The node memory reader wait_room jobs use (the sources' reader,
 * source_ops.read_meminfo: fills mem_free of NODES[NR] by id). Without
 * one a wait_room job fails at its first move call. */
void mover_set_meminfo(struct mover *m,
		       int (*read_meminfo)(const struct host_paths *hp, struct snap_node *nodes, unsigned nr));
/* Add every live job's memory in flight to S's nodes (mover_flows_add). */
void mover_flows(struct mover *m, struct snapshot *s);
/* Lay each guest's live job (the one mover_job_of names) on S's guest
 * (snap_guest.job, mover_job_fact). */
void mover_note_jobs(struct mover *m, struct snapshot *s);
/* Readable while finished jobs wait to be taken (poll it). */
int mover_event_fd(const struct mover *m);
void mover_get_stats(struct mover *m, struct mover_stats *out);

/* ---- the pure part: mappings → chunks (mover_plan.c) ------------ */

/* A transparent huge page on x86-64 (PMD size): the unit a guessed THP
 * moves in, and the alignment that guess needs. */
#define MOVER_THP_BYTES (2u << 20)
/* The fewest and most pages one move call carries (mover_adapt_chunk,
 * mover_cost_next); the most is also a query window's size. */
#define MOVER_MIN_CHUNK 16
#define MOVER_MAX_CHUNK 65536

struct mover_vma {
	uintptr_t start, end;
	uint64_t thp_bytes;          /* smaps' AnonHugePages + ShmemPmdMapped +
				      * FilePmdMapped: PMD-mapped THPs (0 from maps) */
	uint64_t hpage;              /* smaps' KernelPageSize in bytes (0 from maps):
				      * above the base page size, a hugetlb mapping */
};

/* A hugetlb mapping of N huge pages whose Ith is on node STATUS[i]
 * (negative: not present) may move at most ALLOWED of them onto TO (the
 * free pages of their size there: where there are none the kernel makes
 * surplus pages out of free memory and changes the pools). Returns how
 * many huge pages from its start the walk may take (all N when ALLOWED
 * covers every page off TO), and *LEFT the pages off TO beyond them. */
size_t mover_huge_cut(const int *status, size_t n, const nodemask_t *to, uint64_t allowed, uint64_t *left);

/* Parse /proc/PID/maps or /proc/PID/smaps text into the ranges worth
 * walking: readable or writable private or shared mappings, without
 * [vsyscall], [vvar], [vdso] and PROT_NONE guard areas; from smaps also
 * each one's AnonHugePages and KernelPageSize. Caller frees *OUT. Returns the count or
 * -EINVAL on a malformed line. */
int mover_parse_maps(const char *text, struct mover_vma **out);

/* One mapping as the job's census saw it (/proc/PID/numa_maps): where it
 * starts, and whether any of its pages sat on a node they are to leave. */
struct mover_census_vma {
	uintptr_t start;
	bool moves;
};

/* Each mapping of numa_maps TEXT, ascending by start: MOVES when it holds
 * a page on a node outside STAY (any page at all when STAY is NULL: a
 * relocate_all job). Lines that do not start with an address are
 * skipped. Caller frees *OUT; returns the count. */
unsigned mover_census_vmas(const char *text, const nodemask_t *stay, struct mover_census_vma **out);

/* Drop from VMAS (NV of them, ascending) the mappings CENSUS (NC,
 * ascending) saw with nothing to move: no window then asks about, plans
 * or moves their pages. A mapping the census did not see (mapped since,
 * or split) stays. Returns how many are left, in order. */
unsigned mover_prune_vmas(struct mover_vma *vmas, unsigned nv, const struct mover_census_vma *census, unsigned nc);

/* Which pages of a window of N pages at PAGES (ascending, inside VMAS)
 * must be asked where they are: all, except those of a 2 MiB block of a
 * mapping whose PMD-mapped THPs (thp_bytes) cover every aligned 2 MiB block in it —
 * each such block is a THP mapped whole, on one node, and its first page
 * (in the window too) answers for it. Window indexes into ASK, ascending;
 * returns the count (N: ask them all). */
size_t mover_query_plan(void *const *pages, size_t n, size_t page, const struct mover_vma *vmas, unsigned nv,
			size_t *ask);

/* Whether any of VMAS overlapping [LO, HI] holds a PMD-mapped THP (smaps):
 * elsewhere a 2 MiB run on one node is 4 KiB pages, and no THP is
 * guessed (mover_plan_window's COMPACT). */
bool mover_window_has_thp(const struct mover_vma *vmas, unsigned nv, uintptr_t lo, uintptr_t hi);

/* STATUS of the window's N pages from the answers QSTATUS for the NQ
 * pages ASK (mover_query_plan): a page not asked is where the THP head
 * before it is. */
void mover_query_expand(int *status, size_t n, const size_t *ask, size_t nq, const int *qstatus);

/* A cursor over VMAS: the next range of at most MAX_PAGES pages of PAGE
 * bytes, never crossing a mapping's end. *POS is an address (0: the
 * start). Returns the pages in the chunk (*START its first address) and
 * advances *POS; 0 at the end. */
size_t mover_next_chunk(const struct mover_vma *vmas, unsigned n, size_t page, size_t max_pages,
			uintptr_t *pos, uintptr_t *start);

/* Fill PAGES with the addresses of the next at most MAX_PAGES pages of
 * VMAS from *POS on (across mappings: a window spans as many as fit, so
 * a process of many small mappings costs few move calls); advances *POS.
 * Returns the count, 0 at the end. */
size_t mover_fill_window(const struct mover_vma *vmas, unsigned n, size_t page, size_t max_pages, uintptr_t *pos,
			 void **pages);

/* The entries to move of one window of N pages at PAGES (ascending
 * addresses): STATUS[i] is the node of page PAGES[i] (negative: not
 * present). Pages off TO (every present page with ALL) go in IDX (window
 * indexes), each with the pages it stands for in WEIGHT: with COMPACT a
 * 2 MiB-aligned, contiguous run of 2 MiB of pages all on one node is one
 * entry (probably a THP, which moves whole from one entry — and each
 * move_pages call has a fixed cost). Returns the count. */
size_t mover_plan_window(const int *status, void *const *pages, size_t n, size_t page, const nodemask_t *to,
			 bool all, bool compact, size_t *idx, int *weight);

/* After a move of the K entries IDX/WEIGHT and a new query STATUS of the
 * window: true if a guessed THP (weight > 1) has its head on TO but
 * another of its pages off TO — the run was 4 KiB pages. */
bool mover_guess_failed(const int *status, size_t n, const size_t *idx, const int *weight, size_t k,
			const nodemask_t *to);

/* What to ask after a move of the K entries IDX/WEIGHT of a window at
 * PAGES, instead of the whole window: for each guessed THP (weight > 1)
 * its middle and last page, into SAMPLE (room for 2 * K). A weight-1
 * entry needs nothing: the move call's own status says where it is.
 * Returns the count (0: no query needed at all). */
size_t mover_verify_plan(void *const *pages, const size_t *idx, const int *weight, size_t k, void **sample);

/* STATUS (the window's query before the move) updated from the move's
 * own answers MSTATUS and the SAMPLE query's answers SSTATUS (in
 * mover_verify_plan's order): a weight-1 entry that moved is where its
 * status says; a guessed THP is wholly where its head went when both its
 * samples are there too. false when a sample disagrees (the run was
 * 4 KiB pages, or something else moved them): STATUS is then partly
 * updated and the caller must query the whole window. Entries whose move
 * failed keep their old place. */
bool mover_verify_apply(int *status, const size_t *idx, const int *weight, const int *mstatus, size_t k,
			const int *sstatus);

/* The next slice of the K entries of a window from OFF (WEIGHT: pages of
 * PAGE bytes each): as many as fit WANT bytes (at least one entry) — or
 * all the rest when it totals at most LIMIT bytes (LIMIT >= WANT: the
 * caller's slack), since a call of its own for a tail of a few pages
 * pays a move call's fixed cost again. *BYTES gets the slice's bytes.
 * Returns its entries, 0 when OFF >= K. */
size_t mover_slice(const int *weight, size_t off, size_t k, size_t page, size_t want, size_t limit,
		   size_t *bytes);

/* Whether a window's second pass is worth a move call: LEFT bytes are
 * still off the target after a first pass that planned PLANNED bytes.
 * false when what is left is both at most 256 KiB and at most 1/32 of
 * PLANNED (the narrowing of the guest's mems moves those few pages). */
bool mover_second_pass(uint64_t left, uint64_t planned);

/* The next chunk size for a call of ELAPSED_MS that moved PAGES pages,
 * aiming at TARGET_MS, between 16 and 65536 pages. */
size_t mover_adapt_chunk(size_t pages, double elapsed_ms, double target_ms);

/* One job's record of its move calls' rates (pages per ms).
 * Zero-initialise. */
struct mover_cost {
	double best_eff, prev_eff;
	size_t best_pages, prev_pages;
	unsigned calls;
	bool capped;             /* the last call was sized by MOVER_CALL_MAX_MS */
};

/* After a call of PAGES pages (a THP counts 512) that took MS, with the
 * chunk at CHUNK: the next call's pages. Toward TARGET_MS
 * (mover_adapt_chunk, from the call's own size where that was bigger:
 * one THP is 512 pages even when the chunk asked for less) — unless the
 * call's rate fell under 4/5 of the best rate a bigger call of the job
 * reached (the fixed cost of each call — every CPU's LRU cache drained,
 * the first shootdown of a busy vCPU; not measured apart: a move call of
 * no pages costs less — is then over a fifth of it: smaller calls would only move
 * less, as the kernel migrates, and the guest waits, page by page), or
 * a bigger call just moved 1.25x faster: then it doubles. The best rate
 * fades by 5 % a call. Neither rule may plan a call that the rate just
 * measured puts over MOVER_CALL_MAX_MS (each call is a stall the guest
 * may feel), and a call that took longer than that shrinks the next one
 * to TARGET_MS at once. Between 16 and 65536. */
#define MOVER_CALL_MAX_MS 500.0
size_t mover_cost_next(struct mover_cost *c, size_t pages, size_t chunk, double ms, double target_ms);

/* After a move of the K entries IDX (window indexes) answered MSTATUS,
 * and a new query STATUS of the window: the pages the kernel refused for
 * good — -EACCES (mapped by other processes too: MPOL_MF_MOVE moves only
 * a process's own pages), -EFAULT and -ENOENT (nothing there to move) —
 * get that error in STATUS, so the next pass does not try them again
 * (else every window whose pass 0 met such a page pays a second move
 * call, and its fixed cost, for nothing). Returns how many. */
size_t mover_drop_refused(int *status, const size_t *idx, const int *mstatus, size_t k);

/* What a window's move put on TO, by where each page was: FIRST[i] is
 * page i's node before the window's first pass, STATUS[i] its node now
 * (both negative: not present). A page counts when it is on TO now and
 * was off it — or on another node of TO (a move onto mover_spec.first).
 * BY_NODE (MASK_MAX_NODES entries, zeroed by the caller) gets the pages
 * of each source node. Returns the total. */
size_t mover_window_moved(const int *first, const int *status, size_t n, const nodemask_t *to, long *by_node);

/* The target node for a page on node FROM: spread over TO's nodes by
 * FROM's position, so one source node's pages land on one target node. */
int mover_pick_target(const nodemask_t *to, int from);

/* Targets for the K entries a window planned (IDX into STATUS, WEIGHT in
 * pages of PAGE bytes), planned against {FIRST} while *FIRST_LEFT > 0 and
 * against TO otherwise. While *FIRST_LEFT covers an entry it goes to
 * FIRST (off *FIRST_LEFT); after that an entry already on TO stays (it is
 * dropped) and the others go by mover_pick_target among TO less FIRST
 * (FIRST has no room left). FIRST < 0: mover_pick_target for all.
 * NODES[e] gets each kept entry's target; IDX and WEIGHT are compacted
 * in place. Returns the entries kept. */
size_t mover_assign_targets(const int *status, size_t *idx, int *weight, size_t k, size_t page,
			    const nodemask_t *to, int first, uint64_t *first_left, int *nodes);

/* Memory in flight of one live job J, by its guest's memory in S now
 * (memory.numa_stat, fresher than the job's census): what sits off J's
 * target leaves its node (mem_leaving) and comes onto the target node
 * its pages go to (mover_pick_target; a split job's to FIRST), in
 * mem_coming. Nothing for a job that ended or a guest not in S. */
void mover_flows_add(const struct mover_job_info *j, struct snapshot *s);

/* Whether a move call of BYTES may land on a node with MEM_FREE free:
 * it must stay above MIN_FREE (the reserve) after the call. */
bool mover_room_ok(uint64_t mem_free, uint64_t min_free, uint64_t bytes);
/* The same for a job waiting for room (mover_spec.wait_room) while other
 * waiting jobs' calls in flight have CLAIMED bytes of the node's room:
 * their pages may not show in MEM_FREE yet. */
bool mover_room_claim_ok(uint64_t mem_free, uint64_t claimed, uint64_t min_free, uint64_t bytes);

/* Whether another live job may free room a waiting job (wait_room)
 * counts on: it must be moving pages — running, not stopping, not itself
 * waiting for room (ROOM_WAITING) — or queued while a worker is free to
 * take it (WORKER_FREE). */
bool mover_peer_frees(enum mover_state st, bool stopping, bool room_waiting, bool worker_free);

/* What a plan sees of job J (snap_guest.job). */
void mover_job_fact(const struct mover_job_info *j, struct snap_job *out);
/* snap_job_same_move (hold.h) of J. */
bool mover_job_same_move(const struct mover_job_info *j, const nodemask_t *to, int first, uint64_t first_bytes);

/* What a wait_room job does after a look at its target nodes: ROOM
 * (they have it above the reserve, less claims): take it; else, while
 * OTHERS_MOVING (mover_peer_frees of some other job): wait; else look
 * once more (the free memory was read before the others were seen, and
 * a job that ended between the two may have freed it), and fail at
 * once when the previous look too saw no job moving (LOOKED_QUIET). */
enum mover_room_step { MOVER_ROOM_TAKE, MOVER_ROOM_WAIT, MOVER_ROOM_LOOK_AGAIN, MOVER_ROOM_FAIL };
enum mover_room_step mover_room_step(bool room, bool others_moving, bool looked_quiet);

/* After a window's passes: its pages the walk saw and leaves off TO on
 * purpose — present off TO (a second pass not worth its call, pages in
 * flight) or refused for good as shared with other processes (-EACCES:
 * MPOL_MF_MOVE moves a process's own pages only). numa_maps counts these
 * too; the settle step below must not take them for pages it could not
 * see. */
size_t mover_window_left(const int *status, size_t n, const nodemask_t *to);

/* What a job does once it has walked its processes, from its
 * processes' anonymous memory still off the target that its walk did not
 * see (numa_maps, which counts a page marked for a NUMA hinting fault
 * where move_pages(2) may not see it, less mover_window_left): LEFT now, PREV at the last look (UINT64_MAX: none yet),
 * WAITED_S since the walk. Done under LEFT_MIN_BYTES; else wait
 * (MOVER_SETTLE_POLL_S) while what is left shrinks by at least a tenth
 * or LEFT_MIN_BYTES a look — the kernel's balancing moving the pages its
 * threads touch — up to MOVER_SETTLE_MAX_S, and first once to see;
 * then sweep the rest with migrate_pages(2). */
#define LEFT_MIN_BYTES (2ULL << 20)
#define MOVER_SETTLE_POLL_S 0.5
#define MOVER_SETTLE_MAX_S 5.0
enum mover_settle { MOVER_SETTLE_DONE, MOVER_SETTLE_WAIT, MOVER_SETTLE_SWEEP };
enum mover_settle mover_settle_step(uint64_t left, uint64_t prev, double waited_s);

/* The sweep's calls, one source node each: migrate_pages(2) moves every
 * page of a process on its FROM nodes in one call, with no address range,
 * so a node is the smallest piece it can be asked for, and one call per
 * node bounds each stall by that node's share instead of the whole
 * remainder, which beside the kernel's balancing can be hundreds of MiB.
 * From BY_ID (bytes per node id, NR entries), the nodes off TO,
 * largest first, until what the rest hold is under MIN_LEFT (not worth
 * a call: the job is done below LEFT_MIN_BYTES anyway). Writes at most
 * NR node ids to OUT; returns how many. */
unsigned mover_sweep_nodes(const uint64_t *by_id, unsigned nr, const nodemask_t *to, uint64_t min_left, int *out);

/* The 99th percentile of N call stalls MS (nearest rank; sorts MS in
 * place); NAN for none. */
double mover_stall_p99(double *ms, unsigned n);

/* The most one sweep call may move: what the job's own move calls moved
 * in MOVER_SWEEP_MAX_MS at the rate they reached (WALK_BYTES in WALK_MS),
 * or LEFT_MIN_BYTES when they moved nothing to measure by. A node's
 * remainder over it is not swept — migrate_pages(2) cannot be asked for
 * less, and the guest would stall for the whole of it — but left to the
 * kernel's balancing, which moves each of those pages (marked for its
 * hinting fault) when the guest touches it, or stays where it is if
 * never touched. */
#define MOVER_SWEEP_MAX_MS 100.0
uint64_t mover_sweep_cap(uint64_t walk_bytes, double walk_ms);

/* ---- the pure part: what a worker keeps from one job to the next ---- */

/* The pages of VMAS (of PAGE bytes), saturating at SIZE_MAX. */
size_t mover_vmas_pages(const struct mover_vma *vmas, unsigned n, size_t page);

/* A worker's window buffers hold CAP entries; a walk needs NEED (its
 * process's pages, at most MAX: the query window). The capacity to have:
 * CAP when it is enough (buffers are kept from job to job: allocating,
 * zeroing and unmapping a few MiB per job can cost a busy guest's job as
 * much as its move call; orchestrator/README.md), else NEED but at least
 * twice CAP, never over MAX. Never shrinks. */
size_t mover_buf_grow(size_t cap, size_t need, size_t max);

/* What a worker does with its CPU affinity at the start of a job. */
enum mover_pin {
	MOVER_PIN_NONE = 0,  /* not pinned, none wanted: nothing */
	MOVER_PIN_KEEP,      /* already on the CPUs of the job's target nodes: nothing */
	MOVER_PIN_SET,       /* onto the CPUs of the job's target nodes */
	MOVER_PIN_RESTORE,   /* pinned, none wanted (on_target off): back to its own CPUs */
};

/* ON_TARGET: the config asks for the target's CPUs; PINNED: the worker
 * is pinned, to the CPUs of PINNED_TO's nodes; TO: the job's target.
 * A worker stays pinned after a job (it sleeps between jobs, where it
 * runs does not matter), so a next job to the same nodes makes no
 * affinity call, which is slow when that node's CPUs are busy. */
enum mover_pin mover_pin_action(bool on_target, bool pinned, const nodemask_t *pinned_to, const nodemask_t *to);

/* ---- the pure part: what the mover can do, measured ---- */

/* The host-wide rate the mover reached, from the last MOVER_RATE_JOBS
 * jobs that moved pages (the engine keeps it from the finished jobs'
 * records): their bytes over the time at least one of them ran, so jobs
 * that ran side by side count together, as the workers do. Zero it. */
#define MOVER_RATE_JOBS 8
struct mover_rate {
	unsigned n, next;
	struct {
		int64_t start_ns, end_ns;
		uint64_t bytes;
	} j[MOVER_RATE_JOBS];
};

/* Count a job that ran from START_NS to END_NS (one clock) and moved
 * BYTES; one that moved under 1 MiB (a write job, a guest already in
 * place) or has no run time says nothing of the rate and is left out. */
void mover_rate_add(struct mover_rate *r, int64_t start_ns, int64_t end_ns, uint64_t bytes);
/* MiB/s; 0 until a job was counted. */
double mover_rate_mibs(const struct mover_rate *r);

/* ---- the pure part: a job's accounting by source node ---- */

/* The index of J's source NODE in J->sources, added (with its target) if
 * new; MOVER_MAX_SOURCES when J has no room left (the "other" counters). */
unsigned mover_source_slot(struct mover_job_info *j, int node);
/* Add what /proc/PID/numa_maps TEXT of one of J's processes holds off J's
 * target (ALL: every page, relocate_all) to its sources' FOUND. */
void mover_census_add(struct mover_job_info *j, const char *text, bool all);
/* BYTES moved from source SLOT onto the target (negative: a correction,
 * clamped at 0), in the source's DONE and the job's BYTES_DONE. */
void mover_add_done(struct mover_job_info *j, unsigned slot, int64_t bytes);
/* What is left to move of source S: FOUND - DONE, never below 0. */
uint64_t mover_source_left(const struct mover_source *s);
/* What is left of the whole job: its sources' left plus the other
 * nodes'; before the census (queued) the plan's expectation minus DONE. */
uint64_t mover_job_left(const struct mover_job_info *j);

#endif
