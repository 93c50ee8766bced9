/* migbench — how fast memory moves between nodes, measured in the testbed
 * VM in one run (make bench-migrate), for 4 KiB and THP-backed memory,
 * idle guests and busy ones (each rewriting its memory on one CPU):
 *
 *   raw      one thread, move_pages(2) of every page, 16384 pages a call,
 *            the guests one after another (busy: also raw_one_guest, one
 *            guest holding all the memory — one busy vCPU, not four)
 *   migrate_pages  migrate_pages(2) of each guest, one call each
 *   mover    numaorchd's mover (orchestrator/mover/mover.c, linked in) with 1,
 *            2 and 4 workers (on=target: each worker runs on the target
 *            node's CPUs): aggregate MiB/s
 *   cpuset   a cgroup v2 cpuset.mems write of one cgroup holding the
 *            guests (the kernel migrates inside it)
 *
 * Every case moves the same four guests' memory (MIB/4 each, default
 * 256 MiB in all idle, 64 busy), first touched on node 0, to node 1, with
 * kernel.numa_balancing = 0; every case starts from fresh guests (child
 * processes). Each call's duration — the guest's stall, its pages in
 * flight — is reported: p50/p99 exact for raw (every call timed), bucket
 * bounds from the mover's histogram. One line per case,
 * "R pages=... case=... mib=... s=... mibs=..." (+ stall figures).
 *
 *   migbench [--mib N] [--busy-mib N] [--only idle|busy] [--pages 4k|thp]
 *            [--repeat N] [--pairs N|KIND=N,...] [--trace]
 *   migbench --hinted [--busy-mib N]
 *   migbench --hugetlb MIB
 *
 * --hugetlb: the mover and the hugetlb pools (issue 43). A child holds MIB
 * MiB of 2 MiB huge pages (MAP_HUGETLB) on node 0; the mover is asked to
 * move it to node 1 twice, first as node 1's pool is (the caller leaves it
 * without free pages), then with MIB MiB of pages reserved there. One line
 * each: "H case=nofree|free state=... on0=... on1=... pools_before=...
 * pools_after=... msg=..." (pages per node from numa_maps, pools as
 * node:total/free/surplus).
 *
 * --repeat N runs the selection N times in the one boot (run-to-run
 * variance on a shared host is large: only same-run figures compare);
 * --pairs N, after a page kind's cases, runs raw and the default mover
 * (2 workers on the target's CPUs: the comparison issue 13's target is
 * about) N times more, alternately and each from fresh guests, as
 * "R ... case=raw_pair pair=K ..." and "R ... case=mover_pair pair=K
 * ..." lines (otherwise the fields of raw and mover). One raw and one
 * mover figure cannot say what a host whose load varies 4x within a
 * minute does to the ratio; pairs close in time can. Pair K runs raw
 * first when K is odd, the mover first when even (ABBA), so a drift in
 * the host's load costs both sides alike. KIND=N (KIND as in the R
 * lines' pages=: thp, 4k, thp-busy, 4k-busy) sets a kind's count apart:
 * busy 4 KiB cases take 10-25 s each. "T pages=... cases_s=... pairs_s=..."
 * says what a kind's cases and pairs cost in wall time;
 * --trace logs each of the mover's calls (debug level, to stderr).
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/numamig.h"

#define CG "/sys/fs/cgroup/migbench"

static int busy;
#define MPOL_DEFAULT_ 0
#define MPOL_BIND_ 2

/* What the guest itself feels: a busy guest stamps the clock after each
 * page it rewrites; an idle one wakes every 2 ms and times one write to a
 * page (the write waits while that page is in flight). A gap of at least
 * GAP_MIN_MS is kept, with the time it ended, in memory shared with the
 * parent, which keeps those inside a case's move (and, busy, those of the
 * second before it: the control — under TCG a vCPU is also preempted). */
#define GAP_MIN_MS 1.0
#define NGAPS 8192
struct gaps {
	volatile unsigned n;          /* gaps recorded (the ring wraps) */
	double end[NGAPS], ms[NGAPS];
};

struct guest {
	pid_t pid;
	char *addr;
	size_t len;
	struct gaps *gaps;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void gap_note(struct gaps *gp, double t, double ms)
{
	unsigned i = gp->n % NGAPS;

	gp->end[i] = t;
	gp->ms[i] = ms;
	__atomic_store_n(&gp->n, gp->n + 1, __ATOMIC_RELEASE);
}

static int wr(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* A child holding MIB MiB first touched on node 0; CGROUP (or NULL) is
 * joined first. Reports its mapping through a pipe. */
static struct guest spawn(unsigned mib, bool thp, const char *cgroup)
{
	struct guest g = { .len = (size_t)mib << 20 };
	int pfd[2];

	if (pipe(pfd) < 0)
		exit(1);
	g.gaps = mmap(NULL, sizeof(*g.gaps), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g.gaps == MAP_FAILED)
		exit(1);
	g.gaps->n = 0;
	g.pid = fork();
	if (g.pid == 0) {
		unsigned long node0 = 1;
		size_t al = 2u << 20;
		char *raw, *mem;

		close(pfd[0]);
		if (cgroup) {
			char p[256], me[32];

			snprintf(p, sizeof(p), "%s/cgroup.procs", cgroup);
			snprintf(me, sizeof(me), "%d", (int)getpid());
			if (wr(p, me) < 0)
				_exit(2);
		}
		raw = mmap(NULL, g.len + al, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			_exit(3);
		mem = (char *)(((uintptr_t)raw + al - 1) & ~(uintptr_t)(al - 1));
		madvise(mem, g.len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		if (syscall(SYS_set_mempolicy, MPOL_BIND_, &node0, 64) < 0)
			_exit(4);
		for (size_t i = 0; i < g.len; i += 4096)
			mem[i] = 1;
		syscall(SYS_set_mempolicy, MPOL_DEFAULT_, NULL, 0);
		if (write(pfd[1], &mem, sizeof(mem)) != sizeof(mem))
			_exit(5);
		/* A busy guest keeps writing its memory (a cache line at a
		 * time, as guestload does): what migration must work against. */
		if (busy) {
			double last = now();

			for (;;)
				for (size_t i = 0; i < g.len; i += 4096) {
					double t;

					for (size_t c = 0; c < 4096; c += 64)
						mem[i + c]++;
					t = now();
					if ((t - last) * 1e3 >= GAP_MIN_MS)
						gap_note(g.gaps, t, (t - last) * 1e3);
					last = t;
				}
		}
		for (size_t i = 0;; i = (i + 7 * 4096 + 64) % g.len) {
			struct timespec ts = { 0, 2000000 };
			double t0, t1;

			nanosleep(&ts, NULL);
			t0 = now();
			mem[i]++;
			t1 = now();
			if ((t1 - t0) * 1e3 >= GAP_MIN_MS)
				gap_note(g.gaps, t1, (t1 - t0) * 1e3);
		}
	}
	close(pfd[1]);
	if (g.pid < 0 || read(pfd[0], &g.addr, sizeof(g.addr)) != sizeof(g.addr)) {
		fprintf(stderr, "migbench: a guest did not start\n");
		exit(1);
	}
	close(pfd[0]);
	return g;
}

static void reap(struct guest *g)
{
	kill(g->pid, SIGKILL);
	waitpid(g->pid, NULL, 0);
	munmap(g->gaps, sizeof(*g->gaps));
}

/* KiB of G backed by transparent huge pages (smaps_rollup). */
static long thp_kib(const struct guest *g)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)g->pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* MiB of G on node NODE, by move_pages queries. */
static double mib_on(const struct guest *g, int node)
{
	size_t n = g->len / 4096, on = 0;
	void **pages = xcalloc(16384, sizeof(void *));
	int *st = xcalloc(16384, sizeof(int));

	for (size_t i = 0; i < n; i += 16384) {
		size_t k = n - i < 16384 ? n - i : 16384;

		for (size_t j = 0; j < k; j++)
			pages[j] = g->addr + (i + j) * 4096;
		if (numamig_move(g->pid, k, pages, NULL, st) == 0)
			for (size_t j = 0; j < k; j++)
				on += st[j] == node;
	}
	free(pages);
	free(st);
	return (double)on * 4096 / 1048576;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Quantile Q of the N sorted values V. */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n);

	if (!n)
		return 0;
	return v[i >= n ? n - 1 : i];
}

#define NGUESTS 4

/* The guests' gaps that ended in [T0, T1): " PREFIX_n=.. PREFIX_p50_ms=..
 * PREFIX_p99_ms=.. PREFIX_max_ms=.." into BUF. */
static void gap_summary(struct guest *g, unsigned ng, double t0, double t1, const char *prefix, char *buf,
			size_t sz)
{
	double *v = xcalloc((size_t)ng * NGAPS, sizeof(double));
	size_t n = 0;
	bool lost = false;

	for (unsigned k = 0; k < ng; k++) {
		unsigned total = __atomic_load_n(&g[k].gaps->n, __ATOMIC_ACQUIRE);
		unsigned first = total > NGAPS ? total - NGAPS : 0;

		for (unsigned i = first; i < total; i++) {
			unsigned j = i % NGAPS;

			if (g[k].gaps->end[j] >= t0 && g[k].gaps->end[j] < t1)
				v[n++] = g[k].gaps->ms[j];
		}
		/* the ring overwrote gaps still inside the window */
		lost |= first > 0 && g[k].gaps->end[first % NGAPS] >= t0;
	}
	qsort(v, n, sizeof(v[0]), cmp_double);
	snprintf(buf, sz, " %s_n=%zu%s %s_p50_ms=%.1f %s_p99_ms=%.1f %s_max_ms=%.1f", prefix, n, lost ? "+" : "",
		 prefix, quantile(v, n, 0.5), prefix, quantile(v, n, 0.99), prefix, n ? v[n - 1] : 0);
	free(v);
}

static void spawn_all(struct guest *g, unsigned mib, bool thp, const char *cgroup)
{
	for (int i = 0; i < NGUESTS; i++)
		g[i] = spawn(mib / NGUESTS, thp, cgroup);
}

#define CONTROL_S 1.0
static long thp_before_kib;

/* Let NG guests run CONTROL_S (the control window of their gaps), note
 * their THP; returns the move's start time. */
static double begin_move(struct guest *g, unsigned ng)
{
	struct timespec ts = { (time_t)CONTROL_S, 0 };

	nanosleep(&ts, NULL);
	thp_before_kib = 0;
	for (unsigned i = 0; i < ng; i++)
		thp_before_kib += thp_kib(&g[i]);
	return now();
}

/* What NG guests felt in the move [T0, T1) and in the control second
 * before it, and their THP before and after: appended to an R line. */
static void end_move(struct guest *g, unsigned ng, double t0, double t1, char *buf, size_t sz)
{
	char a[160], b[160];
	long after = 0;

	for (unsigned i = 0; i < ng; i++)
		after += thp_kib(&g[i]);
	gap_summary(g, ng, t0, t1, "guest_gap", a, sizeof(a));
	gap_summary(g, ng, t0 - CONTROL_S, t0, "control_gap", b, sizeof(b));
	snprintf(buf, sz, " thp_mib_before=%ld thp_mib_after=%ld%s%s", thp_before_kib / 1024, after / 1024, a, b);
}

/* MiB of the guests on node 1, and the guests reaped. */
static double finish_all(struct guest *g)
{
	double moved = 0;

	for (int i = 0; i < NGUESTS; i++) {
		moved += mib_on(&g[i], 1);
		reap(&g[i]);
	}
	return moved;
}

/* One guest holding all MIB, moved by raw move_pages: with busy guests
 * the figure the mover used to be compared with — one busy vCPU where
 * the other cases have four (under TCG each busy vCPU slows every
 * migration's TLB shootdowns: make bench-migrate, 2026-12-01). */
static void raw_one_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g = spawn(mib, thp, NULL);
	void **pages = xcalloc(16384, sizeof(void *));
	int *nodes = xcalloc(16384, sizeof(int)), *st = xcalloc(16384, sizeof(int));
	size_t n = g.len / 4096;
	double t0, t1, moved;

	char felt[512];

	for (size_t j = 0; j < 16384; j++)
		nodes[j] = 1;
	t0 = begin_move(&g, 1);
	for (size_t i = 0; i < n; i += 16384) {
		size_t k = n - i < 16384 ? n - i : 16384;

		for (size_t j = 0; j < k; j++)
			pages[j] = g.addr + (i + j) * 4096;
		numamig_move(g.pid, k, pages, nodes, st);
	}
	t1 = now();
	end_move(&g, 1, t0, t1, felt, sizeof(felt));
	moved = mib_on(&g, 1);
	reap(&g);
	printf("R pages=%s%s case=raw_one_guest mib=%.0f s=%.3f mibs=%.1f%s\n", pages_name, busy ? "-busy" : "", moved,
	       t1 - t0, moved / (t1 - t0), felt);
	free(pages);
	free(nodes);
	free(st);
}

/* TAG (e.g. " pair=3", or "") follows the case's name in its R line. */
static void raw_case(const char *pages_name, const char *case_name, const char *tag, unsigned mib, bool thp)
{
	char felt[512];
	struct guest g[NGUESTS];
	void **pages = xcalloc(16384, sizeof(void *));
	int *nodes = xcalloc(16384, sizeof(int)), *st = xcalloc(16384, sizeof(int));
	double t0, t1, moved, calls[4096];
	size_t ncalls = 0;

	spawn_all(g, mib, thp, NULL);
	for (size_t j = 0; j < 16384; j++)
		nodes[j] = 1;
	t0 = begin_move(g, NGUESTS);
	for (int gi = 0; gi < NGUESTS; gi++) {
		size_t n = g[gi].len / 4096;

		for (size_t i = 0; i < n; i += 16384) {
			size_t k = n - i < 16384 ? n - i : 16384;
			double c0;

			for (size_t j = 0; j < k; j++)
				pages[j] = g[gi].addr + (i + j) * 4096;
			c0 = now();
			numamig_move(g[gi].pid, k, pages, nodes, st);
			if (ncalls < sizeof(calls) / sizeof(calls[0]))
				calls[ncalls++] = (now() - c0) * 1e3;
		}
	}
	t1 = now();
	end_move(g, NGUESTS, t0, t1, felt, sizeof(felt));
	moved = finish_all(g);
	qsort(calls, ncalls, sizeof(calls[0]), cmp_double);
	printf("R pages=%s%s case=%s%s mib=%.0f s=%.3f mibs=%.1f calls=%zu stall_p50_ms=%.1f stall_p99_ms=%.1f%s\n",
	       pages_name, busy ? "-busy" : "", case_name, tag, moved, t1 - t0, moved / (t1 - t0), ncalls,
	       quantile(calls, ncalls, 0.5), quantile(calls, ncalls, 0.99), felt);
	free(pages);
	free(nodes);
	free(st);
}

/* migrate_pages(2) of the whole process, in the caller's context (no
 * chunks: one call moves everything). */
static void migrate_pages_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g[NGUESTS];
	int from = 0, to = 1, r;
	double t0, t1, moved, worst = 0;
	char felt[512];

	spawn_all(g, mib, thp, NULL);
	t0 = begin_move(g, NGUESTS);
	for (int i = 0; i < NGUESTS; i++) {
		double c0 = now();

		r = numamig_pages(g[i].pid, &from, 1, &to, 1);
		if (r < 0)
			fprintf(stderr, "migbench: migrate_pages: %s\n", strerror(-r));
		if ((now() - c0) * 1e3 > worst)
			worst = (now() - c0) * 1e3;
	}
	t1 = now();
	end_move(g, NGUESTS, t0, t1, felt, sizeof(felt));
	moved = finish_all(g);
	printf("R pages=%s%s case=migrate_pages mib=%.0f s=%.3f mibs=%.1f calls=%d stall_max_ms=%.1f%s\n", pages_name,
	       busy ? "-busy" : "", moved, t1 - t0, moved / (t1 - t0), NGUESTS, worst, felt);
}

/* The bucket bound under which fraction Q of the calls fall, ms; past
 * the last bound, "inf". */
static const char *stall_q(const struct mover_stats *s, double q, char *buf, size_t sz)
{
	for (unsigned b = 0; b < MOVER_NR_BUCKETS; b++)
		if ((double)s->stall_le[b] >= q * (double)s->stall_count) {
			snprintf(buf, sz, "%.0f", mover_stall_buckets_ms[b]);
			return buf;
		}
	return "inf";
}

static void mover_case(const char *pages_name, const char *case_name, const char *tag, unsigned mib, bool thp,
		       unsigned workers, bool on_target)
{
	struct mover_config cfg = { .workers = workers, .rate_mib = 0, .chunk_ms = 20,
				    .job_timeout_s = busy ? 120 : 600, .on_target = on_target };
	struct host_paths hp;
	struct mover *m;
	struct guest g[NGUESTS];
	struct mover_stats st;
	double t0, t1, moved = 0, job_mib = 0;
	char q50[16], q99[16], felt[512];

	host_paths_default(&hp);
	spawn_all(g, mib, thp, NULL);
	if (mover_new(&cfg, &hp, &m) < 0)
		exit(1);
	t0 = begin_move(g, NGUESTS);
	for (int i = 0; i < NGUESTS; i++) {
		struct mover_spec s;

		memset(&s, 0, sizeof(s));
		snprintf(s.guest, sizeof(s.guest), "g%d", i);
		snprintf(s.cause, sizeof(s.cause), "bench");
		s.npids = 1;
		s.pids = &g[i].pid;
		mask_parse("1", &s.to);
		s.bytes = g[i].len;
		mover_submit(m, &s);
	}
	mover_wait_idle(m, 600);
	t1 = now();
	end_move(g, NGUESTS, t0, t1, felt, sizeof(felt));
	mover_get_stats(m, &st);
	{
		struct mover_job_info *v;
		unsigned n = mover_list(m, &v);

		for (unsigned i = 0; i < n; i++)
			job_mib += (double)v[i].bytes_done / 1048576;
		free(v);
	}
	moved = finish_all(g);
	/* job_mib: what the jobs say they moved, against mib (counted here) */
	printf("R pages=%s%s case=%s%s workers=%u on=%s mib=%.0f job_mib=%.0f s=%.3f mibs=%.1f calls=%llu "
	       "stall_mean_ms=%.1f stall_p50_ms<=%s stall_p99_ms<=%s queries=%llu query_s=%.3f%s\n",
	       pages_name, busy ? "-busy" : "", case_name, tag, workers, on_target ? "target" : "any", moved, job_mib, t1 - t0,
	       moved / (t1 - t0), (unsigned long long)st.stall_count,
	       st.stall_count ? st.stall_sum_s * 1e3 / (double)st.stall_count : 0, stall_q(&st, 0.5, q50, sizeof(q50)),
	       stall_q(&st, 0.99, q99, sizeof(q99)), (unsigned long long)st.query_count, st.query_sum_s, felt);
	mover_free(m);
}

static void cpuset_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g[NGUESTS];
	double t0, t1, moved;
	char felt[512];

	mkdir(CG, 0755);
	wr("/sys/fs/cgroup/cgroup.subtree_control", "+cpuset +memory");
	wr(CG "/cpuset.mems", "0");
	spawn_all(g, mib, thp, CG);
	t0 = begin_move(g, NGUESTS);
	if (wr(CG "/cpuset.mems", "1") < 0)
		fprintf(stderr, "migbench: cpuset.mems write failed: %s\n", strerror(errno));
	t1 = now();
	end_move(g, NGUESTS, t0, t1, felt, sizeof(felt));
	moved = finish_all(g);
	/* the guests' stall: the whole write (their pages move inside it) */
	printf("R pages=%s%s case=cpuset mib=%.0f s=%.3f mibs=%.1f calls=1 stall_max_ms=%.1f%s\n", pages_name,
	       busy ? "-busy" : "", moved, t1 - t0, moved / (t1 - t0), (t1 - t0) * 1e3, felt);
	for (int tries = 0; rmdir(CG) < 0 && errno == EBUSY && tries < 100; tries++)
		usleep(10000); /* the reaped guests leave the cgroup asynchronously */
}

static void run_all(unsigned mib, bool thp)
{
	const char *name = thp ? "thp" : "4k";

	raw_case(name, "raw", "", mib, thp);
	if (busy)
		raw_one_case(name, mib, thp);
	migrate_pages_case(name, mib, thp);
	for (unsigned w = 1; w <= 4; w *= 2)
		mover_case(name, "mover", "", mib, thp, w, false);
	mover_case(name, "mover", "", mib, thp, 2, true);
	mover_case(name, "mover", "", mib, thp, 4, true);
	cpuset_case(name, mib, thp);
	/* raw once more, last: a figure that drifts from the first says the
	 * run's order (memory fragmenting, THP running out) is in the
	 * comparison */
	raw_case(name, "raw_last", "", mib, thp);
}

/* N interleaved pairs of raw and the default mover (see --pairs). */
static void run_pairs(unsigned mib, bool thp, unsigned n)
{
	const char *name = thp ? "thp" : "4k";

	for (unsigned k = 1; k <= n; k++) {
		char tag[32];

		snprintf(tag, sizeof(tag), " pair=%u", k);
		if (k % 2)
			raw_case(name, "raw_pair", tag, mib, thp);
		mover_case(name, "mover_pair", tag, mib, thp, 2, true);
		if (!(k % 2))
			raw_case(name, "raw_pair", tag, mib, thp);
	}
}

/* The pairs for page kind KIND ("thp-busy" ...) by SPEC: "N" for every
 * kind, or "KIND=N,..." (kinds not named: 0). -1 when SPEC is not that
 * (a kind other than the four, a count that is not a number): the whole
 * SPEC is checked whatever KIND is, so a typo fails before any case runs. */
static int pairs_for(const char *spec, const char *kind)
{
	static const char *const kinds[] = { "thp", "4k", "thp-busy", "4k-busy" };
	const char *p = spec;
	int found = 0;
	char *end;
	long n;

	if (!*spec)
		return 0;
	n = strtol(spec, &end, 10);
	if (end != spec && !*end)
		return n >= 0 && n <= 1000 ? (int)n : -1;
	while (*p) {
		size_t kl = strcspn(p, "=,");
		bool known = false;

		for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			known |= kl == strlen(kinds[i]) && strncmp(p, kinds[i], kl) == 0;
		if (!known || p[kl] != '=')
			return -1;
		n = strtol(p + kl + 1, &end, 10);
		if (end == p + kl + 1 || n < 0 || n > 1000 || (*end && *end != ','))
			return -1;
		if (kl == strlen(kind) && strncmp(p, kind, kl) == 0)
			found = (int)n;
		p = *end ? end + 1 : end;
	}
	return found;
}

/* Counts of move_pages(2) answers over G's pages: per node, and per
 * -errno (ENOENT, EFAULT, EBUSY, EACCES, other). NODES NULL: a query;
 * else every page to NODE. */
static void status_counts(const struct guest *g, int node, bool move, char *buf, size_t sz)
{
	size_t n = g->len / 4096, per[8] = { 0 }, enoent = 0, efault = 0, ebusy = 0, eacces = 0, other = 0;
	void **pages = xcalloc(16384, sizeof(void *));
	int *st = xcalloc(16384, sizeof(int)), *to = xcalloc(16384, sizeof(int));
	size_t off = 0;

	for (size_t i = 0; i < n; i += 16384) {
		size_t k = n - i < 16384 ? n - i : 16384;

		for (size_t j = 0; j < k; j++) {
			pages[j] = g->addr + (i + j) * 4096;
			to[j] = node;
		}
		if (numamig_move(g->pid, k, pages, move ? to : NULL, st) != 0) {
			other += k;
			continue;
		}
		for (size_t j = 0; j < k; j++) {
			if (st[j] >= 0 && st[j] < 8)
				per[st[j]]++;
			else if (st[j] == -ENOENT)
				enoent++;
			else if (st[j] == -EFAULT)
				efault++;
			else if (st[j] == -EBUSY)
				ebusy++;
			else if (st[j] == -EACCES)
				eacces++;
			else
				other++;
		}
	}
	for (int nd = 0; nd < 8; nd++)
		if (per[nd])
			off += (size_t)snprintf(buf + off, off < sz ? sz - off : 0, "N%d=%zu ", nd, per[nd]);
	snprintf(buf + off, off < sz ? sz - off : 0, "ENOENT=%zu EFAULT=%zu EBUSY=%zu EACCES=%zu other=%zu", enoent,
		 efault, ebusy, eacces, other);
	free(pages);
	free(st);
	free(to);
}

/* MiB of PID's pages on NODE by /proc/PID/numa_maps, which walks the
 * page tables itself (a hinted page counts where it is). */
static double numa_maps_mib(pid_t pid, int node)
{
	char path[64], line[4096], key[16];
	double kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)pid);
	snprintf(key, sizeof(key), " N%d=", node);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *n = strstr(line, key), *ps = strstr(line, "kernelpagesize_kB=");

		if (n && ps)
			kib += strtod(n + strlen(key), NULL) * strtod(ps + 18, NULL);
	}
	fclose(f);
	return kib / 1024;
}

/* --hinted: what move_pages(2) sees of pages the kernel's NUMA balancing
 * has marked for a hinting fault (PROT_NONE until the next touch). A busy
 * guest of MIB on node 0's CPUs, balancing BAL for 3 s (its scanner marks
 * the guest's pages as it runs), then stopped (SIGSTOP: the marks stay)
 * and balancing off; its pages queried, moved to node 1, queried again.
 * One "H case=hinted ..." line per page kind and BAL. */
static void hinted_case(unsigned mib, bool thp, int bal)
{
	char q0[256], mv[256], q1[256];
	double before;
	struct guest g;
	cpu_set_t cs;
	double t0;

	busy = 1;
	g = spawn(mib, thp, NULL);
	CPU_ZERO(&cs);
	CPU_SET(0, &cs);
	sched_setaffinity(g.pid, sizeof(cs), &cs);
	wr("/proc/sys/kernel/numa_balancing", bal ? "1" : "0");
	t0 = now();
	while (now() - t0 < 3.0)
		usleep(100000);
	kill(g.pid, SIGSTOP);
	wr("/proc/sys/kernel/numa_balancing", "0");
	before = numa_maps_mib(g.pid, 1);
	status_counts(&g, -1, false, q0, sizeof(q0));
	status_counts(&g, 1, true, mv, sizeof(mv));
	status_counts(&g, -1, false, q1, sizeof(q1));
	printf("H case=hinted pages=%s balancing=%d mib=%u query: %s | move to 1: %s | query after: %s | "
	       "numa_maps on node 1: %.1f -> %.1f MiB\n", thp ? "thp" : "4k", bal, mib, q0, mv, q1, before,
	       numa_maps_mib(g.pid, 1));
	kill(g.pid, SIGCONT);
	reap(&g);
}

/* Async-signal-safe formatting for on_fault (no snprintf there). */
static size_t fmt_u(char *buf, unsigned long v, unsigned base)
{
	char tmp[24];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < sizeof(tmp));
	while (n)
		buf[k++] = tmp[--n];
	return k;
}

static void put(const char *s, size_t n)
{
	if (write(2, s, n) < 0)
		_exit(126);
}

/* A crash says where: the return addresses of the faulting thread, for
 * addr2line -f -e build/numa-vm/bin/migbench (a static binary, no PIE).
 * The bench's first whole run with busy 4 KiB pairs died of SIGSEGV with
 * nothing else to go on. Only async-signal-safe calls: write(2), and
 * backtrace(3), whose one-time set-up (it may allocate) main() did. */
static void on_fault(int sig)
{
	void *pc[48];
	int n = backtrace(pc, 48);
	char num[24];

	put("F signal=", 9);
	put(num, fmt_u(num, (unsigned long)sig, 10));
	put(" thread=", 8);
	put(num, fmt_u(num, (unsigned long)syscall(SYS_gettid), 10));
	put(" frames:", 8);
	for (int i = 0; i < n; i++) {
		put(" 0x", 3);
		put(num, fmt_u(num, (unsigned long)(uintptr_t)pc[i], 16));
	}
	put("\n", 1);
	signal(sig, SIG_DFL);
	raise(sig);
}


/* The mover's read_meminfo for --hugetlb: each node's 2 MiB pool from
 * sysfs, and free memory that never limits (only the pool is tested). */
static int huge_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr)
{
	(void)hp;
	for (unsigned i = 0; i < nr; i++) {
		static const char *const leaf[3] = { "nr_hugepages", "free_hugepages", "surplus_hugepages" };
		unsigned long long v[3] = { 0, 0, 0 };

		for (int k = 0; k < 3; k++) {
			char path[160], buf[32] = "";
			int fd;
			ssize_t n;

			snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/%s",
				 nodes[i].id, leaf[k]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				return -EIO;
			v[k] = strtoull(buf, NULL, 10);
		}
		nodes[i].mem_total = nodes[i].mem_free = 1ULL << 40;
		nodes[i].nr_hpools = 1;
		nodes[i].hpools[0].page = 2ULL << 20;
		nodes[i].hpools[0].total = v[0];
		nodes[i].hpools[0].free = v[1];
		nodes[i].hpools[0].surplus = v[2];
	}
	return 0;
}

static void pools(char *buf, size_t sz)
{
	struct snap_node n[2];

	memset(n, 0, sizeof(n));
	n[0].id = 0;
	n[1].id = 1;
	if (huge_meminfo(NULL, n, 2) < 0) {
		snprintf(buf, sz, "unknown");
		return;
	}
	snprintf(buf, sz, "0:%llu/%llu/%llu,1:%llu/%llu/%llu", (unsigned long long)n[0].hpools[0].total,
		 (unsigned long long)n[0].hpools[0].free, (unsigned long long)n[0].hpools[0].surplus,
		 (unsigned long long)n[1].hpools[0].total, (unsigned long long)n[1].hpools[0].free,
		 (unsigned long long)n[1].hpools[0].surplus);
}

/* Huge pages of PID on node NODE, from its numa_maps "huge" lines. */
static unsigned long huge_pages_on(pid_t pid, int node)
{
	char path[64], key[16], *buf = malloc(1 << 20), *l;
	unsigned long sum = 0;
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)pid);
	snprintf(key, sizeof(key), " N%d=", node);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((n = read(fd, buf + got, (1 << 20) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		char *e = strchr(l, '\n'), *k;

		if (e)
			*e = 0;
		if (strstr(l, " huge ") && (k = strstr(l, key)))
			sum += strtoul(k + strlen(key), NULL, 10);
		if (e)
			*e = '\n';
	}
	free(buf);
	return sum;
}

static void hugetlb_case(unsigned mib)
{
	struct mover_config cfg = { .workers = 1, .rate_mib = 0, .chunk_ms = 20, .job_timeout_s = 120 };
	struct host_paths hp;
	int pfd[2];
	pid_t pid;
	char c;

	if (pipe(pfd) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		unsigned long node0 = 1;
		size_t len = (size_t)mib << 20;
		char *mem;

		close(pfd[0]);
		/* first touch on node 0, then no policy: nothing holds them there */
		if (syscall(SYS_set_mempolicy, MPOL_BIND_, &node0, 64UL) < 0)
			_exit(1);
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (mem == MAP_FAILED) {
			perror("migbench: mmap MAP_HUGETLB");
			_exit(1);
		}
		for (size_t off = 0; off < len; off += 2u << 20)
			mem[off] = 1;
		syscall(SYS_set_mempolicy, MPOL_DEFAULT_, NULL, 0UL);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		printf("H case=setup failed: the child could not map %u MiB of huge pages on node 0\n", mib);
		waitpid(pid, NULL, 0);
		return;
	}
	close(pfd[0]);
	host_paths_default(&hp);
	for (int round = 0; round < 2; round++) {
		struct mover *m;
		struct mover_spec s;
		struct mover_job_info *v;
		char before[96], after[96];
		unsigned nj;

		if (round == 1) {
			char want[16];

			snprintf(want, sizeof(want), "%u", mib / 2);
			wr("/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", want);
		}
		pools(before, sizeof(before));
		if (mover_new(&cfg, &hp, &m) < 0)
			exit(1);
		mover_set_meminfo(m, huge_meminfo);
		memset(&s, 0, sizeof(s));
		snprintf(s.guest, sizeof(s.guest), "hugetlb");
		snprintf(s.cause, sizeof(s.cause), "bench");
		s.npids = 1;
		s.pids = &pid;
		mask_parse("1", &s.to);
		s.bytes = (uint64_t)mib << 20;
		mover_submit(m, &s);
		mover_wait_idle(m, 120);
		pools(after, sizeof(after));
		nj = mover_list(m, &v);
		printf("H case=%s state=%s on0=%lu on1=%lu pools_before=%s pools_after=%s msg=%s\n",
		       round ? "free" : "nofree", nj ? mover_state_name(v[0].state) : "none", huge_pages_on(pid, 0),
		       huge_pages_on(pid, 1), before, after, nj ? v[0].msg : "");
		free(v);
		mover_free(m);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	unsigned mib = 256, busy_mib = 64, repeat = 1;
	bool trace = false;
	const char *only = "", *pages = "", *pairs = "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	{
		/* backtrace(3)'s first call loads its unwinder (may allocate):
		 * here, not in the handler. */
		void *pc[2];

		(void)backtrace(pc, 2);
	}
	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
	signal(SIGABRT, on_fault);
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--mib") == 0)
			mib = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--busy-mib") == 0)
			busy_mib = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0)
			only = argv[++i];
		else if (strcmp(argv[i], "--pages") == 0)
			pages = argv[++i];
		else if (strcmp(argv[i], "--repeat") == 0)
			repeat = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--pairs") == 0)
			pairs = argv[++i];
	}
	if (pairs_for(pairs, "thp") < 0) {
		fprintf(stderr, "migbench: --pairs %s: want N or KIND=N,... (KIND: thp, 4k, thp-busy, 4k-busy)\n",
			pairs);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		trace |= strcmp(argv[i], "--trace") == 0;
	log_set_level(trace ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN);
	if (!numamig_available()) {
		printf("SKIP: no NUMA API\n");
		return 77;
	}
	wr("/proc/sys/kernel/numa_balancing", "0");
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--hugetlb") == 0) {
			hugetlb_case((unsigned)atoi(argv[i + 1]));
			return 0;
		}
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--hinted") == 0) {
			for (int t = 1; t >= 0; t--)
				for (int bal = 0; bal < 2; bal++)
					hinted_case(busy_mib, t == 1, bal);
			return 0;
		}
	for (unsigned rep = 0; rep < repeat; rep++)
		for (int b = 0; b < 2; b++) {
			busy = b;
			if (*only && strcmp(only, b ? "busy" : "idle") != 0)
				continue;
			/* THP first: the busy 4 KiB case is the slow one under TCG */
			for (int t = 1; t >= 0; t--) {
				char kind[16];
				double c0, c1;
				int np;

				if (*pages && strcmp(pages, t ? "thp" : "4k") != 0)
					continue;
				snprintf(kind, sizeof(kind), "%s%s", t ? "thp" : "4k", b ? "-busy" : "");
				np = pairs_for(pairs, kind);
				if (repeat > 1)
					printf("P rep=%u\n", rep + 1);
				c0 = now();
				run_all(b ? busy_mib : mib, t == 1);
				c1 = now();
				run_pairs(b ? busy_mib : mib, t == 1, (unsigned)np);
				printf("T pages=%s cases_s=%.1f pairs=%d pairs_s=%.1f\n", kind, c1 - c0, np, now() - c1);
			}
		}
	return 0;
}
