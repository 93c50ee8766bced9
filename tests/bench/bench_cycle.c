/* bench_cycle — CPU time of one full cycle (acquire + decide) and the
 * agent's peak RSS, on generated fixture hosts: 8 nodes × 8 CPUs, cgroup
 * v2, with 10, 100 and 1000 Docker-named guests.
 *
 *   build/bench/bench_cycle [--numaorchd build/numaorchd] [--cycles N] [--guests 10|100|1000]
 *   build/bench/bench_cycle --generate DIR GUESTS [--nodes N] [--pods PCT]  (write a host tree only)
 *   build/bench/bench_cycle --cycle-only [--nodes N] [--guests G] [--cycles C] [--pods PCT]
 *                           [--root DIR] [--snapshot-json FILE] [--plan-json FILE]
 * --pods PCT (with --generate, or --cycle-only without --root): PCT % of
 * the guests are Kubernetes pods (systemd driver, burstable) instead of
 * Docker containers, each with two container cgroups
 * (cri-containerd-*.scope) holding its processes: the first with a
 * cpuset.cpus of its own (as runc writes one for a CPU manager's pool),
 * the second without (empty: inherits), so that the scan walks and
 * weighs a pod's containers (its parts) as on a Kubernetes node. 0 by
 * default: the figures of the default rows are for Docker guests.
 * --nodes N: a host of N nodes (8 by default); --cycle-only: the median
 * acquire and decide CPU ms alone (no daemon or history; then one
 * line for a pass of the watch between cycles and the files open), on DIR
 * when given (a tree --generate wrote with the same --nodes), and the
 * snapshot of one cycle as JSON in FILE when asked; --plan-json FILE: every
 * timed cycle's plan items, one JSON line a cycle (without the plan's
 * clock, so two builds' files compare byte for byte on one tree).
 *
 * CPU time is CLOCK_PROCESS_CPUTIME_ID around acquirer_snapshot() +
 * policy_decide() in this process (the same code numaorchd runs); RSS is
 * the peak (ru_maxrss) of the real numaorchd binary running dry-run
 * cycles against the same tree with `history = 0` (a sample every cycle)
 * until its per-guest history is full (HISTORY_SAMPLES samples, asked
 * over its API socket), while this process rewrites every guest's
 * memory.numa_stat and cpu.stat between cycles so that each sample
 * differs from the last (a history of unchanging guests would be
 * smaller); then stopped with SIGTERM; and the peak of its RssAnon (its
 * own memory, without shared library pages). The run goes on until the
 * agent's ring of decision records is full too (RING_RECORDS, at most a
 * minute more: 10 guests never say 4096 things), and the row shows what
 * the agent then says the history and the ring hold (its /metrics). The
 * peak is reached in steady cycles, not at start: at 1000 guests during
 * the policy step, when the published snapshot and plan, the new
 * snapshot, the policy's per-guest scratch and the new plan are all
 * alive (heaptrack). "history" is the same
 * history built in this process (every guest's locality, CPU use and
 * memory of each node holding some changing every sample), as
 * history_bytes() counts it, and the CPU time of one history_record()
 * when full.
 * "watch" (a line after each row) is the cgroup watcher (agents/cgwatch.c)
 * on the same tree: the CPU time of its start (one inotify watch per
 * directory), the watches, and the CPU time per event (a write to every
 * guest's cgroup.procs, until each has prompted). It runs beside the
 * cycle, not in it: a fixture root runs none in the daemon.
 * "between cycles" (the same line's second half) is the watch between
 * cycles (agents/drift.c, `[agent] watch`): the CPU time of one pass over
 * every guest's CPU counter (the median of WATCH_PASSES), and what that
 * is of one CPU at the default watch of 1 s. The fixture's guests are
 * idle there, so no pass reads a thread; the next line is the same pass
 * with the spread guests (a quarter) busy on every node, whose threads
 * that ran each pass then also reads (drift.c's where(): two of each
 * guest's three; cgthr.h's CGTHR_RAN_CPU).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agents/acquire.h"
#include "agents/cgwatch.h"
#include "agents/drift.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/store/history.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"
#include "orchestrator/model/snapjson.h"
#include "policies/policies.h"

/* Paths are built under a short mkdtemp() root; truncation cannot happen. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* Nodes of the generated host (--nodes), 8 unless asked. */
static unsigned NODES = 8;
#define CPUS_PER_NODE 8
/* The share of guests that are pods (--pods), in percent. */
static unsigned PODS_PCT;

static bool is_pod(unsigned g)
{
	return g % 100 < PODS_PCT;
}

/* Guest G's cgroup directory under the cgroup root CGROOT. */
static void guest_dir(char *buf, size_t sz, const char *cgroot, unsigned g)
{
	if (is_pod(g))
		snprintf(buf, sz, "%s/kubepods.slice/kubepods-burstable.slice/"
			 "kubepods-burstable-pod%08x_0000_4000_8000_%012x.slice", cgroot, g + 1, g + 1);
	else
		snprintf(buf, sz, "%s/system.slice/docker-%064x.scope", cgroot, g + 1);
}

static void mkdirs(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

static void put(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* memory.numa_stat's file line of a guest without page cache: every node 0. */
static const char *file_line(void)
{
	static char line[512];
	size_t l;

	snprintf(line, sizeof(line), "file");
	for (unsigned n = 0; n < NODES; n++) {
		l = strlen(line);
		snprintf(line + l, sizeof(line) - l, " N%u=0", n);
	}
	return line;
}

/* Guest G's memory.numa_stat anon line: HOME_B bytes on HOME, AWAY_B on
 * every other node for every third guest; JIT: a tick's jitter (0: none). */
static void guest_numa(char *numa, size_t sz, unsigned g, unsigned home, unsigned long long home_b,
		       unsigned long long away_b, unsigned jit)
{
	snprintf(numa, sz, "anon");
	for (unsigned n = 0; n < NODES; n++) {
		size_t l = strlen(numa);
		unsigned long long b = n == home ? home_b : (g % 3 == 0 ? away_b : 0);

		if (b && jit)
			b += (unsigned long long)((jit * 7919u + g * 104729u + n * 13u) % 256u) << 12;
		snprintf(numa + l, sz - l, " N%u=%llu", n, b);
	}
}

/* Pod G's two containers under its directory POD (HOME its node): the
 * first holds its processes 1000 + G (threads 1000 + G, 5000 + G) and
 * 150 MiB at home plus what the pod has away, with a cpuset.cpus of its
 * own (the pod's CPUs); the second 9000 + G and 50 MiB, with none. */
static void gen_containers(const char *pod, unsigned g, unsigned home, unsigned tick)
{
	bool spread = g % 4 == 0;
	char c[4096], numa[512];

	for (unsigned k = 0; k < 2; k++) {
		snprintf(c, sizeof(c), "%s/cri-containerd-%056x%08x.scope", pod, g + 1, k);
		mkdirs(c);
		if (k == 0) {
			put(c, "cgroup.procs", "%u\n", 1000 + g);
			put(c, "cgroup.threads", "%u\n%u\n", 1000 + g, 5000 + g);
		} else {
			put(c, "cgroup.procs", "%u\n", 9000 + g);
			put(c, "cgroup.threads", "%u\n", 9000 + g);
		}
		put(c, "cpu.stat", "usage_usec %u\nuser_usec 0\nsystem_usec 0\n",
		    (1000000 + tick * (g % 13) * 1000) / 2);
		guest_numa(numa, sizeof(numa), g, home, k ? 50ULL << 20 : 150ULL << 20, k ? 0 : 40ULL << 20, 0);
		put(c, "memory.numa_stat", "%s\n%s\n", numa, file_line());
		if (k == 0 && spread)
			put(c, "cpuset.cpus", "0-%u\n", NODES * CPUS_PER_NODE - 1);
		else if (k == 0)
			put(c, "cpuset.cpus", "%u-%u\n", home * CPUS_PER_NODE, home * CPUS_PER_NODE + 7);
		else
			put(c, "cpuset.cpus", "\n");
		put(c, "cpuset.mems", "\n");
		if (spread) {
			put(c, "cpuset.cpus.effective", "0-%u\n", NODES * CPUS_PER_NODE - 1);
			put(c, "cpuset.mems.effective", "0-%u\n", NODES - 1);
		} else {
			put(c, "cpuset.cpus.effective", "%u-%u\n", home * CPUS_PER_NODE, home * CPUS_PER_NODE + 7);
			put(c, "cpuset.mems.effective", "%u\n", home);
		}
	}
}

static void gen_host(const char *root, unsigned guests, unsigned tick)
{
	char d[4096], e[4096];

	for (unsigned n = 0; n < NODES; n++) {
		char dist[128] = "";

		snprintf(d, sizeof(d), "%s/sys/devices/system/node/node%u", root, n);
		mkdirs(d);
		put(d, "cpulist", "%u-%u\n", n * CPUS_PER_NODE, n * CPUS_PER_NODE + CPUS_PER_NODE - 1);
		put(d, "meminfo", "Node %u MemTotal: 67108864 kB\nNode %u MemFree: 33554432 kB\n", n, n);
		for (unsigned m = 0; m < NODES; m++) {
			size_t l = strlen(dist);
			snprintf(dist + l, sizeof(dist) - l, "%s%u", m ? " " : "",
				 m == n ? 10 : (m / 4 == n / 4 ? 12 : 32));
		}
		put(d, "distance", "%s\n", dist);
	}
	snprintf(d, sizeof(d), "%s/sys/devices/system/node", root);
	put(d, "online", "0-%u\n", NODES - 1);
	snprintf(d, sizeof(d), "%s/sys/devices/system/cpu", root);
	mkdirs(d);
	put(d, "online", "0-%u\n", NODES * CPUS_PER_NODE - 1);

	snprintf(d, sizeof(d), "%s/proc", root);
	mkdirs(d);
	{
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/stat", d);
		f = fopen(path, "w");
		fprintf(f, "cpu  1 2 3 4 5 6 7 8 0 0\n");
		for (unsigned c = 0; c < NODES * CPUS_PER_NODE; c++)
			fprintf(f, "cpu%u %u 0 %u %u 0 0 0 0 0 0\n", c, 1000 + tick * (c % 7), 500 + tick,
				10000 + tick * 5);
		fprintf(f, "intr 0\nctxt 0\n");
		fclose(f);
	}

	snprintf(d, sizeof(d), "%s/sys/fs/cgroup", root);
	mkdirs(d);
	put(d, "cgroup.controllers", "cpuset cpu io memory pids\n");
	put(d, "cpuset.cpus.effective", "0-%u\n", NODES * CPUS_PER_NODE - 1);
	put(d, "cpuset.mems.effective", "0-%u\n", NODES - 1);
	for (unsigned k = 0; k < 3; k++) {
		static const char *const parents[] = { "system.slice", "kubepods.slice",
						       "kubepods.slice/kubepods-burstable.slice" };

		snprintf(d, sizeof(d), "%s/sys/fs/cgroup/%s", root, parents[k]);
		mkdirs(d);
		put(d, "cpuset.cpus.effective", "0-%u\n", NODES * CPUS_PER_NODE - 1);
		put(d, "cpuset.mems.effective", "0-%u\n", NODES - 1);
	}
	snprintf(d, sizeof(d), "%s/sys/fs/cgroup", root);
	for (unsigned g = 0; g < guests; g++) {
		unsigned home = g % NODES;
		char numa[512];

		guest_dir(e, sizeof(e), d, g);
		mkdirs(e);
		if (is_pod(g)) {
			/* v2: no process in the pod's own cgroup, all in its containers' */
			put(e, "cgroup.procs", "%s", "");
			put(e, "cgroup.threads", "%s", "");
			gen_containers(e, g, home, tick);
		} else {
			put(e, "cgroup.procs", "%u\n", 1000 + g);
			put(e, "cgroup.threads", "%u\n%u\n%u\n", 1000 + g, 5000 + g, 9000 + g);
		}
		put(e, "cpu.stat", "usage_usec %u\nuser_usec 0\nsystem_usec 0\n", 1000000 + tick * (g % 13) * 1000);
		/* most memory at home, some spread: a mix of settled and not */
		guest_numa(numa, sizeof(numa), g, home, 200ULL << 20, 40ULL << 20, 0);
		put(e, "memory.numa_stat", "%s\n%s\n", numa, file_line());
		if (g % 4 == 0) {
			/* Spread over every node: the agent reads each thread's
			 * /proc/TID/task/TID/stat for where its CPU time ran
			 * (cgthr.c), so the fixture must be there, not at
			 * /proc/TID/stat, or the bench leaves those reads out. */
			for (unsigned t = 0; t < 3; t++) {
				char pd[4096];
				unsigned tid = 1000 + 4000 * t + g;

				snprintf(pd, sizeof(pd), "%s/proc/%u/task/%u", root, tid, tid);
				mkdirs(pd);
				put(pd, "stat", "%u (worker) R 1 %u %u 0 -1 4194560 0 0 0 0 %u %u 0 0 20 0 1 0 100 "
				    "1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 17 %u 0 0 0 0 0\n", tid,
				    1000 + g, 1000 + g, 100 + tick * (t + 1) * (g % 5), 10 + tick,
				    (g + t + tick) % (NODES * CPUS_PER_NODE));
			}
			put(e, "cpuset.cpus", "\n");
			put(e, "cpuset.mems", "\n");
			put(e, "cpuset.cpus.effective", "0-%u\n", NODES * CPUS_PER_NODE - 1);
			put(e, "cpuset.mems.effective", "0-%u\n", NODES - 1);
		} else {
			put(e, "cpuset.cpus", "%u-%u\n", home * CPUS_PER_NODE, home * CPUS_PER_NODE + 7);
			put(e, "cpuset.mems", "%u\n", home);
			put(e, "cpuset.cpus.effective", "%u-%u\n", home * CPUS_PER_NODE, home * CPUS_PER_NODE + 7);
			put(e, "cpuset.mems.effective", "%u\n", home);
		}
	}
}

/* Rewrite the guests' memory.numa_stat and cpu.stat of ROOT for TICK:
 * the memory of each node holding some moves by up to 1 MiB, CPU use by
 * a few percent, as on a host where guests run. */
static void jitter_host(const char *root, unsigned guests, unsigned tick)
{
	char d[4096], e[4096], numa[512];

	snprintf(d, sizeof(d), "%s/sys/fs/cgroup", root);
	for (unsigned g = 0; g < guests; g++) {
		unsigned home = g % NODES;

		guest_dir(e, sizeof(e), d, g);
		guest_numa(numa, sizeof(numa), g, home, 200ULL << 20, 40ULL << 20, tick);
		put(e, "memory.numa_stat", "%s\n%s\n", numa, file_line());
		put(e, "cpu.stat", "usage_usec %llu\nuser_usec 0\nsystem_usec 0\n",
		    1000000ull + (unsigned long long)tick * (50000u + (g * 7u + tick * 3u) % 13u * 1000u));
	}
}

/* HTTP GET PATH over the unix socket SOCK; the body (up to SZ - 1 bytes)
 * into BUF. -errno when the agent does not answer (yet). */
static int api_get(const char *sock, const char *path, char *buf, size_t sz)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[512];
	size_t got = 0;
	ssize_t r;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return (int)r;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return -EIO;
	}
	while (got + 1 < sz && (r = read(fd, buf + got, sz - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
	close(fd);
	return 0;
}

/* The agent's memory figures from its /metrics: numaorch_history_bytes,
 * numaorch_decision_ring_bytes and numaorch_decision_ring_records (-1
 * each where it does not say). */
static void agent_memory(const char *sock, long *hist, long *ring, long *records)
{
	/* /metrics of 1000 guests is a few MiB */
	static char buf[32 << 20];
	static const char *const names[] = { "\nnumaorch_history_bytes ", "\nnumaorch_decision_ring_bytes ",
					     "\nnumaorch_decision_ring_records " };
	long *out[] = { hist, ring, records };
	bool ok = api_get(sock, "/metrics", buf, sizeof(buf)) == 0;

	for (unsigned i = 0; i < 3; i++) {
		const char *c = ok ? strstr(buf, names[i]) : NULL;

		*out[i] = c ? atol(c + strlen(names[i])) : -1;
	}
}

/* The agent's newest decision records (up to 1000): how many, and their
 * bytes as JSON, in *BYTES. -1 if it does not say. */
static long agent_decisions(const char *sock, long *bytes)
{
	static char buf[16 << 20];
	const char *c;
	long n = 0;

	*bytes = -1;
	if (api_get(sock, "/v1/decisions?limit=1000", buf, sizeof(buf)) < 0 || !(c = strstr(buf, "\r\n\r\n")))
		return -1;
	*bytes = (long)strlen(c + 4);
	while ((c = strstr(c, "\"decision\"")))
		n++, c++;
	return n;
}

/* The agent's ring of decision records holds this many (declog_open in
 * engine.c): the bench runs until its newest record's id passes it. */
#define RING_RECORDS 4096

/* The id of the agent's newest decision record (last_id), -1 if it does
 * not say (ids count from 1 and are never reused). */
static long last_decision_id(const char *sock)
{
	static char buf[1 << 16];
	const char *c;

	if (api_get(sock, "/v1/decisions?limit=1", buf, sizeof(buf)) < 0 || !(c = strstr(buf, "\"last_id\":")))
		return -1;
	return atol(c + strlen("\"last_id\":"));
}

/* Samples in guest 1's history, -1 if the agent does not say. */
static int history_count(const char *sock)
{
	static char buf[1 << 16];
	char path[256];
	const char *c;

	snprintf(path, sizeof(path), "/v1/guests/docker-%064x/history", 1);
	if (api_get(sock, path, buf, sizeof(buf)) < 0 || !(c = strstr(buf, "\"count\"")))
		return -1;
	c = strchr(c, ':');
	return c ? atoi(c + 1) : -1;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count_prompt(void *ctx)
{
	__atomic_add_fetch((unsigned *)ctx, 1, __ATOMIC_RELAXED);
}

/* The watcher on ROOT's tree: start CPU ms, watches, CPU us per event. */
static void watch_cost(const char *root, unsigned guests, double *start_ms, unsigned *watches, double *event_us)
{
	struct cg_hier h;
	struct cgscan_config cg = { 0 };
	struct cgwatch *w;
	struct cgwatch_stats st;
	unsigned prompts = 0;
	char cgroot[4096];
	double t0, t1;
	struct timespec dl;

	*start_ms = *event_us = NAN;
	*watches = 0;
	snprintf(cgroot, sizeof(cgroot), "%s/sys/fs/cgroup", root);
	if (cgh_detect(cgroot, &h) < 0)
		return;
	t0 = cpu_now();
	if (cgwatch_start(&h, &cg, 0, count_prompt, &prompts, &w) < 0)
		return;
	*start_ms = (cpu_now() - t0) * 1e3;
	cgwatch_get_stats(w, &st);
	*watches = st.watches;
	t0 = cpu_now();
	for (unsigned g = 0; g < guests; g++) {
		char d[4096];

		guest_dir(d, sizeof(d), cgroot, g);
		put(d, "cgroup.procs", "%u\n", g + 100);
	}
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += 10;
	for (;;) {
		struct timespec now, nap = { 0, 1000000 };

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (__atomic_load_n(&prompts, __ATOMIC_RELAXED) >= guests || now.tv_sec > dl.tv_sec)
			break;
		nanosleep(&nap, NULL);
	}
	t1 = cpu_now();
	if (prompts >= guests)
		*event_us = (t1 - t0) * 1e6 / guests;
	cgwatch_stop(w);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define WATCH_PASSES 21
#define BUSY_PASSES 11

/* The spread guests of ROOT (every fourth, cpus on all nodes) busy at
 * TICK: 3 s of CPU a tick in cpu.stat, two of their three threads 0.5 s
 * (50 ticks) each on a CPU of its own node (thread T of guest G on node
 * (G + T) % NODES) and the third idle, so that the cycle measures where
 * they run and the watch between cycles reads the two that ran. */
static void busy_spread(const char *root, unsigned guests, unsigned tick)
{
	char d[4096], e[4096], pd[4096];

	snprintf(d, sizeof(d), "%s/sys/fs/cgroup", root);
	for (unsigned g = 0; g < guests; g += 4) {
		guest_dir(e, sizeof(e), d, g);
		put(e, "cpu.stat", "usage_usec %llu\nuser_usec 0\nsystem_usec 0\n",
		    1000000ull + (unsigned long long)tick * 3000000ull);
		for (unsigned t = 0; t < 3; t++) {
			unsigned tid = 1000 + 4000 * t + g;

			snprintf(pd, sizeof(pd), "%s/proc/%u/task/%u", root, tid, tid);
			put(pd, "stat", "%u (worker) R 1 %u %u 0 -1 4194560 0 0 0 0 %u 0 0 0 20 0 1 0 100 "
			    "1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 17 %u 0 0 0 0 0\n", tid,
			    1000 + g, 1000 + g, 100 + (t < 2 ? tick * 50 : 0), (g + t) % NODES * CPUS_PER_NODE);
		}
	}
}

/* The watch between cycles on ACQ's host: median CPU ms of one pass,
 * *READ the counters it read. */
static double drift_cost(struct acquirer *acq, unsigned *read)
{
	const struct snapshot *snap;
	double ms[WATCH_PASSES];
	struct drift_report rep = { 0 };

	*read = 0;
	if (acquirer_snapshot(acq, 0, NULL, &snap) < 0)
		return NAN;
	for (unsigned i = 0; i < WATCH_PASSES; i++) {
		double t0 = cpu_now();

		acquirer_drift(acq, snap, NULL, &rep);
		ms[i] = (cpu_now() - t0) * 1e3;
	}
	*read = rep.read;
	snap_unref(snap);
	qsort(ms, WATCH_PASSES, sizeof(ms[0]), cmp_double);
	return ms[WATCH_PASSES / 2];
}

/* The same with ROOT's spread guests busy (busy_spread): a cycle's
 * snapshot that saw them busy on every node, then passes at least
 * DRIFT_MIN_WINDOW_S apart (a pass reads a guest's threads once a
 * window) while their threads go on running: median CPU ms of one pass,
 * *READ the counters and *THREADS the threads it read. Only
 * acquirer_drift is timed, not the fixture's rewrites or the sleeps. */
static double drift_cost_busy(struct acquirer *acq, const char *root, unsigned guests, unsigned *read,
			      unsigned *threads)
{
	const struct snapshot *snap;
	double ms[BUSY_PASSES];
	struct drift_report rep = { 0 };
	struct timespec gap = { 0, (long)(DRIFT_MIN_WINDOW_S * 1e9) + 10000000 };
	unsigned tick = 10;

	*read = *threads = 0;
	for (unsigned k = 0; k < 2; k++) {
		busy_spread(root, guests, tick++);
		if (acquirer_snapshot(acq, 0, NULL, &snap) < 0)
			return NAN;
		if (k == 0)
			snap_unref(snap);
	}
	for (unsigned i = 0; i < BUSY_PASSES; i++) {
		double t0;

		busy_spread(root, guests, tick++);
		nanosleep(&gap, NULL);
		t0 = cpu_now();
		acquirer_drift(acq, snap, NULL, &rep);
		ms[i] = (cpu_now() - t0) * 1e3;
		/* the first pass only takes the threads' first readings */
		if (i && rep.threads > *threads)
			*threads = rep.threads;
	}
	*read = rep.read;
	snap_unref(snap);
	qsort(ms, BUSY_PASSES, sizeof(ms[0]), cmp_double);
	return ms[BUSY_PASSES / 2];
}

/* FIELD ("RssAnon", "VmHWM") of PID's /proc status in KiB, -1 if
 * unreadable. */
static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':' && sscanf(line + fl + 1, "%ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* RssAnon of PID in KiB (the process's own memory, not the shared
 * libraries' file pages), -1 if unreadable. */
static long rss_anon_kb(pid_t pid)
{
	return status_kb(pid, "RssAnon");
}

/* Peak RSS (VmHWM, KiB) of numaorchd running dry-run cycles on ROOT
 * (GUESTS guests, rewritten between cycles) until every guest's history
 * is full; *ANON gets the peak RssAnon sampled meanwhile, *SECS the time
 * it took, *HIST the history's bytes, *RING its decision ring's bytes
 * and *RECORDS its records, as the agent reports them then, *SCRAPED its
 * peak RSS (ru_maxrss) after that GET /metrics. */
static long daemon_rss(const char *numaorchd, const char *root, unsigned guests, const char *tmp, long *anon,
		       double *secs, long *hist, long *ring, long *records, long *scraped)
{
	char conf[4096], sock[4096];
	struct timespec t0, t1;
	struct rusage ru;
	int status, count = -1;
	bool ring_full = false;
	double full_s = -1;
	long hwm;
	unsigned tick = 2;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/bench.conf", tmp);
	snprintf(sock, sizeof(sock), "%s/api.sock", tmp);
	put(tmp, "bench.conf", "[agent]\ninterval = 0.1\nsample = 0.05\ndry_run = yes\nlog_level = error\n"
	    "history = 0\n[api]\nsocket = %s\n[libvirt]\nenabled = no\n", sock);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		execl(numaorchd, numaorchd, "--config", conf, "--root", root, (char *)NULL);
		_exit(127);
	}
	*anon = -1;
	/* A deadline, not a count of cycles: a loaded machine cycles slower. */
	for (;;) {
		long a = rss_anon_kb(pid);

		if (a > *anon)
			*anon = a;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		*secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		count = history_count(sock);
		if (count >= (int)HISTORY_SAMPLES && !ring_full) {
			ring_full = last_decision_id(sock) >= RING_RECORDS;
			/* A few guests may never say 4096 things: the ring gets
			 * a minute more than the history, then the row says
			 * how many it holds. */
			if (full_s < 0)
				full_s = *secs;
		}
		if ((count >= (int)HISTORY_SAMPLES && (ring_full || *secs > full_s + 60)) || *secs > 600 ||
		    waitpid(pid, &status, WNOHANG) == pid)
			break;
		jitter_host(root, guests, tick++);
		usleep(50 * 1000);
	}
	/* The peak before the questions below: a GET /metrics of 1000
	 * guests is itself a few MiB for a moment (reported apart). */
	hwm = status_kb(pid, "VmHWM");
	agent_memory(sock, hist, ring, records);
	if (getenv("BENCH_DECISIONS")) {
		long db, dn = agent_decisions(sock, &db);

		fprintf(stderr, "%u guests: the agent's newest %ld decision records are %ld bytes of JSON\n",
				guests, dn, db);
	}
	if (count < (int)HISTORY_SAMPLES)
		fprintf(stderr, "numaorchd's history did not fill (%d samples after %.0f s)\n", count, *secs);
	if (!ring_full && guests >= 1000)
		fprintf(stderr, "numaorchd's decision ring did not fill (%ld records after %.0f s)\n", *records, *secs);
	kill(pid, SIGTERM);
	if (wait4(pid, &status, 0, &ru) < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "numaorchd exited with status %d\n", status);
		return -1;
	}
	*scraped = ru.ru_maxrss;
	return count >= (int)HISTORY_SAMPLES ? hwm : -1;
}

/* The fd limit the shipped unit gives numaorchd (LimitNOFILE in
 * deploy/systemd/numaorchd.service). */
#define UNIT_NOFILE 65536

static void raise_nofile(void)
{
	/* As numaorchd does (the container source keeps files open), under
	 * its unit's limit where this process may raise the hard one (root):
	 * a shell's lower hard limit would leave thousands of guests' files
	 * closed and time a cycle the agent does not run. */
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < UNIT_NOFILE) {
		struct rlimit unit = { UNIT_NOFILE, UNIT_NOFILE };

		if (setrlimit(RLIMIT_NOFILE, &unit) == 0)
			return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* This process's open files (the container source keeps guests' files
 * open within its budget, agents/cgfdc.h). */
static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the directory's own */
}

/* --cycle-only: the cycle's CPU time alone (no daemon, history or watch)
 * on a generated host of GUESTS guests, CYCLES cycles after a warm one:
 * the median of acquire and decide ms each; then the watch between
 * cycles on the same acquirer (drift_cost: one pass over every guest's
 * CPU counter) and the files the process holds open then, most of them
 * the guests' files kept from scan to scan. JSON_OUT (when not NULL)
 * gets the warm-up's next snapshot as snap_to_json(SNAPJ_STABLE) writes
 * it, to compare what acquisition sees before and after a change (the
 * agent's own load, agent_cpus, is in it when this process's pid is one
 * of the fixture's thread ids: compare runs with other pids).
 * GIVEN (--root, when not NULL) is a tree --generate wrote, used as it
 * is (a profile then sees the cycles, not the writing of the tree). */
/* One line of --plan-json: P's items as plan_item_to_json writes them,
 * with the fields it leaves out, and no clock (mono_ns, seq), so that
 * the same tree gives the same line whichever build decided it. */
static int plan_line(FILE *f, const struct plan *p)
{
	json_t *items = json_array();
	char *s;

	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		json_t *o = plan_item_to_json(it);

		json_object_set_new(o, "guest_idx", json_integer(it->guest_idx));
		/* snapj rounds some reals; these are the exact ones */
		json_object_set_new(o, "gain_exact", json_real(it->gain));
		json_object_set_new(o, "load_before_exact", json_real(it->load_before));
		json_object_set_new(o, "load_after_exact", json_real(it->load_after));
		json_object_set_new(o, "locality_exact", json_real(it->locality_before));
		json_object_set_new(o, "vm_start", json_boolean(it->vm_start));
		json_object_set_new(o, "follow", json_boolean(it->follow));
		json_object_set_new(o, "resv_used", json_integer((json_int_t)it->resv_used));
		json_array_append_new(items, o);
	}
	s = json_dumps(json_pack("{s:i, s:I, s:o}", "nr_moves", (int)p->nr_moves, "migrate_bytes",
				 (json_int_t)p->migrate_bytes, "items", items),
		       JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	if (!s)
		return -ENOMEM;
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

static int cycle_cpu(unsigned guests, unsigned cycles, const char *json_out, const char *given,
		     const char *plan_out)
{
	FILE *pf = NULL;
	char tmpl[] = "/tmp/numaorch-bench.XXXXXX";
	char *tmp = mkdtemp(tmpl), root[4096], cmd[4200];
	struct host_paths hp;
	struct acquirer *acq;
	struct cgscan_config cg = { 0 };
	struct policy_config pc;
	struct pstate *ps = NULL;
	double *ta = calloc(cycles, sizeof(double)), *td = calloc(cycles, sizeof(double));
	const struct snapshot *snap;
	unsigned read, open_fds;
	double pass_ms;

	if (!tmp || !ta || !td)
		return 1;
	log_set_level(LOG_LEVEL_ERROR);
	raise_nofile();
	snprintf(root, sizeof(root), "%s/host", tmp);
	if (given)
		snprintf(root, sizeof(root), "%s", given);
	else
		gen_host(root, guests, 1);
	if (host_paths_from_root(&hp, root) < 0 || acquirer_new(&hp, &cg, &acq) < 0) {
		fprintf(stderr, "cannot set up fixture host\n");
		return 1;
	}
	policy_config_default(&pc);
	if (plan_out && !(pf = fopen(plan_out, "w"))) {
		fprintf(stderr, "cannot write %s\n", plan_out);
		return 1;
	}
	if (acquirer_snapshot(acq, 0.01, NULL, &snap) < 0)
		return 1;
	snap_unref(snap);
	if (json_out) {
		json_t *j;

		if (acquirer_snapshot(acq, 0, NULL, &snap) < 0)
			return 1;
		j = snap_to_json(snap, SNAPJ_STABLE);
		if (!j || json_dump_file(j, json_out, JSON_INDENT(1) | JSON_SORT_KEYS) < 0) {
			fprintf(stderr, "cannot write %s\n", json_out);
			return 1;
		}
		json_decref(j);
		snap_unref(snap);
	}
	for (unsigned c = 0; c < cycles; c++) {
		struct plan *plan;
		struct pstate *next;
		double t0 = cpu_now(), t1, t2;

		if (acquirer_snapshot(acq, 0, NULL, &snap) < 0)
			return 1;
		t1 = cpu_now();
		if (policy_decide(&pc, snap, ps, false, &plan, &next) < 0)
			return 1;
		plan_note_cooldowns(plan, next);
		t2 = cpu_now();
		if (pf && plan_line(pf, plan) < 0)
			return 1;
		plan_free(plan);
		pstate_free(ps);
		ps = next;
		snap_unref(snap);
		xmalloc_release();
		ta[c] = (t1 - t0) * 1e3;
		td[c] = (t2 - t1) * 1e3;
	}
	pstate_free(ps);
	if (pf && fclose(pf) != 0) {
		fprintf(stderr, "cannot write %s\n", plan_out);
		return 1;
	}
	pass_ms = drift_cost(acq, &read);
	open_fds = count_fds();
	acquirer_free(acq);
	qsort(ta, cycles, sizeof(double), cmp_double);
	qsort(td, cycles, sizeof(double), cmp_double);
	printf("%u nodes x %u CPUs, %u guests, %u cycles: acquire ms median %.2f (min %.2f max %.2f), "
	       "decide ms median %.2f (min %.2f max %.2f)\n", NODES, CPUS_PER_NODE, guests, cycles,
	       ta[cycles / 2], ta[0], ta[cycles - 1], td[cycles / 2], td[0], td[cycles - 1]);
	printf("between cycles: %.2f ms CPU per pass (%u counters), %u files open\n", pass_ms, read, open_fds);
	free(ta);
	free(td);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned sizes[] = { 10, 100, 1000 };
	const char *numaorchd = "build/numaorchd", *gen_dir = NULL, *json_out = NULL, *given = NULL,
		   *plan_out = NULL;
	unsigned cycles = 20, only = 0, gen_guests = 0;
	bool cycle_only = false;

	/* The daemon's allocator settings, so the cycle is timed as it runs there. */
	xmalloc_tune();
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--numaorchd") == 0 && i + 1 < argc)
			numaorchd = argv[++i];
		else if (strcmp(argv[i], "--guests") == 0 && i + 1 < argc)
			only = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
			cycles = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
			NODES = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc)
			PODS_PCT = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
			given = argv[++i];
		else if (strcmp(argv[i], "--cycle-only") == 0)
			cycle_only = true;
		else if (strcmp(argv[i], "--snapshot-json") == 0 && i + 1 < argc)
			json_out = argv[++i];
		else if (strcmp(argv[i], "--plan-json") == 0 && i + 1 < argc)
			plan_out = argv[++i];
		else if (strcmp(argv[i], "--generate") == 0 && i + 2 < argc) {
			/* Only write a host tree, for profiling numaorchd by hand:
			 * --generate DIR GUESTS */
			gen_dir = argv[i + 1];
			gen_guests = (unsigned)atoi(argv[i + 2]);
			i += 2;
		}
	}
	if (NODES < 1 || NODES > 64 || cycles < 1) {
		fprintf(stderr, "--nodes is 1 to 64, --cycles at least 1\n");
		return 2;
	}
	if (PODS_PCT > 100 || (PODS_PCT && !gen_dir && !cycle_only)) {
		fprintf(stderr, "--pods is 0 to 100, with --generate or --cycle-only\n");
		return 2;
	}
	if (gen_dir) {
		gen_host(gen_dir, gen_guests, 1);
		return 0;
	}
	if (cycle_only || json_out || plan_out)
		return cycle_cpu(only ? only : 1000, cycles, json_out, given, plan_out);
	/* Any other count alone: the table's three sizes are the default. */
	if (only && only != 10 && only != 100)
		sizes[2] = only;
	log_set_level(LOG_LEVEL_ERROR);
	raise_nofile();
	printf("numaorch cycle benchmark: %u nodes x %u CPUs, cgroup v2 fixture, %u cycles each\n",
	       NODES, CPUS_PER_NODE, cycles);
	printf("%8s %14s %14s %14s %14s %12s %12s %12s %12s %12s %10s %9s %12s %8s\n", "guests", "cycle p50 ms",
	       "cycle max ms", "acquire ms", "decide ms", "daemon RSS", "anon RSS", "+ /metrics", "its history",
	       "history", "record ms", "filled", "its ring", "records");
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		if (only && sizes[s] != only)
			continue;
		char tmpl[] = "/tmp/numaorch-bench.XXXXXX";
		char *tmp = mkdtemp(tmpl), root[4096], cmd[4200];
		struct host_paths hp;
		struct acquirer *acq;
		struct cgscan_config cg = { 0 };
		struct policy_config pc;
		struct pstate *ps = NULL;
		double *t = calloc(cycles, sizeof(double)), acq_sum = 0, dec_sum = 0;
		long rss, anon, ahist = -1, aring = -1, arecs = -1, scraped = -1;
		double hist_mib = NAN, rec_ms = NAN, fill_s = NAN, watch_ms, event_us, pass_ms;
		unsigned watches, read, busy_read, busy_threads;
		double busy_ms;

		snprintf(root, sizeof(root), "%s/host", tmp);
		gen_host(root, sizes[s], 1);
		if (host_paths_from_root(&hp, root) < 0 || acquirer_new(&hp, &cg, &acq) < 0) {
			fprintf(stderr, "cannot set up fixture host\n");
			return 1;
		}
		policy_config_default(&pc);
		{
			const struct snapshot *warm;

			if (acquirer_snapshot(acq, 0.01, NULL, &warm) < 0)
				return 1;
			snap_unref(warm);
		}
		for (unsigned c = 0; c < cycles; c++) {
			const struct snapshot *snap;
			struct plan *plan;
			struct pstate *next;
			double t0 = cpu_now(), t1, t2;

			if (acquirer_snapshot(acq, 0, NULL, &snap) < 0)
				return 1;
			t1 = cpu_now();
			if (policy_decide(&pc, snap, ps, false, &plan, &next) < 0)
				return 1;
			/* every planned move as carried out (the engine's record) */
			plan_note_cooldowns(plan, next);
			t2 = cpu_now();
			plan_free(plan);
			pstate_free(ps);
			ps = next;
			snap_unref(snap);
			/* as the engine does after each cycle; its cost, and the
			 * next cycle's faults on the pages it gave back, count */
			xmalloc_release();
			t[c] = (cpu_now() - t0) * 1e3;
			acq_sum += (t1 - t0) * 1e3;
			dec_sum += (t2 - t1) * 1e3;
		}
		pstate_free(ps);
		{
			struct history *h = history_new(0);
			const struct snapshot *taken;
			struct snapshot *snap;
			double t0 = 0;

			if (acquirer_snapshot(acq, 0, NULL, &taken) < 0)
				return 1;
			/* Only this benchmark changes a finalized snapshot: it is
			 * its own, and it fakes the samples of an hour with it. */
			snap = (struct snapshot *)taken;
			for (unsigned i = 0; i <= HISTORY_SAMPLES; i++) {
				/* 15 s apart, each guest's numbers a little
				 * different every time */
				snap->real_ns += 15000000000ll;
				for (unsigned k = 0; k < snap->nr_guests; k++) {
					struct snap_guest *g = &snap->guests[k];
					unsigned x = i * 2654435761u + k * 40503u;

					g->locality = 0.80 + (double)(x % 200) / 1000.0;
					g->cpu_use = 0.5 + (double)((x >> 8) % 50) / 100.0;
					for (unsigned n = 0; n < snap->nr_nodes; n++)
						if (g->mem_node[n])
							g->mem_node[n] = (g->mem_node[n] & ~((1ull << 20) - 1)) +
									 (((x >> 12) + n) % 256) * 4096;
				}
				if (i == HISTORY_SAMPLES)
					t0 = cpu_now();
				history_record(h, snap);
			}
			rec_ms = (cpu_now() - t0) * 1e3;
			hist_mib = (double)history_bytes(h, NULL) / (1024.0 * 1024.0);
			history_free(h);
			snap_unref(snap);
		}
		pass_ms = drift_cost(acq, &read);
		busy_ms = drift_cost_busy(acq, root, sizes[s], &busy_read, &busy_threads);
		acquirer_free(acq);
		qsort(t, cycles, sizeof(double), cmp_double);
		rss = daemon_rss(numaorchd, root, sizes[s], tmp, &anon, &fill_s, &ahist, &aring, &arecs, &scraped);
		printf("%8u %14.2f %14.2f %14.2f %14.2f %8.1f MiB %8.1f MiB %8.1f MiB %8.2f MiB %8.2f MiB %10.2f %7.0f s"
		       " %8.2f MiB %8ld\n",
		       sizes[s], t[cycles / 2], t[cycles - 1], acq_sum / cycles, dec_sum / cycles,
		       rss > 0 ? (double)rss / 1024.0 : NAN, anon > 0 ? (double)anon / 1024.0 : NAN,
		       scraped > 0 ? (double)scraped / 1024.0 : NAN,
		       ahist >= 0 ? (double)ahist / 1048576.0 : NAN, hist_mib, rec_ms, fill_s,
		       aring >= 0 ? (double)aring / 1048576.0 : NAN, arecs);
		watch_cost(root, sizes[s], &watch_ms, &watches, &event_us);
		{
			printf("%8s watch: %.2f ms CPU to start, %u inotify watches, %.1f us CPU per cgroup event; "
			       "between cycles: %.2f ms CPU per pass (%u counters), %.2f %% of a CPU at watch = 1 s\n",
			       "", watch_ms, watches, event_us, pass_ms, read, pass_ms / 10.0);
			printf("%8s between cycles, its %u spread guests busy: %.2f ms CPU per pass (%u counters, %u threads), "
			       "%.2f %% of a CPU at watch = 1 s\n",
			       "", (sizes[s] + 3) / 4, busy_ms, busy_read, busy_threads, busy_ms / 10.0);
		}
		free(t);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmp);
	}
	printf("targets: <= 50 ms CPU per cycle at 1000 guests, <= 16 MiB RSS\n"
	       "daemon RSS is the peak RSS (VmHWM) of numaorchd on the fixture host (no libvirt module: a host\n"
	       "without VMs): with the file pages of its shared libraries (libc, GnuTLS, ...),\n"
	       "shared with other processes; anon RSS is the agent's own memory. On a VM host the\n"
	       "libvirt module and its libraries add about 7 MiB of file pages. + /metrics: the peak\n"
	       "(ru_maxrss) once it has also answered one GET /metrics.\n"
	       "Both RSS figures are with the agent's per-guest history full (%u samples of each guest,\n"
	       "an hour at the default 15 s interval; filled: how long the agent took to get there at\n"
	       "`history = 0`, with the guests' numbers changing every cycle; its history: what the agent\n"
	       "then says its history holds, numaorch_history_bytes in /metrics). history: the same\n"
	       "history built in this process, as history_bytes() counts it; record ms: CPU time of\n"
	       "recording one cycle into it when full. The run goes on until the ring of decision records\n"
	       "is full too (%u records; at most a minute more: a few guests may never fill it); its ring\n"
	       "and records: numaorch_decision_ring_bytes and _records in /metrics then.\n",
	       HISTORY_SAMPLES, RING_RECORDS);
	return 0;
}
