/* guestload — the workload of one testbed guest: THREADS threads that keep
 * rewriting MIB MiB of memory (each thread its own slice, one write per
 * cache line), as a busy in-memory service would.
 *
 *   guestload --mib M --threads T [--touch NODE | --touch interleave:LIST]
 *             [--pages thp|4k] [--progress FILE] [--ready-fd FD] [--idle]
 *             [--hugetlb MIB [--hugetlb-busy]]
 *
 * --touch makes a bad start on purpose: the memory is first touched under
 * a task memory policy (preferred NODE, or interleaved over LIST) that is
 * dropped again before the threads start, so the pages sit there but
 * nothing pins them (neither the kernel's balancing nor a placer is held
 * back by a policy). "preferred" rather than "bind": a full node spills
 * over instead of OOM-killing the guest.
 *
 * --touch NODE stands for the kernel's own first-touch placement of a
 * guest whose threads ran on NODE's CPUs. So it holds only while its
 * cpuset lets it run there: when its cpuset's CPUs hold none of NODE's
 * (a placer confined it elsewhere before or while it touches), the
 * kernel would place what it touches from then on where it now runs, and
 * so does the default policy here. Likewise when its cpuset's mems no
 * longer hold NODE. sched_setaffinity (the runner's run_on) does not
 * count: it stands for where the threads ran, not for a placer.
 *
 * --hugetlb MIB also maps MIB MiB of 2 MiB huge pages (MAP_HUGETLB, from
 * the hugetlb pools, as a VM backed by hugepages is) and touches them once
 * with the rest, under the same first-touch policy; the threads keep
 * rewriting the ordinary memory only. "hugetlb-ok" follows "ready" when
 * they are there. The pools must hold them: else it fails at the start.
 * --hugetlb-busy makes the threads rewrite the huge pages too (each its
 * slice of them, after its slice of the ordinary memory), as the vCPUs of
 * a hugepage-backed VM do: then where those pages sit is what the
 * guest's work feels.
 *
 * --idle holds the memory without touching it again (no worker threads):
 * a guest that fills a node but needs no CPU, as a cache would.
 *
 * --pages chooses the page size the memory is backed with, because it
 * decides how fast pages can be migrated under TCG: thp
 * asks for transparent huge pages (MADV_HUGEPAGE), 4k forbids them.
 *
 * Progress: every second the main thread rewrites FILE with the MiB
 * written so far by all threads ("<mib> <seconds>\n"), so the runner can
 * tell how much work a guest got done while it was being moved. Then,
 * on the same line, the stalls the threads felt: the longest time one of
 * them took for one MiB of its writes (ms) and how many MiB took how long
 * (GAP_BUCKETS counts, comma-separated: under 1 ms, 1-2, 2-4, ... ms, the
 * last 4096 ms and more). A thread that waits on a page being migrated
 * (by the kernel on fault or by a placer's move call) waits there: that
 * is the stall a guest feels, measured apart from what a placer says of
 * its own calls.
 * "ready\n" goes to --ready-fd (default stdout) once every page is
 * touched. SIGTERM ends it.
 */
#define _GNU_SOURCE /* CPU_* macros, sched_getaffinity */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_INTERLEAVE 3
#define MAX_NODES 64
#define LINE 64
/* How often the touch looks whether a placer moved it (bytes). */
#define TOUCH_CHECK (2UL << 20)

/* Buckets of the time one MiB of writes took: [0] under 1 ms, [k] under
 * 2^k ms, the last everything from 2^(GAP_BUCKETS-2) ms on. */
#define GAP_BUCKETS 14

struct worker {
	pthread_t th;
	char *base;
	size_t len;
	char *hbase; /* its slice of the huge pages (--hugetlb-busy), or NULL */
	size_t hlen;
	volatile uint64_t lines; /* cache lines written */
	/* Per MiB written: how long it took (gap_at: the last MiB's end). */
	uint64_t gap_at;
	volatile uint32_t gaps[GAP_BUCKETS];
	volatile uint32_t gap_max_us;
	char pad[64];
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One more MiB written: count it, and how long it took. */
static void mib_done(struct worker *w)
{
	uint64_t now = mono_us(), gap = now - w->gap_at;
	unsigned k = 0;

	w->lines += 0x100000 / LINE;
	w->gap_at = now;
	while (k + 1 < GAP_BUCKETS && gap >= (1000u << k))
		k++;
	w->gaps[k]++;
	if (gap > w->gap_max_us)
		w->gap_max_us = (uint32_t)(gap > UINT32_MAX ? UINT32_MAX : gap);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char v = 1;

	w->gap_at = mono_us();
	while (!stop) {
		for (size_t off = 0; off < w->len && !stop; off += LINE) {
			w->base[off] = (char)v;
			/* Count in batches: a shared counter per write would make
			 * the thread measure its own cache traffic. */
			if ((off & 0xfffff) == 0)
				mib_done(w);
		}
		for (size_t off = 0; off < w->hlen && !stop; off += LINE) {
			w->hbase[off] = (char)v;
			if ((off & 0xfffff) == 0)
				mib_done(w);
		}
		v++;
	}
	return NULL;
}

/* "3" or "interleave:0-2,5" → mode and mask; 0 or -1. */
static int parse_touch(const char *s, int *mode, unsigned long *mask)
{
	const char *p = s;

	*mode = MPOL_PREFERRED;
	*mask = 0;
	if (strncmp(s, "interleave:", 11) == 0) {
		*mode = MPOL_INTERLEAVE;
		p = s + 11;
	}
	while (*p) {
		char *e;
		unsigned long a = strtoul(p, &e, 10), b = a;

		if (e == p)
			return -1;
		if (*e == '-') {
			p = e + 1;
			b = strtoul(p, &e, 10);
			if (e == p || b < a)
				return -1;
		}
		if (b >= MAX_NODES)
			return -1;
		for (unsigned long i = a; i <= b; i++)
			*mask |= 1UL << i;
		if (*e == ',')
			e++;
		else if (*e)
			return -1;
		p = e;
	}
	if (!*mask || (*mode == MPOL_PREFERRED && __builtin_popcountl(*mask) != 1))
		return -1;
	return 0;
}

/* "0-3,6" → SET; 0 or -1. */
static int cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s && *s != '\n') {
		char *e;
		unsigned long a = strtoul(s, &e, 10), b = a;

		if (e == s)
			return -1;
		if (*e == '-')
			b = strtoul(e + 1, &e, 10);
		if (b < a || b >= CPU_SETSIZE)
			return -1;
		for (unsigned long i = a; i <= b; i++)
			CPU_SET(i, set);
		s = *e == ',' ? e + 1 : e;
	}
	return 0;
}

/* PATH's start into BUF (SIZE bytes, NUL-terminated); 0 or -1. */
static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* PATH's first line as a cpulist; 0 or -1. */
static int read_cpulist(const char *path, cpu_set_t *set)
{
	char buf[4096];

	return read_small(path, buf, sizeof(buf)) < 0 ? -1 : cpulist_parse(buf, set);
}

/* PATH (SIZE bytes) := this process's cgroup v2 cpuset.cpus.effective; 0 or
 * -1 (no unified hierarchy: then the touch keeps its node). Found once:
 * the runner puts the workload in its cgroup before exec, and nothing
 * moves it after. */
static int cpuset_cpus_path(char *path, size_t size)
{
	char buf[4096];
	char *p, *nl;

	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "0::");
	if (!p || (p != buf && p[-1] != '\n'))
		return -1;
	p += 3;
	nl = strchr(p, '\n');
	if (nl)
		*nl = 0;
	snprintf(path, size, "/sys/fs/cgroup%s/cpuset.cpus.effective", strcmp(p, "/") == 0 ? "" : p);
	return 0;
}

/* Does the first-touch node still stand for where the kernel would put
 * the memory? Not once the cpuset's CPUs (CPUS_PATH) hold none of
 * NODE_CPUS. */
static int touch_node_holds(const char *cpus_path, const cpu_set_t *node_cpus)
{
	cpu_set_t cs, both;

	if (read_cpulist(cpus_path, &cs) < 0)
		return 1;
	CPU_AND(&both, &cs, node_cpus);
	return CPU_COUNT(&both) > 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: guestload --mib M --threads T [--touch NODE|interleave:LIST] "
			"[--pages thp|4k] [--progress FILE] [--ready-fd FD] [--idle] [--hugetlb MIB [--hugetlb-busy]]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long mib = 64, threads = 1, mask = 0, huge_mib = 0;
	const char *touch = NULL, *pages = "thp", *progress = NULL;
	int ready_fd = 1, mode = MPOL_DEFAULT, idle = 0, huge_busy = 0;
	struct sigaction sa = { .sa_handler = on_term };
	struct worker *w;
	size_t len, slice;
	char *mem, *huge = NULL;
	double t0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--idle") == 0) {
			idle = 1;
			continue;
		}
		if (strcmp(a, "--hugetlb-busy") == 0) {
			huge_busy = 1;
			continue;
		}
		if (!v)
			usage();
		if (strcmp(a, "--mib") == 0)
			mib = strtoul(v, NULL, 10);
		else if (strcmp(a, "--threads") == 0)
			threads = strtoul(v, NULL, 10);
		else if (strcmp(a, "--touch") == 0)
			touch = v;
		else if (strcmp(a, "--pages") == 0)
			pages = v;
		else if (strcmp(a, "--progress") == 0)
			progress = v;
		else if (strcmp(a, "--ready-fd") == 0)
			ready_fd = atoi(v);
		else if (strcmp(a, "--hugetlb") == 0)
			huge_mib = strtoul(v, NULL, 10);
		else
			usage();
		i++;
	}
	if (!mib || !threads || threads > 256 || (strcmp(pages, "thp") && strcmp(pages, "4k")))
		usage();
	if (touch && parse_touch(touch, &mode, &mask) < 0) {
		fprintf(stderr, "guestload: bad --touch \"%s\"\n", touch);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	len = (size_t)mib << 20;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("guestload: mmap");
		return 1;
	}
	if (madvise(mem, len, strcmp(pages, "thp") == 0 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0)
		perror("guestload: madvise (continuing)");
	if (huge_mib) {
		huge = mmap(NULL, huge_mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
			    -1, 0);
		if (huge == MAP_FAILED) {
			perror("guestload: mmap MAP_HUGETLB (are 2 MiB huge pages reserved?)");
			return 1;
		}
	}
	if (mode != MPOL_DEFAULT &&
	    syscall(SYS_set_mempolicy, mode, &mask, (unsigned long)MAX_NODES + 1) < 0) {
		/* --touch stands for the kernel's own first-touch placement (a
		 * guest whose threads started on NODE's CPUs). When its cpuset
		 * no longer allows NODE by the time it touches (a placer bound
		 * its mems at its start), the kernel would place the memory on
		 * the nodes it allows: so does the default policy. Any other
		 * refusal is an error. */
		if (errno != EINVAL) {
			perror("guestload: set_mempolicy");
			return 1;
		}
		fprintf(stderr, "guestload: --touch %s is outside its cpuset's mems: first touch left to the kernel\n",
			touch);
		mode = MPOL_DEFAULT;
	}
	{
		/* --touch NODE: NODE's CPUs, to see whether a placer confined
		 * the guest away from them (checked when the task's affinity
		 * changes, which a cpuset.cpus write does, and at the start). */
		cpu_set_t ncpus, last, cur;
		char path[128], cpus_path[4200];
		int watch = 0;

		if (mode == MPOL_PREFERRED) {
			snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", __builtin_ctzl(mask));
			watch = read_cpulist(path, &ncpus) == 0 && CPU_COUNT(&ncpus) > 0 &&
				cpuset_cpus_path(cpus_path, sizeof(cpus_path)) == 0;
		}
		CPU_ZERO(&last);
		for (size_t off = 0; off < len; off += 4096) {
			if (watch && off % TOUCH_CHECK == 0 && sched_getaffinity(0, sizeof(cur), &cur) == 0 &&
			    !CPU_EQUAL(&cur, &last)) {
				last = cur;
				if (!touch_node_holds(cpus_path, &ncpus)) {
					if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL) < 0) {
						perror("guestload: set_mempolicy(default)");
						return 1;
					}
					fprintf(stderr, "guestload: its cpuset no longer runs it on node %d's CPUs after "
							"%zu MiB: the rest first touched where it runs\n",
						__builtin_ctzl(mask), off >> 20);
					mode = MPOL_DEFAULT;
					watch = 0;
				}
			}
			mem[off] = 1;
		}
		for (size_t off = 0; huge && off < (huge_mib << 20); off += 2UL << 20)
			huge[off] = 1;
	}
	if (mode != MPOL_DEFAULT && syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL) < 0) {
		perror("guestload: set_mempolicy(default)");
		return 1;
	}

	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	slice = (len / threads) & ~(size_t)(LINE - 1);
	for (unsigned long t = 0; t < threads && !idle; t++) {
		w[t].base = mem + t * slice;
		w[t].len = t + 1 == threads ? len - t * slice : slice;
		if (huge && huge_busy) {
			size_t hlen = huge_mib << 20, hslice = (hlen / threads) & ~(size_t)(LINE - 1);

			w[t].hbase = huge + t * hslice;
			w[t].hlen = t + 1 == threads ? hlen - t * hslice : hslice;
		}
		if (pthread_create(&w[t].th, NULL, work, &w[t]) != 0) {
			perror("guestload: pthread_create");
			return 1;
		}
	}
	if (dprintf(ready_fd, huge ? "ready\nhugetlb-ok\n" : "ready\n") < 0)
		return 1;
	if (ready_fd > 2)
		close(ready_fd);

	t0 = now_s();
	while (!stop) {
		uint64_t lines = 0, gaps[GAP_BUCKETS] = { 0 };
		uint32_t gap_max = 0;

		sleep(1);
		for (unsigned long t = 0; t < threads; t++) {
			lines += w[t].lines;
			for (unsigned k = 0; k < GAP_BUCKETS; k++)
				gaps[k] += w[t].gaps[k];
			if (w[t].gap_max_us > gap_max)
				gap_max = w[t].gap_max_us;
		}
		if (progress) {
			char buf[512], tmp[4096];
			int fd, n;

			n = snprintf(buf, sizeof(buf), "%.1f %.2f %.1f ", (double)lines * LINE / 1048576.0,
				     now_s() - t0, gap_max / 1000.0);
			for (unsigned k = 0; k < GAP_BUCKETS; k++)
				n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%llu", k ? "," : "",
					      (unsigned long long)gaps[k]);
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "\n");
			snprintf(tmp, sizeof(tmp), "%s.tmp", progress);
			fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd >= 0) {
				if (write(fd, buf, (size_t)n) == n)
					rename(tmp, progress);
				close(fd);
			}
		}
	}
	return 0;
}
