/* The mover: jobs queued by the engine, worker threads that walk each
 * job's processes and move their pages with move_pages(2) and
 * migrate_pages(2) within a rate budget and the target nodes' room, and
 * the record of each job for the API. What to move and in which calls
 * is decided by the pure part, mover_plan.c. */
#include "orchestrator/mover/mover.h"
#include "orchestrator/mover/moverfixture.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/numamig.h"
#include "orchestrator/base/numamaps.h"
#include "orchestrator/model/policy.h"
#include "orchestrator/base/procstat.h"
#include "orchestrator/base/strtab.h"

#define MAX_WORKERS 16
#define KEEP_FINISHED 32
#define FIRST_CHUNK 1024
/* The least a move call carries (budget permitting): see run_window. */
#define MIN_SLICE_BYTES (16u << 20)
#define QUERY_PAGES MOVER_MAX_CHUNK
#define MAPS_MAX (16u << 20)

const double mover_stall_buckets_ms[MOVER_NR_BUCKETS] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };

/* What the census read of one of a job's processes, by mapping
 * (mover_census_vmas); OK false when its numa_maps could not be read. */
struct pid_census {
	struct mover_census_vma *vmas;
	unsigned n;
	bool ok;
};

/* One target group of a job: those of its processes whose pages go to
 * the same nodes (mover_spec.pid_to; a job without per-process targets,
 * or a split job, is one). A job's walks run at once, each on a worker of
 * its own, so a pod split over its containers moves every container's
 * memory at the same time instead of one container after another; the
 * job stays one record (its counters, stalls, state) under the mover's
 * lock. A walk's fields below are its worker's while it is taken, except
 * ROOM_WAITING and STATE (under the lock). */
enum walk_state { WALK_WAITING = 0, WALK_TAKEN, WALK_ENDED };

struct walk {
	struct job *job;
	nodemask_t to;               /* where its processes' pages go */
	unsigned *pidx;              /* its processes: indexes into job->pids */
	unsigned npidx;
	enum walk_state state;       /* under the lock */
	bool room_waiting;           /* in room_take's wait: frees nothing meanwhile (under the lock) */
	uint64_t first_left;         /* bytes FIRST may still take */
	uint64_t seen_left;          /* bytes it saw and left off the target (mover_window_left) */
	uint64_t walk_bytes;         /* what its move calls moved, in WALK_MS (mover_sweep_cap) */
	double walk_ms;
	unsigned alive;              /* its processes that had not exited */
	char room_msg[140];          /* why it ended for want of room */
	/* Huge pages left off the target for want of free pages of their
	 * size there (huge_limit): bytes, and the words. */
	uint64_t huge_left;
	char huge_msg[160];
	/* What its move call in flight claimed of its target nodes' room
	 * (room_take; struct mover.claim): its own arrays, the claim itself
	 * under the mover's lock. */
	int *claim_id;
	uint64_t *claim_b;
	unsigned nclaim;
};

struct job {
	struct mover_job_info info;
	pid_t *pids;
	unsigned npids;
	struct pid_census *pc;       /* npids of them, from census() by the job's first walk */
	/* Each process's own target (mover_spec.pid_to), NULL: info.to for all. */
	nodemask_t *pid_to;
	struct walk *walks;          /* its target groups (job_walks) */
	unsigned nwalks;
	unsigned next_walk;          /* walks taken (or skipped) so far, in order (under the lock) */
	unsigned active;             /* walks being walked now (under the lock) */
	bool relocate_all;           /* the test build's knob, moverfixture.h: every page moves */
	int first;                   /* mover_spec.first, -1: none */
	/* The walks' results, summed as each ends (under the lock); what the
	 * job's settle step reads once they all have. */
	uint64_t seen_left, walk_bytes, huge_left;
	double walk_ms;
	unsigned alive;
	char huge_msg[160];
	bool walk_stopped;           /* a walk ended at a chunk boundary for stop_reason */
	bool failing;                /* a walk failed: the others stop, the job ends failed */
	char fail_msg[sizeof(((struct mover_job_info *)0)->msg)];
	uint64_t left_kernel;        /* what the sweep left to the kernel's balancing (the settling worker's) */
	double *stalls;              /* every move call's stall, ms (for its p99; under the lock) */
	unsigned nstalls, capstalls;
	enum mover_state stop_as;    /* != MJ_QUEUED: end at the next chunk boundary as this */
	int64_t start_mono, deadline_mono;
	bool wait_room;              /* mover_spec.wait_room */
	uint64_t min_free;
	double min_free_share;
	int (*write)(void *ctx, char *msg, size_t msgsz); /* mover_spec.write */
	void *write_ctx;
	struct job *next;
};

struct mover {
	struct host_paths hp;
	pthread_mutex_t lock;
	pthread_cond_t work;         /* a job was queued, a stop was asked */
	pthread_cond_t idle;         /* a job ended */
	struct mover_config cfg;
	struct job *live;            /* queued and running, oldest first */
	struct mover_job_info finished[KEEP_FINISHED]; /* ring, for the API */
	unsigned nfinished, finished_head;
	struct mover_job_info *untaken; /* ended, not yet taken by the engine */
	unsigned nuntaken, capuntaken;
	uint64_t next_id;
	unsigned running;
	bool stopping;
	int efd;
	pthread_t threads[MAX_WORKERS];
	unsigned nthreads;
	int (*read_meminfo)(const struct host_paths *hp, struct snap_node *nodes, unsigned nr);
	/* Bytes of each node's room (by node id) that waiting jobs' move
	 * calls in flight have claimed: two jobs waiting for the same room
	 * both saw it free, and both moved, one of them into the reserve. */
	uint64_t claim[MASK_MAX_NODES];
	double tokens;               /* rate budget, bytes (negative: debt) */
	int64_t tokens_mono;
	struct mover_stats st;
};

/* ---- jobs ------------------------------------------------------------ */

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->pids);
	free(j->pid_to);
	for (unsigned i = 0; j->pc && i < j->npids; i++)
		free(j->pc[i].vmas);
	free(j->pc);
	for (unsigned i = 0; j->walks && i < j->nwalks; i++) {
		free(j->walks[i].pidx);
		free(j->walks[i].claim_id);
		free(j->walks[i].claim_b);
	}
	free(j->walks);
	free(j->stalls);
	free(j);
}

static void notify(struct mover *m)
{
	uint64_t one = 1;

	if (m->efd >= 0 && write(m->efd, &one, sizeof(one)) < 0)
		log_debug("mover: eventfd write: %s", strerror(errno));
}

/* Under the lock: J left the live list; keep it for the API and the engine. */
static void record_finished(struct mover *m, struct job *j, enum mover_state st)
{
	j->info.state = st;
	j->info.ended_real_ns = clock_real_ns();
	j->info.stall_p99_ms = mover_stall_p99(j->stalls, j->nstalls);
	if (j->start_mono)
		j->info.elapsed_s = (double)(clock_mono_ns() - j->start_mono) / 1e9;
	m->finished[m->finished_head] = j->info;
	m->finished_head = (m->finished_head + 1) % KEEP_FINISHED;
	if (m->nfinished < KEEP_FINISHED)
		m->nfinished++;
	if (m->nuntaken == m->capuntaken) {
		m->capuntaken = m->capuntaken ? m->capuntaken * 2 : 8;
		m->untaken = xrealloc(m->untaken, m->capuntaken * sizeof(*m->untaken));
	}
	m->untaken[m->nuntaken++] = j->info;
	m->st.jobs_by_state[st]++;
	notify(m);
	pthread_cond_broadcast(&m->idle);
}

static void unlink_job(struct mover *m, struct job *j)
{
	for (struct job **pp = &m->live; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			return;
		}
}

static void add_moved(struct mover *m, const char *cause, uint64_t bytes)
{
	unsigned i;

	for (i = 0; i < m->st.nr_causes; i++)
		if (strcmp(m->st.moved[i].cause, cause) == 0)
			break;
	if (i == m->st.nr_causes) {
		if (i == MOVER_NR_CAUSES)
			i--; /* the last slot takes the rest */
		else
			snprintf(m->st.moved[m->st.nr_causes++].cause, sizeof(m->st.moved[0].cause), "%s", cause);
	}
	m->st.moved[i].bytes += bytes;
}

static void add_stall(struct mover *m, double ms)
{
	m->st.stall_count++;
	m->st.stall_sum_s += ms / 1e3;
	for (unsigned b = 0; b < MOVER_NR_BUCKETS; b++)
		if (ms <= mover_stall_buckets_ms[b])
			m->st.stall_le[b]++;
}

/* One of J's move calls that took MS: a chunk, its stall in the job's
 * longest and the host's histogram. Under the lock. */
static void note_call(struct mover *m, struct job *j, double ms)
{
	j->info.chunks++;
	if (ms > j->info.stall_max_ms)
		j->info.stall_max_ms = ms;
	if (j->nstalls == j->capstalls) {
		j->capstalls = j->capstalls ? j->capstalls * 2 : 64;
		j->stalls = xrealloc(j->stalls, j->capstalls * sizeof(*j->stalls));
	}
	j->stalls[j->nstalls++] = ms;
	add_stall(m, ms);
}

/* Should J end now? Under the lock. */
static enum mover_state stop_reason(struct mover *m, struct job *j)
{
	if (j->stop_as != MJ_QUEUED)
		return j->stop_as;
	if (j->failing)
		return MJ_FAILED;
	if (m->stopping)
		return MJ_STOPPED;
	if (clock_mono_ns() > j->deadline_mono)
		return MJ_EXPIRED;
	return MJ_QUEUED;
}

static void deadline_ts(struct timespec *ts, double s)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)s;
	ts->tv_nsec += (long)((s - floor(s)) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* The rate budget: take BYTES and sleep until the budget has paid for
 * them (each worker's own debt: workers queue behind each other). false
 * if J must stop. */
static bool rate_take(struct mover *m, struct job *j, size_t bytes)
{
	struct timespec ts;
	double rate, wait_s;
	int64_t now;
	bool ok;

	pthread_mutex_lock(&m->lock);
	rate = m->cfg.rate_mib * 1048576.0;
	if (rate <= 0) {
		pthread_mutex_unlock(&m->lock);
		return true;
	}
	now = clock_mono_ns();
	m->tokens += (double)(now - m->tokens_mono) / 1e9 * rate;
	m->tokens_mono = now;
	/* Bursts of at most 100 ms of budget. */
	if (m->tokens > rate * 0.1)
		m->tokens = rate * 0.1;
	m->tokens -= (double)bytes;
	wait_s = m->tokens < 0 ? -m->tokens / rate : 0;
	/* Never sleep past the job's deadline: it must end on time. */
	if (wait_s > (double)(j->deadline_mono - now) / 1e9)
		wait_s = (double)(j->deadline_mono - now) / 1e9;
	if (wait_s > 0) {
		deadline_ts(&ts, wait_s);
		while (stop_reason(m, j) == MJ_QUEUED &&
		       pthread_cond_timedwait(&m->work, &m->lock, &ts) != ETIMEDOUT)
			;
	}
	ok = stop_reason(m, j) == MJ_QUEUED;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* How often a job waiting for room looks again. */
#define ROOM_POLL_S 0.1

struct bufs;
static bool room_take(struct mover *m, struct walk *w, const struct bufs *b, size_t off, size_t sl, size_t page,
		      int *r);

/* A worker's own state, kept from job to job (freed when it exits): its
 * window buffers and where it runs. */
struct bufs {
	size_t cap;                  /* entries each buffer holds (mover_buf_grow) */
	void **pages, **mpages;
	int *status, *mnodes, *mstatus, *first, *mweight;
	unsigned *mslot;             /* each entry's source (mover_source_slot) */
	size_t *idx;
	void **spages;               /* mover_verify_plan's samples */
	int *sstatus;
	struct mover_cost cost;      /* the job's move calls so far (reset per job) */
	double maps_ms;              /* reading and parsing /proc/PID/maps (--trace) */
	cpu_set_t own;               /* the worker's CPUs when it started */
	bool have_own;               /* OWN was read */
	bool pinned;                 /* on the CPUs of PINNED_TO's nodes (within OWN) */
	nodemask_t pinned_to;
};

/* The window buffers only: the rest of B is the worker's state. */
static void bufs_drop(struct bufs *b)
{
	free(b->pages);
	free(b->mpages);
	free(b->status);
	free(b->mnodes);
	free(b->mstatus);
	free(b->first);
	free(b->mweight);
	free(b->mslot);
	free(b->idx);
	free(b->spages);
	free(b->sstatus);
	b->cap = 0;
}

static void bufs_free(struct bufs *b)
{
	bufs_drop(b);
	memset(b, 0, sizeof(*b));
}

/* Room for NEED entries in every buffer of B. Nothing is carried over:
 * each walk writes a window's entries before it reads them. */
static void bufs_reserve(struct bufs *b, size_t need, size_t page)
{
	size_t cap = mover_buf_grow(b->cap, need, QUERY_PAGES);
	/* two samples per guessed THP, and a THP is MOVER_THP_BYTES of pages */
	size_t thp = page && MOVER_THP_BYTES / page > 1 ? MOVER_THP_BYTES / page : 1;
	size_t scap = 2 * (cap / thp + 1);

	if (cap == b->cap)
		return;
	bufs_drop(b);
	b->pages = xmalloc(cap * sizeof(void *));
	b->mpages = xmalloc(cap * sizeof(void *));
	b->status = xmalloc(cap * sizeof(int));
	b->mnodes = xmalloc(cap * sizeof(int));
	b->mstatus = xmalloc(cap * sizeof(int));
	b->first = xmalloc(cap * sizeof(int));
	b->mweight = xmalloc(cap * sizeof(int));
	b->mslot = xmalloc(cap * sizeof(unsigned));
	b->idx = xmalloc(cap * sizeof(size_t));
	b->spages = xmalloc(scap * sizeof(void *));
	b->sstatus = xmalloc(scap * sizeof(int));
	b->cap = cap;
}

static void room_release(struct mover *m, struct walk *w);
static void room_release_locked(struct mover *m, struct walk *w);

/* Pages a window put on the target, by source slot (the last: "other"). */
typedef long window_tally[MOVER_MAX_SOURCES + 1];

/* Move the K entries of B in slices of about *CHUNK pages (an entry counts
 * its weight; sized by mover_cost_next), within the rate budget, stopping
 * at a slice boundary when J must end. COUNTED gets the pages each slice
 * put on the target by source slot (an entry of weight W counts W when it
 * arrived). 0, 1 (stop), or the negative errno of the call. */
static int move_slices(struct mover *m, struct walk *w, pid_t pid, struct bufs *b, size_t k, size_t *chunk,
		       size_t page, window_tally counted)
{
	struct job *j = w->job;
	int r = 0;

	for (size_t off = 0; off < k && r == 0;) {
		size_t sl = 0, moved = 0, bytes = 0, cap = SIZE_MAX, want;
		int64_t t0, t1;
		double ms;

		/* Under a rate budget a slice is at most 100 ms of it: a bigger
		 * one would sleep through its guest's exit or its deadline. */
		pthread_mutex_lock(&m->lock);
		if (m->cfg.rate_mib > 0)
			cap = (size_t)(m->cfg.rate_mib * 1048576.0 * 0.1);
		pthread_mutex_unlock(&m->lock);
		/* The slice's size comes from the job's own calls
		 * (mover_cost_next), but never under MIN_SLICE_BYTES: where a
		 * single busy THP takes longer than chunk_ms, calls would
		 * shrink to one THP each and the job's rate to one THP a call
		 * (orchestrator/README.md, "Moving memory"). A call's length
		 * is not the guest's stall: the kernel migrates page by page,
		 * so the guest waits only for the page it touches. At least
		 * one entry (a THP is 512 pages). */
		want = *chunk * page;
		if (want < MIN_SLICE_BYTES)
			want = MIN_SLICE_BYTES;
		if (want > cap)
			want = cap;
		/* The rest of the window rides along when it is at most half a
		 * slice more (mover_slice): a second call for a last THP and a
		 * few small pages would pay a call's whole fixed cost. */
		sl = mover_slice(b->mweight, off, k, page, want, want + want / 2 < cap ? want + want / 2 : cap,
				 &bytes);

		if (off) {
			pthread_mutex_lock(&m->lock);
			if (stop_reason(m, j) != MJ_QUEUED)
				r = 1;
			pthread_mutex_unlock(&m->lock);
			if (r)
				break;
		}
		if (!room_take(m, w, b, off, sl, page, &r))
			break;
		if (!rate_take(m, j, bytes)) {
			room_release(m, w);
			r = 1;
			break;
		}
		t0 = clock_mono_ns();
		r = numamig_move(pid, sl, b->mpages + off, b->mnodes + off, b->mstatus + off);
		t1 = clock_mono_ns();
		moverfx_moved(pid, sl);
		if (r < 0 && r != -ENOENT && r != -EBUSY) {
			room_release(m, w);
			break;
		}
		if (r < 0) /* the call's own answer, not each entry's: retry them */
			for (size_t i = 0; i < sl; i++)
				b->mstatus[off + i] = -EAGAIN;
		/* Count what is on the target now from the call's own status (a
		 * THP moves whole from one entry; an entry of one already in
		 * flight reports -EBUSY), by the node each entry came from. A
		 * query call after each move doubled the page-table walks
		 * against a busy writer. */
		ms = (double)(t1 - t0) / 1e6;
		log_debug("mover: job %" PRIu64 " pid %d t=%.1f: move %zu entries (%zu KiB) in %.1f ms%s",
			  j->info.id, (int)pid, (double)t0 / 1e6, sl, bytes >> 10, ms, r < 0 ? " (call failed)" : "");
		pthread_mutex_lock(&m->lock);
		/* The claim ends where the call's pages are counted done, under
		 * the same lock: a call's bytes are always either claimed or
		 * done, never neither (mover_live's room-claims case reads the
		 * room left from the jobs' progress). */
		room_release_locked(m, w);
		for (size_t i = 0; i < sl; i++)
			if (j->relocate_all ||
			    (b->mstatus[off + i] >= 0 && mask_test(&w->to, b->mstatus[off + i]))) {
				/* A guessed THP counts its head alone until its
				 * samples say the rest went with it (walk_process:
				 * credit_thps): a 4 KiB run's head moves alone, and
				 * counting 2 MiB for it would report memory done
				 * that is still on its source for a rate-paced
				 * pass's whole length. */
				size_t one = 1;

				moved += one;
				counted[b->mslot[off + i]] += (long)one;
				mover_add_done(&j->info, b->mslot[off + i], (int64_t)(one * page));
			}
		r = 0;
		off += sl;
		note_call(m, j, ms);
		add_moved(m, j->info.cause, moved * page);
		w->walk_bytes += moved * page;
		w->walk_ms += ms;
		/* The size of the next call: toward chunk_ms, but not where
		 * smaller calls lose the rate (mover_cost_next). */
		*chunk = mover_cost_next(&b->cost, bytes / page, *chunk, ms, m->cfg.chunk_ms);
		pthread_mutex_unlock(&m->lock);
	}
	return r;
}

/* The free memory J leaves on node N (policy_reserve of N's MemTotal, as
 * the sources' reader fills it). */
static uint64_t job_reserve(const struct job *j, const struct snap_node *n)
{
	return policy_reserve(j->min_free, j->min_free_share, n->mem_total);
}

/* mover_spec.wait_room: wait until each target node of the slice of SL
 * entries at OFF has room for its part above the reserve — the room the
 * applier counted on was partly other jobs' pages still leaving. true:
 * go on; false with *R = 1 (J must stop: its deadline, a cancel) or
 * -ENOSPC (no room, and no other live job that could free some:
 * W->room_msg says so). */
/* Under the lock: whether another walk than W — of another job, or
 * another of W's own job, whose pages may leave W's target nodes — may
 * free room (mover_peer_frees). A walk not yet taken is as a queued job;
 * a running job whose walks have all ended is settling, moving pages
 * still, as a running job between its calls. */
static bool others_free(const struct mover *m, const struct walk *w, bool worker_free)
{
	for (const struct job *q = m->live; q; q = q->next) {
		bool stopping = q->stop_as != MJ_QUEUED || q->failing;
		bool any = false;

		if (q->info.state == MJ_QUEUED || !q->walks) {
			if (q != w->job && mover_peer_frees(q->info.state, stopping, false, worker_free))
				return true;
			continue;
		}
		for (unsigned i = 0; i < q->nwalks; i++) {
			const struct walk *o = &q->walks[i];

			if (o->state != WALK_ENDED)
				any = true;
			if (o == w || o->state == WALK_ENDED)
				continue;
			if (mover_peer_frees(o->state == WALK_TAKEN ? q->info.state : MJ_QUEUED, stopping,
					     o->room_waiting, worker_free))
				return true;
		}
		if (!any && q != w->job && mover_peer_frees(q->info.state, stopping, false, worker_free))
			return true;
	}
	return false;
}

static bool room_take(struct mover *m, struct walk *w, const struct bufs *b, size_t off, size_t sl, size_t page,
		      int *r)
{
	struct job *j = w->job;
	unsigned cap = mask_count(&w->to), nd = 0;
	struct snap_node *nodes;
	uint64_t *need;
	bool ok = false;

	if (!j->wait_room)
		return true;
	nodes = xcalloc(cap ? cap : 1, sizeof(*nodes));
	need = xcalloc(cap ? cap : 1, sizeof(*need));
	for (size_t e = off; e < off + sl; e++) {
		unsigned i = 0;

		while (i < nd && nodes[i].id != b->mnodes[e])
			i++;
		if (i == nd) {
			if (nd == cap)
				continue; /* not a target: never planned so */
			nodes[nd++].id = b->mnodes[e];
		}
		need[i] += (uint64_t)b->mweight[e] * page;
	}
	for (bool quiet = false;;) {
		int (*rd)(const struct host_paths *, struct snap_node *, unsigned);
		struct timespec ts;
		unsigned short_i = 0;
		bool others = false, worker_free;
		enum mover_room_step step;
		int rr;

		pthread_mutex_lock(&m->lock);
		rd = m->read_meminfo;
		pthread_mutex_unlock(&m->lock);
		rr = rd ? rd(&m->hp, nodes, nd) : -ENOSYS;
		if (rr < 0) {
			snprintf(w->room_msg, sizeof(w->room_msg), "cannot read the target nodes' free memory: %s",
				 strerror(-rr));
			*r = -ENOSPC;
			break;
		}
		pthread_mutex_lock(&m->lock);
		ok = true;
		for (unsigned i = 0; i < nd && ok; i++) {
			uint64_t cl = m->claim[nodes[i].id];

			if (!mover_room_claim_ok(nodes[i].mem_free, cl, job_reserve(j, &nodes[i]), need[i])) {
				ok = false;
				short_i = i;
			}
			nodes[i].mem_free = nodes[i].mem_free > cl ? nodes[i].mem_free - cl : 0;
		}
		/* Only a job that is really moving pages can free room: one that
		 * waits for room itself frees none, and two such jobs, each
		 * needing what the other's pages would free, waited for each
		 * other until job_timeout. A job between its calls, or in its
		 * first look at the room, still counts as moving. The flags are
		 * read at one instant, after the free memory was: a job that
		 * ended between the two (its last call's pages freed after our
		 * read) is covered by one more look (MOVER_ROOM_LOOK_AGAIN)
		 * before failing. */
		worker_free = m->running < m->cfg.workers;
		others = !ok && others_free(m, w, worker_free);
		step = mover_room_step(ok, others, quiet);
		quiet = !others;
		if (step == MOVER_ROOM_TAKE) {
			if (!w->claim_id) {
				w->claim_id = xcalloc(cap ? cap : 1, sizeof(*w->claim_id));
				w->claim_b = xcalloc(cap ? cap : 1, sizeof(*w->claim_b));
			}
			for (unsigned i = 0; i < nd; i++) {
				m->claim[nodes[i].id] += need[i];
				w->claim_id[i] = nodes[i].id;
				w->claim_b[i] = need[i];
			}
			w->nclaim = nd;
			w->room_waiting = false;
		} else if (stop_reason(m, j) != MJ_QUEUED) {
			*r = 1;
		} else if (step == MOVER_ROOM_LOOK_AGAIN) {
			w->room_waiting = true;
		} else if (step == MOVER_ROOM_FAIL) {
			uint64_t fr = nodes[short_i].mem_free, keep = job_reserve(j, &nodes[short_i]);

			snprintf(w->room_msg, sizeof(w->room_msg),
				 "node %d has %llu MiB free above the reserve, %llu MiB to move onto it, and no other job "
				 "is freeing memory", nodes[short_i].id,
				 (unsigned long long)((fr > keep ? fr - keep : 0) >> 20),
				 (unsigned long long)(need[short_i] >> 20));
			*r = -ENOSPC;
		} else {
			w->room_waiting = true;
			deadline_ts(&ts, ROOM_POLL_S);
			pthread_cond_timedwait(&m->work, &m->lock, &ts);
		}
		pthread_mutex_unlock(&m->lock);
		if (*r || ok)
			break;
	}
	pthread_mutex_lock(&m->lock);
	w->room_waiting = false;
	pthread_mutex_unlock(&m->lock);
	free(nodes);
	free(need);
	return ok;
}

/* The move call room_take() claimed room for has returned: its pages are
 * in the nodes' free memory now (or did not move). Waiting jobs look
 * again. Under the lock (room_release takes it). */
static void room_release_locked(struct mover *m, struct walk *w)
{
	if (!w->nclaim)
		return;
	for (unsigned i = 0; i < w->nclaim; i++)
		m->claim[w->claim_id[i]] -= w->claim_b[i] < m->claim[w->claim_id[i]] ? w->claim_b[i]
										: m->claim[w->claim_id[i]];
	w->nclaim = 0;
	pthread_cond_broadcast(&m->work);
}

static void room_release(struct mover *m, struct walk *w)
{
	pthread_mutex_lock(&m->lock);
	room_release_locked(m, w);
	pthread_mutex_unlock(&m->lock);
}

/* Where N pages of PID are (move_pages(2) without nodes), timed for the
 * stats: queries are the part of a job's time that moves nothing. */
static int query(struct mover *m, pid_t pid, size_t n, void **pages, int *status)
{
	int64_t t0 = clock_mono_ns();
	int r = numamig_move(pid, n, pages, NULL, status);
	int64_t t1 = clock_mono_ns();

	log_debug("mover: pid %d t=%.1f: query %zu pages in %.1f ms", (int)pid, (double)t0 / 1e6, n,
		  (double)(t1 - t0) / 1e6);
	pthread_mutex_lock(&m->lock);
	m->st.query_count++;
	m->st.query_sum_s += (double)(t1 - t0) / 1e9;
	pthread_mutex_unlock(&m->lock);
	return r;
}

/* Where the N pages of B's window are, asking one page per THP of the
 * mappings smaps says are all THPs (mover_query_plan): asking every
 * 4 KiB entry of a THP guest's window is a large share of its job, asking
 * one entry per THP a fraction of that.
 * B's move buffers (idx, mpages, mstatus) are free until the window is
 * planned and hold the asked pages meanwhile. */
static int query_window(struct mover *m, pid_t pid, const struct mover_vma *vmas, unsigned nv, size_t n,
			size_t page, struct bufs *b)
{
	size_t nq = mover_query_plan(b->pages, n, page, vmas, nv, b->idx);
	int r;

	if (nq == n)
		return query(m, pid, n, b->pages, b->status);
	for (size_t q = 0; q < nq; q++)
		b->mpages[q] = b->pages[b->idx[q]];
	r = query(m, pid, nq, b->mpages, b->mstatus);
	if (r < 0)
		return r;
	mover_query_expand(b->status, n, b->idx, nq, b->mstatus);
	return 0;
}

/* The K entries just moved and verified (mover_verify_apply): each
 * guessed THP whose head reached the target took its other pages along —
 * those are counted now (move_slices counted the head). */
static void credit_thps(struct mover *m, struct walk *w, const struct bufs *b, size_t k, size_t page,
			window_tally counted)
{
	struct job *j = w->job;
	uint64_t bytes = 0;

	pthread_mutex_lock(&m->lock);
	for (size_t e = 0; e < k; e++)
		if (b->mweight[e] > 1 && b->mstatus[e] >= 0 && mask_test(&w->to, b->mstatus[e])) {
			size_t rest = (size_t)b->mweight[e] - 1;

			counted[b->mslot[e]] += (long)rest;
			mover_add_done(&j->info, b->mslot[e], (int64_t)(rest * page));
			bytes += rest * page;
		}
	if (bytes)
		add_moved(m, j->info.cause, bytes);
	pthread_mutex_unlock(&m->lock);
}

/* Whether PID has exited. A process killed mid-job is a zombie until its
 * parent reaps it: it still has a /proc entry, but no memory any more, so
 * move_pages(2) answers EINVAL (no mm) rather than ESRCH and its maps read
 * empty; the same holds while it exits, before it is a zombie. Such a
 * process has vanished, not failed. */
static bool process_gone(const struct mover *m, pid_t pid)
{
	char path[256], *text = NULL;
	const char *f[21];
	size_t len;
	bool gone;

	if (snprintf(path, sizeof(path), "%s/%d/stat", m->hp.procfs, (int)pid) >= (int)sizeof(path))
		return false;
	if (fs_read_file(path, 4096, &text, &len) < 0)
		return kill(pid, 0) < 0 && errno == ESRCH;
	/* state Z or X; or, while it is still exiting, vsize (field 23) 0:
	 * its memory is already torn down */
	gone = proc_stat_fields(text, f, 21) == 0 &&
	       (f[0][0] == 'Z' || f[0][0] == 'X' || (f[20][0] == '0' && (f[20][1] == ' ' || f[20][1] == '\n')));
	free(text);
	return gone;
}

/* Walk one process's mappings: 0 when walked to the end, 1 when J must
 * stop, or a negative errno (-ESRCH: its maps are gone). */
/* Free huge pages of PAGE bytes the walk may move onto J's target: the
 * fewest any target node has (a page may go to any of them), fresh from
 * the pools; *SHORT gets a node with none (-1 if all have some). */
static uint64_t huge_free_on_target(struct mover *m, const struct walk *w, uint64_t page, int *short_node)
{
	unsigned nd = 0, cap = mask_count(&w->to);
	struct snap_node *nodes = xcalloc(cap ? cap : 1, sizeof(*nodes));
	int (*rd)(const struct host_paths *, struct snap_node *, unsigned);
	uint64_t least = UINT64_MAX;

	*short_node = -1;
	mask_foreach(id, &w->to)
		if (nd < cap)
			nodes[nd++].id = id;
	pthread_mutex_lock(&m->lock);
	rd = m->read_meminfo;
	pthread_mutex_unlock(&m->lock);
	if (!nd || !rd || rd(&m->hp, nodes, nd) < 0) {
		/* Pools unknown: no huge page moves. */
		least = 0;
		*short_node = nd ? nodes[0].id : -1;
	}
	for (unsigned i = 0; least && i < nd; i++) {
		uint64_t f = 0;

		/* By hand, not snap_node_hpool: tests/numa-vm's static helpers
		 * link the mover without the snapshot. */
		for (unsigned h = 0; h < nodes[i].nr_hpools && h < SNAP_HP_MAX; h++)
			if (nodes[i].hpools[h].page == page)
				f = nodes[i].hpools[h].free;

		if (f < least)
			least = f;
		if (!f)
			*short_node = nodes[i].id;
	}
	free(nodes);
	return least == UINT64_MAX ? 0 : least;
}

/* Before the walk: each hugetlb mapping of PID (VMAS[NV], smaps'
 * KernelPageSize above PAGE) moves no more of its huge pages than the
 * target's pools have free pages of their size (mover_huge_cut): the
 * kernel would make surplus pages out of free memory for the rest, and
 * change the pools behind the operator's back. A mapping cut short is
 * walked up to the cut (one cut to nothing is left out of VMAS: returns
 * how many are left); what is left is W's huge_left and huge_msg. */
static unsigned huge_limit(struct mover *m, struct walk *w, pid_t pid, struct mover_vma *vmas, unsigned nv,
			   size_t page)
{
	unsigned kept = 0;

	for (unsigned v = 0; v < nv; v++) {
		uint64_t hp = vmas[v].hpage, left = 0, allowed;
		size_t n, cut;
		void **pages;
		int *status, short_node;

		if (hp <= page || vmas[v].end <= vmas[v].start)
			continue;
		n = (size_t)((vmas[v].end - vmas[v].start) / hp);
		if (!n)
			continue;
		pages = xcalloc(n, sizeof(*pages));
		status = xcalloc(n, sizeof(*status));
		for (size_t i = 0; i < n; i++)
			pages[i] = (void *)(vmas[v].start + i * hp);
		if (query(m, pid, n, pages, status) < 0) {
			free(pages);
			free(status);
			continue; /* the walk's own query will say */
		}
		allowed = huge_free_on_target(m, w, hp, &short_node);
		cut = mover_huge_cut(status, n, &w->to, allowed, &left);
		if (left) {
			vmas[v].end = vmas[v].start + cut * hp;
			w->huge_left += left * hp;
			if (short_node >= 0)
				snprintf(w->huge_msg, sizeof(w->huge_msg),
					 "%.1f MiB of %llu kB huge pages left where they are: no free %llu kB huge pages on node %d",
					 (double)w->huge_left / 1048576.0, (unsigned long long)(hp >> 10),
					 (unsigned long long)(hp >> 10), short_node);
			else
				snprintf(w->huge_msg, sizeof(w->huge_msg),
					 "%.1f MiB of %llu kB huge pages left where they are: %llu free %llu kB huge pages on the target",
					 (double)w->huge_left / 1048576.0, (unsigned long long)(hp >> 10),
					 (unsigned long long)allowed, (unsigned long long)(hp >> 10));
			log_info("mover: job %" PRIu64 " pid %d: %s", w->job->info.id, (int)pid, w->huge_msg);
		}
		free(pages);
		free(status);
	}
	/* A mapping cut to nothing is no walk's. */
	for (unsigned v = 0; v < nv; v++)
		if (vmas[v].end > vmas[v].start)
			vmas[kept++] = vmas[v];
	return kept;
}

/* The mappings of PID a walk goes over, into *OUT (caller frees): from
 * smaps, without those the census PC saw with nothing to move, within the
 * hugetlb limit. Returns their count or a negative errno (-ESRCH: the
 * process is gone). */
static int walk_vmas(struct mover *m, struct walk *w, pid_t pid, const struct pid_census *pc, struct bufs *b,
		     size_t page, struct mover_vma **out)
{
	const struct job *j = w->job;
	char path[PATH_MAX];
	struct mover_vma *vmas = NULL;
	char *text = NULL;
	int nv, r;
	int64_t t_maps = clock_mono_ns();

	/* smaps, not maps: its AnonHugePages says which mappings are all
	 * THPs, whose pages are then asked one per THP (query_window). */
	if (snprintf(path, sizeof(path), "%s/%d/smaps", m->hp.procfs, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fs_read_file(path, MAPS_MAX, &text, NULL);
	if (r == -ENOENT || r == -ESRCH)
		return -ESRCH;
	if (r < 0)
		return r;
	nv = mover_parse_maps(text, &vmas);
	free(text);
	if (nv < 0)
		return nv;
	/* Only the mappings the census saw with pages to move (and those
	 * mapped since): every window entry costs each of the walk's passes
	 * over it, and most of a small guest's entries can be empty stacks
	 * and arenas inherited from its parent. */
	if (pc && pc->ok) {
		unsigned all = (unsigned)nv;

		nv = (int)mover_prune_vmas(vmas, (unsigned)nv, pc->vmas, pc->n);
		log_debug("mover: job %" PRIu64 " pid %d: %d of %u mappings hold pages to move", j->info.id, (int)pid,
			  nv, all);
	}
	nv = (int)huge_limit(m, w, pid, vmas, (unsigned)nv, page);
	b->maps_ms += (double)(clock_mono_ns() - t_maps) / 1e6;
	*out = vmas;
	return nv;
}

/* Which of the window's N pages pass PASS moves, into B's move buffers
 * (idx, mweight, mnodes, mpages, mslot); GUESS: a 2 MiB run on one node
 * may be taken for a THP. *PLANNED is what pass 0 planned. Returns how
 * many entries move, 0 when none (or a second pass is not worth its
 * call). */
static size_t plan_pass(struct mover *m, struct walk *w, struct bufs *b, size_t n, size_t page, int pass,
			bool guess, uint64_t *planned)
{
	struct job *j = w->job;
	nodemask_t sel = w->to;
	uint64_t bytes = 0;
	size_t k;

	/* While the threads' node has room, every page off it is
	 * to move (mover_spec.first). */
	if (j->first >= 0 && w->first_left > 0) {
		mask_zero(&sel);
		mask_set(&sel, j->first);
	}
	k = mover_plan_window(b->status, b->pages, n, page, &sel, j->relocate_all, guess && !j->relocate_all, b->idx,
			      b->mweight);
	for (size_t e = 0; e < k; e++)
		bytes += (uint64_t)b->mweight[e] * page;
	/* A second pass for a few pages left behind (in flight, a fault
	 * racing the move) costs a call's whole fixed cost for them: a
	 * strict guest's narrowing of its mems moves them, a soft one keeps
	 * them where they are — unless they are a real share
	 * (mover_second_pass). */
	if (pass == 0)
		*planned = bytes;
	else if (!mover_second_pass(bytes, *planned))
		return 0;
	k = mover_assign_targets(b->status, b->idx, b->mweight, k, page, &w->to, j->first, &w->first_left,
				 b->mnodes);
	for (size_t e = 0; e < k; e++) {
		size_t i = b->idx[e];

		b->mpages[e] = b->pages[i];
		pthread_mutex_lock(&m->lock);
		mask_set(&j->info.from, b->status[i]);
		b->mslot[e] = mover_source_slot(&j->info, b->status[i]);
		pthread_mutex_unlock(&m->lock);
	}
	return k;
}

/* After a pass moved its K entries: where the window's N pages are now
 * (B's status), what the move refused dropped from further passes.
 * Returns false when the process answers no query (the window ends). */
static bool verify_pass(struct mover *m, struct walk *w, pid_t pid, struct bufs *b, size_t n, size_t k, size_t page,
			window_tally approx)
{
	/* Where the window's pages are now: from the move's own answers,
	 * and a query of two pages per guessed THP — a query of the whole
	 * window, every 4 KiB entry of each THP, is a large share of a busy
	 * guest's job (orchestrator/README.md). The whole window is asked
	 * again only when a sample disagrees (the guess was 4 KiB pages).
	 * What that misses: pages first faulted, or moved by another,
	 * during the move — the next cycle's census sees them. Pages the
	 * move refused for good are not tried again. */
	size_t ns = mover_verify_plan(b->pages, b->idx, b->mweight, k, b->spages);
	bool known = ns == 0 || query(m, pid, ns, b->spages, b->sstatus) == 0;

	if (!known || !mover_verify_apply(b->status, b->idx, b->mweight, b->mstatus, k, b->sstatus)) {
		if (query(m, pid, n, b->pages, b->status) < 0)
			return false;
	} else {
		credit_thps(m, w, b, k, page, approx);
	}
	mover_drop_refused(b->status, b->idx, b->mstatus, k);
	return true;
}

/* Move the misplaced of the window's N pages (B's status: where they
 * are), in up to two passes; APPROX counts what the slices moved, by
 * source. GUESS: the window's mappings hold THPs; *COMPACT: THPs are
 * still guessed in this process. *ENDED_KNOWN: stopped or failed, and
 * where the pages are is known all the same. Returns 0, 1 (the job must
 * stop) or a negative errno, as move_slices. */
static int move_window(struct mover *m, struct walk *w, pid_t pid, struct bufs *b, size_t n, size_t *chunk,
		       size_t page, bool guess, bool *compact, window_tally approx, bool *ended_known)
{
	const struct job *j = w->job;
	/* Each move_pages(2) call drains every CPU's LRU cache
	 * (lru_cache_disable): a fixed cost per call, high with busy
	 * guests. So calls carry many pages: a 2 MiB-aligned run of pages
	 * all on one node is probably a THP, which moves whole from one
	 * entry; pass 1 moves what such a guess left behind. */
	uint64_t planned = 0;
	int r = 0;

	for (int pass = 0; pass < 2 && r == 0; pass++) {
		size_t k = plan_pass(m, w, b, n, page, pass, pass == 0 && *compact && guess, &planned);

		if (!k)
			break;
		r = move_slices(m, w, pid, b, k, chunk, page, approx);
		/* Stopped at a slice boundary (cancel, SIGTERM, reload, a
		 * new plan, the deadline) or failed (a move call's error,
		 * no room left to wait for): ask the window where its
		 * pages are, so the exact tally below counts what moved —
		 * a guessed THP has counted its head alone until verified,
		 * so without the query a stopped job would report less
		 * moved than the target gained. A process that is gone
		 * answers no query: nothing to count on. */
		if (r != 0 && !j->relocate_all && query(m, pid, n, b->pages, b->status) == 0)
			*ended_known = true;
		if (r || j->relocate_all)
			break;
		if (!verify_pass(m, w, pid, b, n, k, page, approx))
			break;
		/* A guessed THP whose head moved alone was 4 KiB pages: stop
		 * guessing in this process, or every window pays a move
		 * call that moves one page in 512. */
		if (pass == 0 && *compact && mover_guess_failed(b->status, n, b->idx, b->mweight, k, &w->to))
			*compact = false;
	}
	return r;
}

/* What the window's N pages moved, exactly (B's first against its
 * status), in J's sources, in place of what the slices counted (APPROX). */
static void tally_window(struct mover *m, struct walk *w, const struct bufs *b, size_t n, size_t page,
			 const window_tally approx)
{
	struct job *j = w->job;
	window_tally exact = { 0 };
	long by_node[MASK_MAX_NODES] = { 0 };

	/* The slices counted a guessed THP by its head, and
	 * credit_thps the rest once verified: the window's exact
	 * count, by the node each page was on, replaces that. */
	mover_window_moved(b->first, b->status, n, &w->to, by_node);
	pthread_mutex_lock(&m->lock);
	for (int nd = 0; nd < MASK_MAX_NODES; nd++)
		if (by_node[nd])
			exact[mover_source_slot(&j->info, nd)] += by_node[nd];
	for (unsigned k = 0; k <= MOVER_MAX_SOURCES; k++)
		if (exact[k] != approx[k]) {
			mover_add_done(&j->info, k, (int64_t)(exact[k] - approx[k]) * (int64_t)page);
			/* the moved-bytes counter never goes back */
			if (exact[k] > approx[k])
				add_moved(m, j->info.cause, (uint64_t)(exact[k] - approx[k]) * page);
		}
	pthread_mutex_unlock(&m->lock);
}

static int walk_process(struct mover *m, struct walk *w, pid_t pid, const struct pid_census *pc, struct bufs *b,
			size_t *chunk, size_t page)
{
	struct job *j = w->job;
	struct mover_vma *vmas = NULL;
	uintptr_t pos = 0;
	bool compact = true;
	size_t n;
	int nv, r;

	nv = walk_vmas(m, w, pid, pc, b, page, &vmas);
	if (nv < 0)
		return nv;
	/* The window is QUERY_PAGES or the whole process when smaller: the
	 * worker's buffers grow to that once and are kept. */
	bufs_reserve(b, mover_vmas_pages(vmas, (unsigned)nv, page), page);
	r = 0;
	/* Where the pages are is asked QUERY_PAGES (256 MiB of address
	 * space) at a time (a query only reads the page tables); the
	 * misplaced ones are moved in slices of *CHUNK pages, the size that
	 * keeps each move call near chunk_ms, so the window's size is not a
	 * call's (a 256 MiB call would stall the guest for all of it). Each
	 * window ends in a slice of its own, so a window that ends mid-guest
	 * costs a call more; hence windows as large as QUERY_PAGES. A window
	 * spans mappings: one per mapping would cost a guest of a dozen
	 * small mappings a dozen move calls, each paying move_pages' fixed
	 * cost (below), which with busy guests is most of the mover's
	 * time. */
	while ((n = mover_fill_window(vmas, (unsigned)nv, page, b->cap, &pos, b->pages)) > 0) {
		window_tally approx = { 0 };
		bool ended_known = false, guess;

		pthread_mutex_lock(&m->lock);
		if (stop_reason(m, j) != MJ_QUEUED) {
			pthread_mutex_unlock(&m->lock);
			r = 1;
			break;
		}
		pthread_mutex_unlock(&m->lock);
		r = query_window(m, pid, vmas, (unsigned)nv, n, page, b);
		if (r == -ENOENT || r == -EFAULT) {
			r = 0; /* the mapping went away under us: next chunk */
			continue;
		}
		if (r < 0)
			break;
		memcpy(b->first, b->status, n * sizeof(int));
		/* No THP guess where smaps shows no huge page in the window's
		 * mappings: a guess there moves each 2 MiB run's head alone,
		 * then pays a query of the window and a second pass, each with
		 * a call's fixed cost. */
		guess = mover_window_has_thp(vmas, (unsigned)nv, (uintptr_t)b->pages[0], (uintptr_t)b->pages[n - 1]);
		r = move_window(m, w, pid, b, n, chunk, page, guess, &compact, approx, &ended_known);
		if (r == 0 && !j->relocate_all)
			w->seen_left += (uint64_t)mover_window_left(b->status, n, &w->to) * page;
		if ((r == 0 || ended_known) && !j->relocate_all)
			tally_window(m, w, b, n, page, approx);
		if (r)
			break;
	}
	free(vmas);
	return r;
}

/* Move the misplaced pages of J's process I. Returns 0 when walked to the end,
 * 1 when J must stop, -ESRCH when the process is gone — the one place
 * that decides "vanished" (the caller counts such a process as vanished,
 * not failed) — or a negative errno. */
/* The target of J's process I (mover_spec.pid_to). */
static const nodemask_t *pid_target(const struct job *j, unsigned i)
{
	return j->pid_to ? &j->pid_to[i] : &j->info.to;
}

static int move_process(struct mover *m, struct walk *w, unsigned i, struct bufs *b, size_t *chunk, size_t page)
{
	const struct job *j = w->job;
	pid_t pid = j->pids[i];
	int r;

	r = walk_process(m, w, pid, j->pc ? &j->pc[i] : NULL, b, chunk, page);

	/* Any call that failed on a process that has exited (a zombie
	 * answers move_pages with EINVAL, not ESRCH) is its exit, not a
	 * failure. Asked only after a failure: the walk never reads
	 * /proc/PID/stat. */
	if (r < 0 && r != -ESRCH && process_gone(m, pid))
		r = -ESRCH;
	return r;
}

/* The worker onto the CPUs of J's target nodes (those of its own CPUs),
 * or back to its own CPUs when it need not be there (mover_pin_action).
 * Left as it is after the job. Not pinned when the target has no such
 * CPUs or sysfs cannot be read: the job runs where the worker is. */
static void pin_to_target(struct mover *m, const nodemask_t *to, struct bufs *b, bool on_target)
{
	cpu_set_t want;
	unsigned n = 0;

	if (!b->have_own) {
		if (sched_getaffinity(0, sizeof(b->own), &b->own) < 0)
			return;
		b->have_own = true;
	}
	switch (mover_pin_action(on_target, b->pinned, &b->pinned_to, to)) {
	case MOVER_PIN_NONE:
	case MOVER_PIN_KEEP:
		return;
	case MOVER_PIN_RESTORE:
		if (sched_setaffinity(0, sizeof(b->own), &b->own) < 0)
			log_debug("mover: cannot restore a worker's CPUs: %s", strerror(errno));
		b->pinned = false;
		return;
	case MOVER_PIN_SET:
		break;
	}
	CPU_ZERO(&want);
	mask_foreach(node, to) {
		char path[PATH_MAX], *text = NULL;
		cpumask_t cpus;

		if (snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", m->hp.sysfs, node) >=
			    (int)sizeof(path) ||
		    fs_read_file(path, 4096, &text, NULL) < 0)
			continue;
		if (mask_parse(text, &cpus) == 0)
			mask_foreach(c, &cpus)
				if (c < CPU_SETSIZE && CPU_ISSET(c, &b->own)) {
					CPU_SET(c, &want);
					n++;
				}
		free(text);
	}
	if (n && sched_setaffinity(0, sizeof(want), &want) == 0) {
		b->pinned = true;
		b->pinned_to = *to;
		return;
	}
	/* Nowhere on the target: the job runs on the worker's own CPUs. */
	if (b->pinned && sched_setaffinity(0, sizeof(b->own), &b->own) < 0)
		log_debug("mover: cannot restore a worker's CPUs: %s", strerror(errno));
	b->pinned = false;
}

/* What J's processes hold on each node, before it moves anything: what
 * each source node has left to give is then known (GET /v1/migrations,
 * top's nodes panel) instead of guessed from the plan's total. numa_maps
 * walks the page tables under the read side of mmap_lock: the guest runs
 * on. A process that cannot be read has exited (move_pages(2) needs the
 * same access); the walk then finds it gone too. */
static void census(struct mover *m, struct job *j)
{
	int64_t t0 = clock_mono_ns();
	nodemask_t stay = j->info.to;

	/* What pages stay where they are: those on the target — on the
	 * first node alone while a split job fills it — or none at all
	 * (relocate_all). */
	if (j->first >= 0) {
		mask_zero(&stay);
		mask_set(&stay, j->first);
	}
	j->pc = xcalloc(j->npids ? j->npids : 1, sizeof(*j->pc)); /* once: a job runs once */
	for (unsigned i = 0; i < j->npids; i++) {
		char path[PATH_MAX], *text = NULL;

		if (snprintf(path, sizeof(path), "%s/%d/numa_maps", m->hp.procfs, (int)j->pids[i]) >=
			    (int)sizeof(path) ||
		    fs_read_file(path, MAPS_MAX, &text, NULL) < 0)
			continue;
		pthread_mutex_lock(&m->lock);
		{
			/* counted against its own target (a pod's container's
			 * node), which nobody sees for the job's while the lock
			 * is held */
			nodemask_t all = j->info.to;

			j->info.to = *pid_target(j, i);
			mover_census_add(&j->info, text, j->relocate_all);
			j->info.to = all;
		}
		pthread_mutex_unlock(&m->lock);
		if (j->pid_to && j->first < 0)
			stay = j->pid_to[i];
		j->pc[i].n = mover_census_vmas(text, j->relocate_all ? NULL : &stay, &j->pc[i].vmas);
		j->pc[i].ok = true;
		free(text);
	}
	pthread_mutex_lock(&m->lock);
	j->info.census = true;
	/* its other walks may start now (worker_pick) */
	pthread_cond_broadcast(&m->work);
	pthread_mutex_unlock(&m->lock);
	log_debug("mover: job %" PRIu64 " t=%.1f: census of %u processes in %.1f ms", j->info.id, (double)t0 / 1e6,
		  j->npids, (double)(clock_mono_ns() - t0) / 1e6);
}

/* Anonymous bytes per node id of J's processes (PID's alone when > 0)
 * by numa_maps, into BY_ID (MASK_MAX_NODES entries, zeroed here); returns
 * the bytes off J's target. numa_maps walks the page tables itself: it
 * counts the pages move_pages(2) may not see (mover_settle_step). */
static uint64_t anon_off_target(struct mover *m, const struct job *j, pid_t pid, uint64_t *by_id)
{
	uint64_t off = 0, *one = xcalloc(MASK_MAX_NODES, sizeof(*one));

	memset(by_id, 0, MASK_MAX_NODES * sizeof(*by_id));
	for (unsigned i = 0; i < j->npids; i++) {
		char path[PATH_MAX], *text = NULL;

		if ((pid > 0 && j->pids[i] != pid) ||
		    snprintf(path, sizeof(path), "%s/%d/numa_maps", m->hp.procfs, (int)j->pids[i]) >=
			    (int)sizeof(path) ||
		    fs_read_file(path, MAPS_MAX, &text, NULL) < 0)
			continue;
		memset(one, 0, MASK_MAX_NODES * sizeof(*one));
		numamaps_parse_anon(text, one, MASK_MAX_NODES);
		free(text);
		/* off its own target: a process of a part goes to the part's */
		for (int n = 0; n < MASK_MAX_NODES; n++) {
			by_id[n] += one[n];
			if (one[n] && !mask_test(pid_target(j, i), n))
				off += one[n];
		}
	}
	free(one);
	return off;
}

/* What moved onto J's target between two looks (BEFORE, AFTER: per node
 * id): by source node, the least of what left it and what the target
 * gained (memory a guest frees is no move), counted done. Returns the
 * bytes. */
static uint64_t credit_settled(struct mover *m, struct job *j, const uint64_t *before, const uint64_t *after)
{
	uint64_t left = 0, gained = 0, credit, total = 0;

	for (int n = 0; n < MASK_MAX_NODES; n++) {
		if (mask_test(&j->info.to, n))
			gained += after[n] > before[n] ? after[n] - before[n] : 0;
		else
			left += before[n] > after[n] ? before[n] - after[n] : 0;
	}
	credit = left < gained ? left : gained;
	pthread_mutex_lock(&m->lock);
	for (int n = 0; n < MASK_MAX_NODES && credit; n++) {
		uint64_t d;

		if (mask_test(&j->info.to, n) || before[n] <= after[n])
			continue;
		d = before[n] - after[n] < credit ? before[n] - after[n] : credit;
		mover_add_done(&j->info, mover_source_slot(&j->info, n), (int64_t)d);
		credit -= d;
		total += d;
	}
	pthread_mutex_unlock(&m->lock);
	return total;
}

/* Sleep S unless J must stop; false if it must. */
static bool settle_wait(struct mover *m, struct job *j, double s)
{
	struct timespec ts;
	bool ok;

	pthread_mutex_lock(&m->lock);
	deadline_ts(&ts, s);
	while (stop_reason(m, j) == MJ_QUEUED && pthread_cond_timedwait(&m->work, &m->lock, &ts) != ETIMEDOUT)
		;
	ok = stop_reason(m, j) == MJ_QUEUED;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* migrate_pages(2) of PID's pages off J's target onto it, after the walk
 * and the wait left LEFT_MIN_BYTES or more there: pages the move_pages(2)
 * walk could not see (a page marked for a NUMA hinting fault answers
 * EFAULT on 6.1 kernels) and the kernel's
 * balancing did not move (not touched meanwhile). One call per source
 * node (mover_sweep_nodes), each within the rate budget and each a chunk
 * with its own stall: a node is the smallest piece migrate_pages(2) takes.
 * Like a cpuset.mems write, it also moves the process's file pages on
 * those nodes. BEFORE and AFTER get PID's anonymous bytes per node before
 * the first call and after the last. false if J must stop (the rate
 * budget, or a stop between two calls). */
static bool sweep_process(struct mover *m, struct job *j, pid_t pid, uint64_t *before, uint64_t *after)
{
	int from[MASK_MAX_NODES], to[MOVER_MAX_SOURCES];
	nodemask_t target = j->info.to;
	unsigned nfrom, nto = 0;
	uint64_t left = anon_off_target(m, j, pid, before), moved, cap = mover_sweep_cap(j->walk_bytes, j->walk_ms);
	double ms_all = 0;
	bool ok = true;
	int r = 0;

	for (unsigned i = 0; i < j->npids; i++)
		if (j->pids[i] == pid)
			target = *pid_target(j, i);

	if (left < LEFT_MIN_BYTES)
		return true;
	for (int n = 0; n < MASK_MAX_NODES; n++)
		if (mask_test(&target, n) && nto < MOVER_MAX_SOURCES)
			to[nto++] = n;
	nfrom = mover_sweep_nodes(before, MASK_MAX_NODES, &target, LEFT_MIN_BYTES, from);
	if (!nfrom || !nto)
		return true;
	for (unsigned i = 0; i < nfrom && r != -ESRCH; i++) {
		int64_t t0;
		double ms;

		/* A stall the guest would feel: bounded like every move call. */
		if (before[from[i]] > cap) {
			j->left_kernel += before[from[i]];
			log_debug("mover: job %" PRIu64 " pid %d: node %d's %.1f MiB unseen by move_pages not swept (over "
				  "the %.1f MiB one call may stall for): left to the kernel's balancing", j->info.id,
				  (int)pid, from[i], (double)before[from[i]] / 1048576.0, (double)cap / 1048576.0);
			continue;
		}
		if (!rate_take(m, j, (size_t)before[from[i]])) {
			ok = false;
			break;
		}
		t0 = clock_mono_ns();
		r = numamig_pages(pid, &from[i], 1, to, nto);
		ms = (double)(clock_mono_ns() - t0) / 1e6;
		ms_all += ms;
		pthread_mutex_lock(&m->lock);
		note_call(m, j, ms);
		ok = stop_reason(m, j) == MJ_QUEUED;
		pthread_mutex_unlock(&m->lock);
		log_debug("mover: job %" PRIu64 " pid %d: migrate_pages of node %d's %.1f MiB in %.1f ms%s%s",
			  j->info.id, (int)pid, from[i], (double)before[from[i]] / 1048576.0, ms, r < 0 ? ": " : "",
			  r < 0 ? strerror(-r) : "");
		if (!ok)
			break;
	}
	anon_off_target(m, j, pid, after);
	moved = credit_settled(m, j, before, after);
	pthread_mutex_lock(&m->lock);
	j->info.swept_bytes += moved;
	add_moved(m, j->info.cause, moved);
	pthread_mutex_unlock(&m->lock);
	log_debug("mover: job %" PRIu64 " pid %d: swept %.1f MiB left off the target: %.1f MiB moved in %.1f ms",
		  j->info.id, (int)pid, (double)left / 1048576.0, (double)moved / 1048576.0, ms_all);
	return ok;
}

/* What numa_maps shows off J's target beyond what its walk saw there:
 * the pages it could not see. */
static uint64_t unseen(const struct job *j, uint64_t off)
{
	return off > j->seen_left ? off - j->seen_left : 0;
}

/* After the walk: wait while the kernel's NUMA balancing moves what the
 * walk could not see (mover_settle_step), then sweep the rest. Returns
 * J's state: MJ_DONE, MJ_PARTIAL (MSG says how much is left), or why it
 * had to stop. */
static enum mover_state settle(struct mover *m, struct job *j, char *msg, size_t msgsz)
{
	uint64_t *prev = xcalloc(MASK_MAX_NODES, sizeof(*prev)), *now = xcalloc(MASK_MAX_NODES, sizeof(*now));
	uint64_t left = unseen(j, anon_off_target(m, j, 0, now)), last = UINT64_MAX;
	enum mover_state st = MJ_DONE;
	enum mover_settle step;
	double waited = 0;

	while ((step = mover_settle_step(left, last, waited)) == MOVER_SETTLE_WAIT) {
		uint64_t *t = prev;

		if (!settle_wait(m, j, MOVER_SETTLE_POLL_S))
			goto stop;
		waited += MOVER_SETTLE_POLL_S;
		prev = now;
		now = t;
		last = left;
		left = unseen(j, anon_off_target(m, j, 0, now));
		{
			uint64_t k = credit_settled(m, j, prev, now);

			pthread_mutex_lock(&m->lock);
			j->info.kernel_bytes += k;
			pthread_mutex_unlock(&m->lock);
		}
	}
	/* A split job's pages go to FIRST while it has room, a job waiting
	 * for room counts its calls' bytes against it: neither is swept. */
	/* A sweep (migrate_pages(2)) would take the huge pages left for
	 * want of free ones too. */
	if (step == MOVER_SETTLE_SWEEP && j->first < 0 && !j->wait_room && !j->huge_left) {
		for (unsigned i = 0; i < j->npids; i++)
			if (!sweep_process(m, j, j->pids[i], prev, now))
				goto stop;
		left = unseen(j, anon_off_target(m, j, 0, now));
	}
	pthread_mutex_lock(&m->lock);
	j->info.left_end = left;
	pthread_mutex_unlock(&m->lock);
	if (left >= LEFT_MIN_BYTES) {
		st = MJ_PARTIAL;
		if (j->left_kernel)
			snprintf(msg, msgsz, "%.1f MiB off the target unseen by move_pages(2), over one call's stall: "
				 "left to the kernel's balancing (on touch)", (double)left / 1048576.0);
		else
			snprintf(msg, msgsz, "%.1f MiB of its anonymous memory still off the target, unseen by "
				 "move_pages(2)", (double)left / 1048576.0);
	}
	free(prev);
	free(now);
	return st;
stop:
	pthread_mutex_lock(&m->lock);
	st = stop_reason(m, j);
	j->info.left_end = left;
	pthread_mutex_unlock(&m->lock);
	free(prev);
	free(now);
	return st;
}

/* Walk W's processes (its worker's; B the worker's buffers). CENSUS: W
 * is its job's first walk, which counts where all the job's pages are
 * before any of them moves; the job's other walks start once it has
 * (worker_pick). What the walk found and did goes into its job as it
 * ends, under the lock: the job's settle step reads the sums. */
static void run_walk(struct mover *m, struct walk *w, struct bufs *b, bool census_first)
{
	struct job *j = w->job;
	int64_t t_in = clock_mono_ns(), t_pin, t_census, t_walk;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t chunk = FIRST_CHUNK;
	char msg[sizeof(j->fail_msg)] = "";
	bool on_target, stopped = false, failed = false;

	memset(&b->cost, 0, sizeof(b->cost));
	b->maps_ms = 0;
	pthread_mutex_lock(&m->lock);
	on_target = m->cfg.on_target;
	pthread_mutex_unlock(&m->lock);
	/* Each walk on its own target's CPUs: the copy writes local memory. */
	pin_to_target(m, &w->to, b, on_target);
	t_pin = clock_mono_ns();
	if (census_first)
		census(m, j);
	t_census = clock_mono_ns();
	for (unsigned k = 0; k < w->npidx; k++) {
		unsigned i = w->pidx[k];
		int r = move_process(m, w, i, b, &chunk, page);

		if (r == -ESRCH)
			continue;
		w->alive++;
		if (r == 1) {
			stopped = true;
			break;
		}
		if (r == -ENOSPC && w->room_msg[0])
			snprintf(msg, sizeof(msg), "no room: %s", w->room_msg);
		else if (r < 0)
			snprintf(msg, sizeof(msg), "process %d: move_pages: %s", (int)j->pids[i], strerror(-r));
		if (r < 0) {
			failed = true;
			break;
		}
	}
	t_walk = clock_mono_ns();
	pthread_mutex_lock(&m->lock);
	j->alive += w->alive;
	j->seen_left += w->seen_left;
	j->walk_bytes += w->walk_bytes;
	j->walk_ms += w->walk_ms;
	if (w->huge_left) {
		/* the words of the last walk that left some; the bytes of all */
		j->huge_left += w->huge_left;
		snprintf(j->huge_msg, sizeof(j->huge_msg), "%s", w->huge_msg);
	}
	j->walk_stopped |= stopped;
	/* One walk's failure ends the job, as one process's did when a
	 * worker walked them all: its other walks stop at their next chunk
	 * boundary (stop_reason), the first failure's words are the job's. */
	if (failed && !j->failing) {
		j->failing = true;
		snprintf(j->fail_msg, sizeof(j->fail_msg), "%s", msg);
		pthread_cond_broadcast(&m->work);
	}
	pthread_mutex_unlock(&m->lock);
	/* Where a walk's time goes besides its move calls and queries (what
	 * make bench-migrate --trace reads); logged last, so the log write is
	 * in no phase. */
	log_debug("mover: job %" PRIu64 " walk %u/%u t=%.1f: phases: pin %.1f ms%s, census %.1f ms, walk %.1f ms "
		  "(maps %.1f ms), buffers %zu entries",
		  j->info.id, (unsigned)(w - j->walks) + 1, j->nwalks, (double)t_in / 1e6,
		  (double)(t_pin - t_in) / 1e6, b->pinned ? " (pinned)" : "", (double)(t_census - t_pin) / 1e6,
		  (double)(t_walk - t_census) / 1e6, b->maps_ms, b->cap);
}

/* After J's last walk (by the worker that ended it): how J ends — failed
 * or stopped as a walk said, vanished when none of its processes was
 * alive, else the settle step's answer over all its processes. */
static enum mover_state finish_job(struct mover *m, struct job *j, char *msg, size_t msgsz)
{
	enum mover_state st = MJ_DONE;

	pthread_mutex_lock(&m->lock);
	if (j->failing) {
		st = MJ_FAILED;
		snprintf(msg, msgsz, "%s", j->fail_msg);
	} else if (j->walk_stopped) {
		st = stop_reason(m, j);
	}
	pthread_mutex_unlock(&m->lock);
	if (st == MJ_DONE && !j->alive)
		st = MJ_VANISHED;
	if (st == MJ_DONE && !j->relocate_all)
		st = settle(m, j, msg, msgsz);
	/* Huge pages left for want of free ones of their size: partial, and
	 * the record says how many and why. */
	if (j->huge_left && (st == MJ_DONE || st == MJ_PARTIAL)) {
		size_t l = st == MJ_PARTIAL ? strlen(msg) : 0;

		if (l < msgsz && snprintf(msg + l, msgsz - l, "%s%s", l ? "; " : "", j->huge_msg) < 0)
			msg[l] = '\0';
		st = MJ_PARTIAL;
	}
	return st;
}

/* A write job (mover_spec.write): one call, its answer the job's end. */
static enum mover_state run_write(struct mover *m, struct job *j, char *msg, size_t msgsz)
{
	int r = j->write(j->write_ctx, msg, msgsz);

	if (r == 0) {
		pthread_mutex_lock(&m->lock);
		j->info.census = true; /* nothing left for it to move */
		pthread_mutex_unlock(&m->lock);
		return MJ_DONE;
	}
	return r == -ENOENT || r == -ESRCH ? MJ_VANISHED : MJ_FAILED;
}

/* Under the lock: the next walk a free worker takes — the oldest job's
 * first walk not yet taken. A running job's further walks wait for its
 * census (its first walk's), which they read. A stopping job's walks are
 * taken too: each ends at once, and the last one to end ends the job. */
static struct walk *worker_pick(struct mover *m)
{
	for (struct job *q = m->live; q; q = q->next)
		if (q->next_walk < q->nwalks && (q->info.state == MJ_QUEUED || q->info.census))
			return &q->walks[q->next_walk];
	return NULL;
}

static void *worker(void *arg)
{
	struct mover *m = arg;
	struct bufs b = { 0 };
	int64_t prev_end = 0;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct walk *w = NULL;
		struct job *j;
		enum mover_state st = MJ_DONE;
		char msg[sizeof(((struct mover_job_info *)0)->msg)] = "";
		bool first;

		if (m->running < m->cfg.workers)
			w = worker_pick(m);
		if (!w) {
			pthread_cond_wait(&m->work, &m->lock);
			continue;
		}
		j = w->job;
		first = j->info.state == MJ_QUEUED;
		if (first) {
			j->info.state = MJ_RUNNING;
			j->info.started_real_ns = clock_real_ns();
			j->start_mono = clock_mono_ns();
			j->deadline_mono = j->start_mono + (int64_t)(m->cfg.job_timeout_s * 1e9);
		}
		w->state = WALK_TAKEN;
		j->next_walk++;
		j->active++;
		m->running++;
		pthread_mutex_unlock(&m->lock);
		if (prev_end)
			log_debug("mover: job %" PRIu64 " t=%.1f: picked %.1f ms after this worker's previous job", j->info.id,
				  (double)clock_mono_ns() / 1e6, (double)(clock_mono_ns() - prev_end) / 1e6);
		if (j->write)
			st = run_write(m, j, msg, sizeof(msg));
		else
			run_walk(m, w, &b, first);
		pthread_mutex_lock(&m->lock);
		w->state = WALK_ENDED;
		j->active--;
		/* A job that must end starts none of its walks left. */
		if (j->next_walk < j->nwalks && stop_reason(m, j) != MJ_QUEUED) {
			while (j->next_walk < j->nwalks)
				j->walks[j->next_walk++].state = WALK_ENDED;
			j->walk_stopped = true;
		}
		if (!j->active && j->next_walk == j->nwalks) {
			/* The last of its walks: this worker settles and ends it. */
			pthread_mutex_unlock(&m->lock);
			if (!j->write)
				st = finish_job(m, j, msg, sizeof(msg));
			pthread_mutex_lock(&m->lock);
			snprintf(j->info.msg, sizeof(j->info.msg), "%s", msg);
			unlink_job(m, j);
			record_finished(m, j, st);
			job_free(j);
		}
		prev_end = clock_mono_ns();
		m->running--;
		/* A worker is free: another may start a walk. */
		pthread_cond_broadcast(&m->work);
	}
	pthread_mutex_unlock(&m->lock);
	bufs_free(&b);
	return NULL;
}

static void start_workers(struct mover *m, unsigned want)
{
	sigset_t all, old;

	/* Workers take no signal: SIGTERM and SIGHUP are the engine's
	 * (signalfd); a worker started before the engine blocks them would
	 * otherwise get SIGTERM's default action, killing the daemon. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (m->nthreads < want && m->nthreads < MAX_WORKERS) {
		int r = pthread_create(&m->threads[m->nthreads], NULL, worker, m);

		if (r != 0) {
			log_error("mover: cannot start worker %u: %s", m->nthreads, strerror(r));
			break;
		}
		m->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int mover_new(const struct mover_config *cfg, const struct host_paths *hp, struct mover **out)
{
	struct mover *m = xcalloc(1, sizeof(*m));

	m->hp = *hp;
	m->cfg = *cfg;
	if (m->cfg.workers < 1)
		m->cfg.workers = 1;
	if (m->cfg.workers > MAX_WORKERS)
		m->cfg.workers = MAX_WORKERS;
	m->next_id = 1;
	m->tokens_mono = clock_mono_ns();
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->work, NULL);
	{
		pthread_condattr_t ca;

		/* rate_take waits on CLOCK_MONOTONIC deadlines */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_destroy(&m->work);
		pthread_cond_init(&m->work, &ca);
		pthread_cond_init(&m->idle, &ca);
		pthread_condattr_destroy(&ca);
	}
	m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->efd < 0) {
		int r = -errno;

		free(m);
		return r;
	}
	pthread_mutex_lock(&m->lock);
	start_workers(m, m->cfg.workers);
	pthread_mutex_unlock(&m->lock);
	*out = m;
	return 0;
}

void mover_set_config(struct mover *m, const struct mover_config *cfg)
{
	pthread_mutex_lock(&m->lock);
	m->cfg = *cfg;
	if (m->cfg.workers < 1)
		m->cfg.workers = 1;
	if (m->cfg.workers > MAX_WORKERS)
		m->cfg.workers = MAX_WORKERS;
	start_workers(m, m->cfg.workers);
	pthread_cond_broadcast(&m->work);
	pthread_mutex_unlock(&m->lock);
}

/* Under the lock. */
static struct job *find_live(struct mover *m, uint64_t id, const char *guest)
{
	for (struct job *j = m->live; j; j = j->next)
		if ((id && j->info.id == id) || (guest && strcmp(j->info.guest, guest) == 0 &&
						  j->stop_as == MJ_QUEUED))
			return j;
	return NULL;
}

/* Under the lock: ask J to end as WHY; a queued job ends at once. */
static void stop_job(struct mover *m, struct job *j, enum mover_state why)
{
	if (j->info.state == MJ_QUEUED) {
		unlink_job(m, j);
		record_finished(m, j, why);
		job_free(j);
		return;
	}
	if (j->stop_as == MJ_QUEUED)
		j->stop_as = why;
	pthread_cond_broadcast(&m->work);
}

/* J's walks: its processes grouped by their target, in the order each
 * target first comes. One walk for a job without per-process targets,
 * for a write job, and for a split job (mover_spec.first): FIRST's room
 * (FIRST_BYTES) is one budget its walk spends page by page. */
static void job_walks(struct job *j, uint64_t first_bytes)
{
	j->walks = xcalloc(j->npids ? j->npids : 1, sizeof(*j->walks));
	for (unsigned i = 0; i < j->npids || (i == 0 && !j->nwalks); i++) {
		const nodemask_t *to = j->pid_to && j->first < 0 && i < j->npids ? &j->pid_to[i] : &j->info.to;
		struct walk *w = NULL;

		for (unsigned k = 0; k < j->nwalks && !w; k++)
			if (mask_equal(&j->walks[k].to, to))
				w = &j->walks[k];
		if (!w) {
			w = &j->walks[j->nwalks++];
			w->job = j;
			w->to = *to;
			w->first_left = j->first >= 0 ? first_bytes : 0;
			w->pidx = xcalloc(j->npids ? j->npids : 1, sizeof(*w->pidx));
		}
		if (i < j->npids)
			w->pidx[w->npidx++] = i;
	}
}

uint64_t mover_submit(struct mover *m, const struct mover_spec *spec)
{
	struct job *j = xcalloc(1, sizeof(*j)), **tail, *old;
	uint64_t id;

	snprintf(j->info.guest, sizeof(j->info.guest), "%s", spec->guest);
	snprintf(j->info.cause, sizeof(j->info.cause), "%s", spec->cause);
	j->info.to = spec->to;
	j->info.bytes_expected = spec->bytes;
	j->info.state = MJ_QUEUED;
	j->info.stall_p99_ms = NAN;
	j->info.queued_real_ns = clock_real_ns();
	j->stop_as = MJ_QUEUED;
	j->npids = spec->npids;
	j->relocate_all = moverfx_relocate_all();
	j->first = spec->first_bytes && !j->relocate_all && spec->first >= 0 &&
		   spec->first < MASK_MAX_NODES && mask_test(&spec->to, spec->first) ? spec->first : -1;
	j->info.has_first = j->first >= 0;
	j->info.first = j->first;
	j->wait_room = spec->wait_room;
	j->min_free = spec->min_free_bytes;
	j->min_free_share = spec->min_free_share;
	j->write = spec->write;
	j->write_ctx = spec->write_ctx;
	j->info.write = spec->write != NULL;
	j->pids = xcalloc(spec->npids ? spec->npids : 1, sizeof(pid_t));
	if (spec->npids)
		memcpy(j->pids, spec->pids, spec->npids * sizeof(pid_t));
	if (spec->pid_to && spec->npids) {
		j->pid_to = xcalloc(spec->npids, sizeof(*j->pid_to));
		memcpy(j->pid_to, spec->pid_to, spec->npids * sizeof(*j->pid_to));
	}
	job_walks(j, spec->first_bytes);
	pthread_mutex_lock(&m->lock);
	while ((old = find_live(m, 0, spec->guest)))
		stop_job(m, old, MJ_SUPERSEDED);
	id = j->info.id = m->next_id++;
	for (tail = &m->live; *tail; tail = &(*tail)->next)
		;
	*tail = j;
	pthread_cond_broadcast(&m->work);
	pthread_mutex_unlock(&m->lock);
	return id;
}

void mover_set_meminfo(struct mover *m,
		       int (*read_meminfo)(const struct host_paths *hp, struct snap_node *nodes, unsigned nr))
{
	pthread_mutex_lock(&m->lock);
	m->read_meminfo = read_meminfo;
	pthread_mutex_unlock(&m->lock);
}

void mover_flows(struct mover *m, struct snapshot *s)
{
	pthread_mutex_lock(&m->lock);
	for (struct job *q = m->live; q; q = q->next)
		if (q->stop_as == MJ_QUEUED)
			mover_flows_add(&q->info, s);
	pthread_mutex_unlock(&m->lock);
}

int mover_cancel(struct mover *m, uint64_t id, enum mover_state why)
{
	struct job *j;
	int r = 0;

	pthread_mutex_lock(&m->lock);
	j = find_live(m, id, NULL);
	if (j) {
		stop_job(m, j, why);
	} else {
		r = -ENOENT;
		for (unsigned i = 0; i < m->nfinished; i++)
			if (m->finished[i].id == id)
				r = -EALREADY;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

void mover_note_jobs(struct mover *m, struct snapshot *s)
{
	pthread_mutex_lock(&m->lock);
	for (struct job *q = m->live; q; q = q->next) {
		struct snap_guest *g = NULL;

		/* (mover_job_of's: one such job a guest, mover_submit
		 * supersedes the others) */
		if (q->stop_as != MJ_QUEUED)
			continue;
		for (unsigned i = 0; i < s->nr_guests && !g; i++)
			if (strcmp(s->guests[i].id, q->info.guest) == 0)
				g = &s->guests[i];
		if (g)
			mover_job_fact(&q->info, &g->job);
	}
	pthread_mutex_unlock(&m->lock);
}

uint64_t mover_job_of(struct mover *m, const char *guest)
{
	struct job *j;
	uint64_t id;

	pthread_mutex_lock(&m->lock);
	j = find_live(m, 0, guest);
	id = j ? j->info.id : 0;
	pthread_mutex_unlock(&m->lock);
	return id;
}

/* Under the lock: live jobs other than running writes. */
static unsigned live_but_writes(const struct mover *m, unsigned *writes)
{
	unsigned n = 0;

	*writes = 0;
	for (const struct job *j = m->live; j; j = j->next)
		if (j->write && j->info.state == MJ_RUNNING)
			(*writes)++;
		else
			n++;
	return n;
}

unsigned mover_stop_all(struct mover *m)
{
	unsigned writes;

	pthread_mutex_lock(&m->lock);
	for (struct job *j = m->live, *next; j; j = next) {
		next = j->next;
		stop_job(m, j, MJ_STOPPED);
	}
	/* A running write cannot be stopped (the kernel migrates inside it)
	 * and is not waited for: its writer finishes it on its own. */
	while (live_but_writes(m, &writes))
		pthread_cond_wait(&m->idle, &m->lock);
	pthread_mutex_unlock(&m->lock);
	return writes;
}

bool mover_wait_idle(struct mover *m, double timeout_s)
{
	struct timespec ts;
	bool idle;

	deadline_ts(&ts, timeout_s);
	pthread_mutex_lock(&m->lock);
	while (m->live && pthread_cond_timedwait(&m->idle, &m->lock, &ts) != ETIMEDOUT)
		;
	idle = !m->live;
	pthread_mutex_unlock(&m->lock);
	return idle;
}

bool mover_free(struct mover *m)
{
	if (!m)
		return true;
	if (mover_stop_all(m)) {
		/* A worker is still waiting for its write's writer: it is left
		 * to the process's exit, with the mover it uses. */
		pthread_mutex_lock(&m->lock);
		m->stopping = true;
		pthread_cond_broadcast(&m->work);
		pthread_mutex_unlock(&m->lock);
		for (unsigned i = 0; i < m->nthreads; i++)
			pthread_detach(m->threads[i]);
		return false;
	}
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->work);
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < m->nthreads; i++)
		pthread_join(m->threads[i], NULL);
	close(m->efd);
	free(m->untaken);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->work);
	pthread_cond_destroy(&m->idle);
	free(m);
	return true;
}

/* Under the lock: a live job's info with its running time now. */
static struct mover_job_info live_info(const struct job *j)
{
	struct mover_job_info i = j->info;

	if (j->start_mono)
		i.elapsed_s = (double)(clock_mono_ns() - j->start_mono) / 1e9;
	return i;
}

unsigned mover_list(struct mover *m, struct mover_job_info **out)
{
	unsigned n = 0, k = 0;
	struct mover_job_info *v;

	pthread_mutex_lock(&m->lock);
	for (struct job *j = m->live; j; j = j->next)
		n++;
	v = xcalloc(n + m->nfinished + 1, sizeof(*v));
	for (struct job *j = m->live; j; j = j->next)
		v[k++] = live_info(j);
	/* newest finished first */
	for (unsigned i = 0; i < m->nfinished; i++)
		v[k++] = m->finished[(m->finished_head + KEEP_FINISHED - 1 - i) % KEEP_FINISHED];
	pthread_mutex_unlock(&m->lock);
	*out = v;
	return k;
}

bool mover_get(struct mover *m, uint64_t id, struct mover_job_info *out)
{
	bool found = false;

	pthread_mutex_lock(&m->lock);
	for (struct job *j = m->live; j && !found; j = j->next)
		if (j->info.id == id) {
			*out = live_info(j);
			found = true;
		}
	for (unsigned i = 0; i < m->nfinished && !found; i++)
		if (m->finished[i].id == id) {
			*out = m->finished[i];
			found = true;
		}
	pthread_mutex_unlock(&m->lock);
	return found;
}

unsigned mover_take_finished(struct mover *m, struct mover_job_info **out)
{
	uint64_t v;
	unsigned n;

	pthread_mutex_lock(&m->lock);
	if (read(m->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("mover: eventfd read: %s", strerror(errno));
	n = m->nuntaken;
	*out = m->untaken;
	m->untaken = NULL;
	m->nuntaken = m->capuntaken = 0;
	pthread_mutex_unlock(&m->lock);
	return n;
}

int mover_event_fd(const struct mover *m)
{
	return m->efd;
}

void mover_get_stats(struct mover *m, struct mover_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	/* jobs, not workers: a job's walks may keep several busy */
	out->running = 0;
	out->queued = 0;
	for (struct job *j = m->live; j; j = j->next) {
		out->queued += j->info.state == MJ_QUEUED;
		out->running += j->info.state == MJ_RUNNING;
	}
	pthread_mutex_unlock(&m->lock);
}
