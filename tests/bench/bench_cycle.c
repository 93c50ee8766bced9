/* bench_cycle — CPU time of one full cycle (acquire + decide) and the
 * agent's peak RSS, on generated fixture hosts: 8 nodes × 8 CPUs, cgroup
 * v2, with 10, 100 and 1000 Docker-named guests.
 *
 *   build/bench/bench_cycle [--numaorchd build/numaorchd] [--cycles N]
 *   build/bench/bench_cycle --generate DIR GUESTS   (write a host tree only)
 *
 * CPU time is CLOCK_PROCESS_CPUTIME_ID around acquirer_snapshot() +
 * policy_decide() in this process (the same code numaorchd runs); RSS is
 * the peak (ru_maxrss) of the real numaorchd binary running ~25 dry-run
 * cycles against the same tree, then stopped with SIGTERM, and the peak
 * of its RssAnon (its own memory, without shared library pages).
 * "watch" is the cgroup watcher (agents/cgwatch.c) on the same tree: the
 * CPU time of its start (one inotify watch per directory), the watches,
 * and the CPU time per event (a write to every guest's cgroup.procs,
 * until each has prompted). It runs beside the cycle, not in it.
 * "history" is the per-guest history (orchestrator/history.h) filled to
 * its bound (HISTORY_SAMPLES samples of every guest), as history_bytes()
 * counts it, and the CPU time of one history_record() when full.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agents/acquire.h"
#include "agents/cgwatch.h"
#include "orchestrator/xalloc.h"
#include "orchestrator/history.h"
#include "orchestrator/hostpaths.h"
#include "orchestrator/log.h"
#include "policies/policies.h"

/* Paths are built under a short mkdtemp() root; truncation cannot happen. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define NODES 8
#define CPUS_PER_NODE 8

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
	snprintf(d, sizeof(d), "%s/sys/fs/cgroup/system.slice", root);
	mkdirs(d);
	put(d, "cpuset.cpus.effective", "0-%u\n", NODES * CPUS_PER_NODE - 1);
	put(d, "cpuset.mems.effective", "0-%u\n", NODES - 1);
	for (unsigned g = 0; g < guests; g++) {
		unsigned home = g % NODES;
		char numa[512];

		snprintf(e, sizeof(e), "%s/docker-%064x.scope", d, g + 1);
		mkdirs(e);
		put(e, "cgroup.procs", "%u\n", 1000 + g);
		put(e, "cgroup.threads", "%u\n%u\n%u\n", 1000 + g, 5000 + g, 9000 + g);
		put(e, "cpu.stat", "usage_usec %u\nuser_usec 0\nsystem_usec 0\n", 1000000 + tick * (g % 13) * 1000);
		/* most memory at home, some spread: a mix of settled and not */
		snprintf(numa, sizeof(numa), "anon");
		for (unsigned n = 0; n < NODES; n++) {
			size_t l = strlen(numa);
			unsigned long long b = n == home ? 200ULL << 20 : (g % 3 == 0 ? 40ULL << 20 : 0);
			snprintf(numa + l, sizeof(numa) - l, " N%u=%llu", n, b);
		}
		put(e, "memory.numa_stat", "%s\nfile N0=0 N1=0 N2=0 N3=0 N4=0 N5=0 N6=0 N7=0\n", numa);
		if (g % 4 == 0) {
			/* Spread over every node: the agent reads each thread's
			 * /proc/TID/stat for where its CPU time ran. */
			for (unsigned t = 0; t < 3; t++) {
				char pd[4096];

				snprintf(pd, sizeof(pd), "%s/proc/%u", root, 1000 + 4000 * t + g);
				mkdirs(pd);
				put(pd, "stat", "%u (worker) R 1 %u %u 0 -1 4194560 0 0 0 0 %u %u 0 0 20 0 1 0 100 "
				    "1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 17 %u 0 0 0 0 0\n", 1000 + 4000 * t + g,
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

		snprintf(d, sizeof(d), "%s/system.slice/docker-%064x.scope", cgroot, g + 1);
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

/* RssAnon of PID in KiB (the process's own memory, not the shared
 * libraries' file pages), -1 if unreadable. */
static long rss_anon_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Peak RSS (ru_maxrss, KiB) of numaorchd running ~20 dry-run cycles on
 * ROOT; *ANON gets the peak RssAnon sampled every 50 ms meanwhile. */
static long daemon_rss(const char *numaorchd, const char *root, const char *tmp, long *anon)
{
	char conf[4096];
	struct rusage ru;
	int status;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/bench.conf", tmp);
	put(tmp, "bench.conf", "[agent]\ninterval = 0.1\nsample = 0.05\ndry_run = yes\nlog_level = error\n"
	    "[api]\nsocket =\n[libvirt]\nenabled = no\n");
	pid = fork();
	if (pid == 0) {
		execl(numaorchd, numaorchd, "--config", conf, "--root", root, (char *)NULL);
		_exit(127);
	}
	*anon = -1;
	for (int i = 0; i < 50; i++) {
		long a = rss_anon_kb(pid);

		if (a > *anon)
			*anon = a;
		usleep(50 * 1000);
	}
	kill(pid, SIGTERM);
	if (wait4(pid, &status, 0, &ru) < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "numaorchd exited with status %d\n", status);
		return -1;
	}
	return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 10, 100, 1000 };
	const char *numaorchd = "build/numaorchd";
	unsigned cycles = 20;

	/* The daemon's allocator settings, so the cycle is timed as it runs there. */
	xmalloc_tune();
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--numaorchd") == 0 && i + 1 < argc)
			numaorchd = argv[++i];
		else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
			cycles = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--generate") == 0 && i + 2 < argc) {
			/* Only write a host tree, for profiling numaorchd by hand:
			 * --generate DIR GUESTS */
			gen_host(argv[i + 1], (unsigned)atoi(argv[i + 2]), 1);
			return 0;
		}
	}
	log_set_level(LOG_LEVEL_ERROR);
	{
		/* As numaorchd does: the container source keeps files open. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	printf("numaorch cycle benchmark: %u nodes x %u CPUs, cgroup v2 fixture, %u cycles each\n",
	       NODES, CPUS_PER_NODE, cycles);
	printf("%8s %14s %14s %14s %14s %12s %12s %12s %10s %10s %8s %9s\n", "guests", "cycle p50 ms",
	       "cycle max ms", "acquire ms", "decide ms", "daemon RSS", "anon RSS", "history", "record ms",
	       "watch ms", "watches", "event us");
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		char tmpl[] = "/tmp/numaorch-bench.XXXXXX";
		char *tmp = mkdtemp(tmpl), root[4096], cmd[4200];
		struct host_paths hp;
		struct acquirer *acq;
		struct cgscan_config cg = { 0 };
		struct policy_config pc;
		struct pstate *ps = NULL;
		double *t = calloc(cycles, sizeof(double)), acq_sum = 0, dec_sum = 0;
		long rss, anon;
		double hist_mib = NAN, rec_ms = NAN, watch_ms, event_us;
		unsigned watches;

		snprintf(root, sizeof(root), "%s/host", tmp);
		gen_host(root, sizes[s], 1);
		if (host_paths_from_root(&hp, root) < 0 || acquirer_new(&hp, &cg, &acq) < 0) {
			fprintf(stderr, "cannot set up fixture host\n");
			return 1;
		}
		policy_config_default(&pc);
		{
			struct snapshot *warm;

			if (acquirer_snapshot(acq, 0.01, &warm) < 0)
				return 1;
			snap_unref(warm);
		}
		for (unsigned c = 0; c < cycles; c++) {
			struct snapshot *snap;
			struct plan *plan;
			struct pstate *next;
			double t0 = cpu_now(), t1, t2;

			if (acquirer_snapshot(acq, 0, &snap) < 0)
				return 1;
			t1 = cpu_now();
			if (policy_decide(&pc, snap, ps, false, &plan, &next) < 0)
				return 1;
			t2 = cpu_now();
			plan_free(plan);
			pstate_free(ps);
			ps = next;
			snap_unref(snap);
			t[c] = (t2 - t0) * 1e3;
			acq_sum += (t1 - t0) * 1e3;
			dec_sum += (t2 - t1) * 1e3;
		}
		pstate_free(ps);
		{
			struct history *h = history_new(0);
			struct snapshot *snap;
			double t0 = 0;

			if (acquirer_snapshot(acq, 0, &snap) < 0)
				return 1;
			for (unsigned i = 0; i <= HISTORY_SAMPLES; i++) {
				snap->real_ns += 15000000000ll;
				if (i == HISTORY_SAMPLES)
					t0 = cpu_now();
				history_record(h, snap);
			}
			rec_ms = (cpu_now() - t0) * 1e3;
			hist_mib = (double)history_bytes(h, NULL) / (1024.0 * 1024.0);
			history_free(h);
			snap_unref(snap);
		}
		acquirer_free(acq);
		qsort(t, cycles, sizeof(double), cmp_double);
		rss = daemon_rss(numaorchd, root, tmp, &anon);
		watch_cost(root, sizes[s], &watch_ms, &watches, &event_us);
		printf("%8u %14.2f %14.2f %14.2f %14.2f %8.1f MiB %8.1f MiB %8.2f MiB %10.2f %10.2f %8u %9.1f\n",
		       sizes[s], t[cycles / 2], t[cycles - 1], acq_sum / cycles, dec_sum / cycles,
		       rss > 0 ? (double)rss / 1024.0 : NAN, anon > 0 ? (double)anon / 1024.0 : NAN, hist_mib,
		       rec_ms, watch_ms, watches, event_us);
		free(t);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmp);
	}
	printf("targets: <= 50 ms CPU per cycle at 1000 guests, <= 16 MiB RSS\n"
	       "daemon RSS is ru_maxrss of numaorchd on the fixture host (no libvirt module: a host\n"
	       "without VMs): with the file pages of its shared libraries (GnuTLS, libsystemd, ...),\n"
	       "shared with other processes; anon RSS is the agent's own memory. On a VM host the\n"
	       "libvirt module and its libraries add about 7 MiB of file pages.\n"
	       "history: the per-guest history full (%u samples of each guest, an hour at the default\n"
	       "15 s interval; not in the RSS above, which 25 cycles do not fill); record ms: CPU time\n"
	       "of recording one cycle into it.\n"
	       "watch: the cgroup watcher beside the cycle (a fixture root runs none in the daemon):\n"
	       "CPU ms to start it on the tree, its inotify watches, CPU us per cgroup event handled\n"
	       "(each prompts a cycle; prompts coalesce into at most one cycle a second).\n", HISTORY_SAMPLES);
	return 0;
}
