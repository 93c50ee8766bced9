/* migbench — how fast memory moves between nodes, measured in the testbed
 * VM in one run (make bench-migrate), for 4 KiB and THP-backed memory:
 *
 *   raw      one thread, move_pages(2) of every page, 16384 pages a call
 *   mover    numaorchd's mover (orchestrator/mover.c, linked in) with 1,
 *            2 and 4 workers, four guests of MIB/4 each: aggregate MiB/s
 *            and each move call's duration (the guest's stall), p50/p99
 *   cpuset   a cgroup v2 cpuset.mems write (the kernel migrates inside it)
 *
 * Each case moves MIB MiB (default 256) of idle guests' memory, first
 * touched on node 0, to node 1, with kernel.numa_balancing = 0. Guests are
 * child processes; every case starts from fresh ones. Prints one line per
 * case, "R pages=... case=... mib=... s=... mibs=..." (+ stall figures).
 *
 * Then the same with busy guests (each rewriting its memory), 64 MiB.
 *
 *   migbench [--mib N]
 */
#include <errno.h>
#include <fcntl.h>
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

#include "orchestrator/xalloc.h"
#include "orchestrator/hostpaths.h"
#include "orchestrator/log.h"
#include "orchestrator/mover.h"
#include "orchestrator/numamig.h"

#define CG "/sys/fs/cgroup/migbench"

static int busy;
#define MPOL_DEFAULT_ 0
#define MPOL_BIND_ 2

struct guest {
	pid_t pid;
	char *addr;
	size_t len;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
		while (busy)
			for (size_t i = 0; i < g.len; i += 64)
				mem[i]++;
		for (;;)
			pause();
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

static void raw_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g = spawn(mib, thp, NULL);
	size_t n = g.len / 4096;
	void **pages = xcalloc(16384, sizeof(void *));
	int *nodes = xcalloc(16384, sizeof(int)), *st = xcalloc(16384, sizeof(int));
	double t0, t1, moved;

	for (size_t j = 0; j < 16384; j++)
		nodes[j] = 1;
	t0 = now();
	for (size_t i = 0; i < n; i += 16384) {
		size_t k = n - i < 16384 ? n - i : 16384;

		for (size_t j = 0; j < k; j++)
			pages[j] = g.addr + (i + j) * 4096;
		numamig_move(g.pid, k, pages, nodes, st);
	}
	t1 = now();
	moved = mib_on(&g, 1);
	printf("R pages=%s%s case=raw mib=%.0f s=%.3f mibs=%.1f\n", pages_name, busy ? "-busy" : "", moved, t1 - t0,
	       moved / (t1 - t0));
	reap(&g);
	free(pages);
	free(nodes);
	free(st);
}

/* migrate_pages(2) of the whole process, in the caller's context (no
 * chunks: one call moves everything). */
static void migrate_pages_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g = spawn(mib, thp, NULL);
	int from = 0, to = 1, r;
	double t0, t1, moved;

	t0 = now();
	r = numamig_pages(g.pid, &from, 1, &to, 1);
	t1 = now();
	if (r < 0)
		fprintf(stderr, "migbench: migrate_pages: %s\n", strerror(-r));
	moved = mib_on(&g, 1);
	printf("R pages=%s%s case=migrate_pages mib=%.0f s=%.3f mibs=%.1f\n", pages_name, busy ? "-busy" : "", moved,
	       t1 - t0, moved / (t1 - t0));
	reap(&g);
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

static void mover_case(const char *pages_name, unsigned mib, bool thp, unsigned workers)
{
	struct mover_config cfg = { .workers = workers, .rate_mib = 0, .chunk_ms = 20,
				    .job_timeout_s = busy ? 120 : 600 };
	struct host_paths hp;
	struct mover *m;
	struct guest g[4];
	struct mover_stats st;
	double t0, t1, moved = 0, job_mib = 0;
	char q50[16], q99[16];

	host_paths_default(&hp);
	for (int i = 0; i < 4; i++)
		g[i] = spawn(mib / 4, thp, NULL);
	if (mover_new(&cfg, &hp, &m) < 0)
		exit(1);
	t0 = now();
	for (int i = 0; i < 4; i++) {
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
	mover_get_stats(m, &st);
	{
		struct mover_job_info *v;
		unsigned n = mover_list(m, &v);

		for (unsigned i = 0; i < n; i++)
			job_mib += (double)v[i].bytes_done / 1048576;
		free(v);
	}
	for (int i = 0; i < 4; i++) {
		moved += mib_on(&g[i], 1);
		reap(&g[i]);
	}
	/* job_mib: what the jobs say they moved, against mib (counted here) */
	printf("R pages=%s%s case=mover workers=%u mib=%.0f job_mib=%.0f s=%.3f mibs=%.1f calls=%llu stall_mean_ms=%.1f "
	       "stall_p50_ms<=%s stall_p99_ms<=%s\n", pages_name, busy ? "-busy" : "", workers, moved, job_mib, t1 - t0, moved / (t1 - t0),
	       (unsigned long long)st.stall_count, st.stall_count ? st.stall_sum_s * 1e3 / (double)st.stall_count : 0,
	       stall_q(&st, 0.5, q50, sizeof(q50)), stall_q(&st, 0.99, q99, sizeof(q99)));
	mover_free(m);
}

static void cpuset_case(const char *pages_name, unsigned mib, bool thp)
{
	struct guest g;
	double t0, t1, moved;

	mkdir(CG, 0755);
	wr("/sys/fs/cgroup/cgroup.subtree_control", "+cpuset +memory");
	wr(CG "/cpuset.mems", "0");
	g = spawn(mib, thp, CG);
	t0 = now();
	if (wr(CG "/cpuset.mems", "1") < 0)
		fprintf(stderr, "migbench: cpuset.mems write failed: %s\n", strerror(errno));
	t1 = now();
	moved = mib_on(&g, 1);
	printf("R pages=%s%s case=cpuset mib=%.0f s=%.3f mibs=%.1f\n", pages_name, busy ? "-busy" : "", moved, t1 - t0, moved / (t1 - t0));
	reap(&g);
	rmdir(CG);
}

int main(int argc, char **argv)
{
	unsigned mib = 256;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = (unsigned)atoi(argv[++i]);
	log_set_level(LOG_LEVEL_WARN);
	if (!numamig_available()) {
		printf("SKIP: no NUMA API\n");
		return 77;
	}
	wr("/proc/sys/kernel/numa_balancing", "0");
	for (int t = 0; t < 2; t++) {
		bool thp = t == 1;
		const char *name = thp ? "thp" : "4k";

		raw_case(name, mib, thp);
		migrate_pages_case(name, mib, thp);
		for (unsigned w = 1; w <= 4; w *= 2)
			mover_case(name, mib, thp, w);
		cpuset_case(name, mib, thp);
	}
	/* Busy guests (each rewriting its memory on one CPU), less memory:
	 * moving a running guest is the slow case under TCG. */
	busy = 1;
	for (int t = 1; t >= 0; t--) {
		bool thp = t == 1;
		const char *name = thp ? "thp" : "4k";

		if (thp)
			raw_case(name, 64, thp);
		migrate_pages_case(name, 64, thp);
		mover_case(name, 64, thp, 1);
		mover_case(name, 64, thp, 4);
		cpuset_case(name, 64, thp);
	}
	return 0;
}
