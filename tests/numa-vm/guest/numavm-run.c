/* numavm-run — runs one scenario inside the testbed VM and samples it.
 *
 *   numavm-run SCENARIO PLACER OUT
 *
 * NUMAVM_BALANCING=on leaves kernel.numa_balancing = 1 beside any placer;
 * the cgroup version is the one the init mounted (v1 hierarchies at
 * /sys/fs/cgroup/<controller>, or cgroup2 at /sys/fs/cgroup).
 *
 * PLACER is none, kernel, numad or numaorchd. OUT is where results go
 * (/dev/ttyS1, put in raw mode, or a plain file). The scenario file format
 * is described in tests/numa-vm/scenarios/README.md; topology keys are for
 * the host script and are only checked for spelling here.
 *
 * What it does: creates each guest's cgroup (v2, named as its runtime
 * would name it), starts the workload in it (guestload, which first-
 * touches its memory where the scenario says and then keeps rewriting
 * it), waits until the initial guests are ready, then starts the placer
 * (t = 0) and every SAMPLE seconds writes one line per guest with its
 * memory per node (memory.numa_stat), the CPU and busy share of each of
 * its threads (/proc/<tid>/stat fields 14, 15, 39), its cpuset, its
 * progress and whether its workload is ready (ready=0: a guest started
 * during the run, still first-touching its memory); and one line with
 * /proc/vmstat counters and one with the placer's CPU time. Guests start and stop at the times the scenario
 * gives. The host script (numavm.py) turns these lines into metrics: the
 * raw facts go out, the judging is done outside the VM.
 *
 * Output lines (one record each, space-separated key=value):
 *   H ...                 header: scenario, placer, topology
 *   H cores topo=...      each CPU's package, core, SMT siblings and L3 (emit_cores)
 *   G t= g= mem=KiB,...   per guest and sample; stall=MAX:N0,...,N13
 *                         the stalls its threads felt since they started
 *                         (guestload's progress: longest ms per MiB
 *                         written, MiB per time bucket)
 *   V t= ...              /proc/vmstat counters
 *   F t= free=KiB,...     free memory per node
 *   P t= cpu_s=           placer CPU time (user+system, children included)
 *   E t= what=...         events (start, stop, placer)
 *   D <json>              the decision log, at the end (numaorchd)
 *   L <text>              the placer's own log, at the end
 *   END rc=N
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 16
#define MAX_CPUS 256
#define MAX_GUESTS 64
#define MAX_THREADS 512
#define MAX_CTRS 8
#define CG "/sys/fs/cgroup"
#define RUNDIR "/run/numavm"
/* guestload's stall buckets (its GAP_BUCKETS): the runner passes them on. */
#define STALL_BUCKETS 14

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

struct thr {
	int tid;
	unsigned long long ticks;
};

struct guest {
	char name[64];
	char kind[16];
	char cgroup[256];   /* the guest's cgroup */
	/* Where its processes live: the guest's cgroup itself, or a pod's
	 * container cgroups below it (one workload process each, the
	 * threads and memory split between them). */
	unsigned nctr;
	char ctr[MAX_CTRS][256];
	unsigned containers; /* containers=: 0 is the kind's own form */
	bool ctr_own;        /* ctr_cpuset=own: each container writes its cpuset */
	bool cgroupfs;       /* driver=cgroupfs: /kubepods/burstable/pod<uid>/<id> */
	int widen;           /* widen=all: cpusets widened to every node before t = 0; 2 (widen=mems): mems only */
	unsigned threads, mib;
	unsigned hugetlb_mib; /* hugetlb=: MiB of 2 MiB huge pages its threads rewrite too */
	int device;           /* device=N: it holds the NVMe on node N (-1: none) */
	char device_dev[32];  /* that NVMe's namespace as a devices rule's "MAJ:MIN" */
	int device_node;      /* the numa_node sysfs gives it */
	char touch[64];
	char pages[8];
	char cpus[64];      /* "all" or "nodes:LIST" */
	char mems[64];      /* "all" or LIST */
	char run_on[64];    /* "" or "nodes:LIST": where its threads start */
	bool idle;          /* holds its memory, uses no CPU */
	double start, stop; /* stop < 0: runs to the end */
	/* runtime */
	pid_t pid[MAX_CTRS];
	int ready_fd[MAX_CTRS];
	int state;          /* 0 not started, 1 starting, 2 running, 3 stopped */
	struct thr prev[MAX_THREADS];
	unsigned nprev;
	double prev_t;
};

static struct {
	char name[64];
	double duration, sample;
	char pages[8];
	char hugepages[256]; /* hugepages LIST: 2 MiB pages reserved per node, or "" */
	unsigned nguests;
	struct guest g[MAX_GUESTS];
} scn = { .duration = 90, .sample = 2, .pages = "thp" };

static FILE *out;
/* cgroup v1 (the init mounted the cpuset and memory hierarchies, as on a
 * hybrid host) rather than cgroup2 at CG. */
static bool cg_v1;
static int nr_nodes;
static int cpu_node[MAX_CPUS];
static char node_cpus[MAX_NODES][256];
static double t_zero;
static bool placer_started;
static long clk_tck;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_t(void)
{
	return mono() - t_zero;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "numavm-run: %s\n", buf);
	if (out) {
		fprintf(out, "ERROR %s\nEND rc=1\n", buf);
		fflush(out);
	}
	exit(1);
}

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

static int read_str(const char *path, char *buf, size_t sz)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sz - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* Large files (cgroup.threads, numa_stat) into a malloc'd buffer. */
static char *read_all(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 8192, n = 0;
	char *b;

	if (fd < 0)
		return NULL;
	b = malloc(cap);
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			cap *= 2;
			b = realloc(b, cap);
		}
		r = read(fd, b + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	return b;
}

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	e = errno;
	close(fd);
	return n < 0 ? -e : 0;
}

static void must_write(const char *path, const char *v)
{
	int r = write_str(path, v);

	if (r < 0)
		die("writing \"%s\" to %s: %s", v, path, strerror(-r));
}

/* ---- cgroup paths: v2, or v1's cpuset and memory hierarchies ---------- */

/* v1 hierarchies besides cpuset that a runtime puts every container in
 * (runc: the same path in each mounted one); the agent reads memory's
 * numa_stat and cpuacct's usage there. */
static const char *const v1_others[] = {
	"memory", "cpu", "cpuacct", "pids", "freezer", "devices", "blkio", "systemd", NULL,
};

static bool v1_mounted(const char *h)
{
	char path[128];

	snprintf(path, sizeof(path), CG "/%s/cgroup.procs", h);
	return access(path, F_OK) == 0;
}

/* BUF := file FILE of cgroup REL in the hierarchy holding controller CTL
 * ('c' cpuset, 'm' memory), FILE named as on v2 and mapped to v1's name. */
static void cgfile(char *buf, size_t sz, char ctl, const char *rel, const char *file)
{
	if (!cg_v1) {
		snprintf(buf, sz, CG "%s/%s", rel, file);
		return;
	}
	if (strcmp(file, "cpuset.cpus.effective") == 0)
		file = "cpuset.effective_cpus";
	else if (strcmp(file, "cpuset.mems.effective") == 0)
		file = "cpuset.effective_mems";
	else if (strcmp(file, "cgroup.threads") == 0)
		file = "tasks";
	snprintf(buf, sz, CG "/%s%s/%s", ctl == 'm' ? "memory" : "cpuset", rel, file);
}

/* ---- topology ---------------------------------------------------------- */

static int parse_list(const char *s, int *ids, int max)
{
	int n = 0;

	while (*s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;

		if (e == s)
			return -1;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long i = a; i <= b && n < max; i++)
			ids[n++] = (int)i;
		if (*e == ',')
			e++;
		s = e;
	}
	return n;
}

static void read_topology(void)
{
	char path[128], buf[256];

	for (int i = 0; i < MAX_CPUS; i++)
		cpu_node[i] = -1;
	for (nr_nodes = 0; nr_nodes < MAX_NODES; nr_nodes++) {
		int ids[MAX_CPUS], n;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", nr_nodes);
		if (read_str(path, buf, sizeof(buf)) < 0)
			break;
		snprintf(node_cpus[nr_nodes], sizeof(node_cpus[nr_nodes]), "%s", buf);
		n = parse_list(buf, ids, MAX_CPUS);
		for (int i = 0; i < n; i++)
			if (ids[i] < MAX_CPUS)
				cpu_node[ids[i]] = nr_nodes;
	}
	if (nr_nodes < 1)
		die("no NUMA nodes in sysfs");
}

/* The cores and last-level caches as the guest kernel has them, once:
 * "H cores topo=CPU:PACKAGE:CORE:SIBLINGS:L3;..." per online CPU, with
 * its physical_package_id, core_id, thread_siblings_list and the
 * shared_cpu_list of its level-3 cache ("-" when sysfs shows none). The
 * analysis reads SMT siblings and caches from it against the G lines'
 * tcpu=, instead of assuming how QEMU numbered the threads. */
static void emit_cores(void)
{
	size_t cap = 64 * MAX_CPUS, len = 0;
	char *line = malloc(cap);

	if (!line)
		die("out of memory");
	line[0] = '\0';
	for (int c = 0; c < MAX_CPUS; c++) {
		char path[128], pkg[16], core[16], sib[256], l3[256] = "-", lvl[8];

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		if (read_str(path, sib, sizeof(sib)) < 0)
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		if (read_str(path, pkg, sizeof(pkg)) < 0)
			snprintf(pkg, sizeof(pkg), "-");
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
		if (read_str(path, core, sizeof(core)) < 0)
			snprintf(core, sizeof(core), "-");
		/* index3 is the L3 on x86, but the level file says so for sure. */
		for (int i = 0; i < 8; i++) {
			snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level", c, i);
			if (read_str(path, lvl, sizeof(lvl)) < 0 || strcmp(lvl, "3") != 0)
				continue;
			snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", c, i);
			if (read_str(path, l3, sizeof(l3)) < 0)
				snprintf(l3, sizeof(l3), "-");
			break;
		}
		len += (size_t)snprintf(line + len, cap - len, "%s%d:%s:%s:%s:%s", len ? ";" : "", c, pkg, core, sib, l3);
		if (len >= cap)
			die("cpu topology line longer than %zu bytes", cap);
	}
	emit("H cores topo=%s", line[0] ? line : "-");
	free(line);
}

/* "nodes:0,2" → the CPUs of those nodes, as a list. */
static void nodes_to_cpus(const char *spec, char *buf, size_t sz)
{
	int ids[MAX_NODES], n = parse_list(spec, ids, MAX_NODES);

	buf[0] = '\0';
	if (n <= 0)
		die("bad node list \"%s\"", spec);
	for (int i = 0; i < n; i++) {
		if (ids[i] >= nr_nodes)
			die("node %d does not exist (the VM has %d)", ids[i], nr_nodes);
		snprintf(buf + strlen(buf), sz - strlen(buf), "%s%s", i ? "," : "", node_cpus[ids[i]]);
	}
}

/* ---- scenario ---------------------------------------------------------- */

/* Keys only the host script uses (VM shape and checks). */
static const char *const host_keys[] = {
	"description", "nodes", "cpus_per_node", "mem_per_node", "mem_nodes", "distance", "distances",
	"memory_only", "pxb", "threads", "nvme",
	"check_within", "check_duration", "bench", "cgroup", NULL,
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A stable 64-hex id from NAME, as a runtime would generate a random one. */
static void hex_id(const char *name, const char *salt, char hex[65])
{
	uint64_t x = fnv(name) ^ fnv(salt);

	for (int i = 0; i < 4; i++) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		snprintf(hex + i * 16, 17, "%016llx", (unsigned long long)z);
	}
}

/* "0-1,4" → SET. */
static void cpulist_to_set(const char *list, cpu_set_t *set)
{
	const char *p = list;

	CPU_ZERO(set);
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			die("bad CPU list \"%s\"", list);
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, set);
		p = *end == ',' ? end + 1 : end;
		if (*p == '\n')
			break;
	}
}

/* A guest with run_on starts with its threads on those nodes' CPUs (its
 * workload's threads inherit the affinity), so that every placer faces
 * the same start: left to the scheduler, a thread free to run anywhere
 * lands on a different node from run to run (memtight's kernel run began
 * with both guests local by chance, the others with one misplaced). At
 * t = 0, just before the placer starts (a guest starting later: once it is
 * ready), release_run_on() widens each thread to every CPU; its cgroup's
 * cpuset still bounds it. */
static void release_run_on(struct guest *g)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	cpu_set_t all;
	unsigned n = 0;

	if (!g->run_on[0] || g->state != 2)
		return;
	CPU_ZERO(&all);
	for (int c = 0; c < MAX_CPUS && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	for (unsigned i = 0; i < g->nctr; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task", (int)g->pid[i]);
		d = opendir(path);
		if (!d)
			die("guest %s: %s: %s", g->name, path, strerror(errno));
		while ((de = readdir(d))) {
			int tid = atoi(de->d_name);

			if (tid <= 0)
				continue;
			if (sched_setaffinity(tid, sizeof(all), &all) < 0 && errno != ESRCH)
				die("guest %s: sched_setaffinity(%d): %s", g->name, tid, strerror(errno));
			n++;
		}
		closedir(d);
	}
	g->run_on[0] = '\0';
	emit("E t=%.2f what=released g=%s threads=%u", now_t(), g->name, n);
}

static void guest_paths(struct guest *g)
{
	char id[65], uid[65];

	hex_id(g->name, "ctr", id);
	g->nctr = 1;
	if (g->containers && strcmp(g->kind, "kubepods") != 0)
		die("guest %s: containers= is for kind=kubepods (a %s guest's own cgroup holds its cpuset)",
		    g->name, g->kind);
	if (g->cgroupfs && strcmp(g->kind, "kubepods") != 0)
		die("guest %s: driver= is for kind=kubepods", g->name);
	if (strcmp(g->kind, "docker") == 0) {
		snprintf(g->cgroup, sizeof(g->cgroup), "/system.slice/docker-%s.scope", id);
	} else if (strcmp(g->kind, "podman") == 0) {
		snprintf(g->cgroup, sizeof(g->cgroup), "/machine.slice/libpod-%s.scope", id);
	} else if (strcmp(g->kind, "kubepods") == 0) {
		/* The pod is the guest; each container a child cgroup holding
		 * its process: systemd driver (default) or cgroupfs driver,
		 * named as the kubelet and containerd name them. */
		hex_id(g->name, "pod", uid);
		if (g->cgroupfs)
			snprintf(g->cgroup, sizeof(g->cgroup), "/kubepods/burstable/pod%.8s-%.4s-%.4s-%.4s-%.12s",
				 uid, uid + 8, uid + 12, uid + 16, uid + 20);
		else
			snprintf(g->cgroup, sizeof(g->cgroup),
				 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%.8s_%.4s_%.4s_%.4s_%.12s.slice",
				 uid, uid + 8, uid + 12, uid + 16, uid + 20);
		g->nctr = g->containers ? g->containers : 1;
		if (g->nctr > MAX_CTRS || g->nctr > g->threads)
			die("guest %s: containers must be 1..%d and at most threads", g->name, MAX_CTRS);
		for (unsigned i = 0; i < g->nctr; i++) {
			char salt[16];

			/* The first container keeps the id older runs used. */
			snprintf(salt, sizeof(salt), i ? "ctr%u" : "ctr", i);
			hex_id(g->name, salt, id);
			snprintf(g->ctr[i], sizeof(g->ctr[i]), g->cgroupfs ? "%s/%s" : "%s/cri-containerd-%s.scope",
				 g->cgroup, id);
		}
		return;
	} else if (strcmp(g->kind, "lxc") == 0) {
		snprintf(g->cgroup, sizeof(g->cgroup), "/lxc.payload.%s", g->name);
	} else {
		die("guest %s: kind must be docker, podman, kubepods or lxc", g->name);
	}
	snprintf(g->ctr[0], sizeof(g->ctr[0]), "%s", g->cgroup);
}

/* Does container cgroup I of G carry a cpuset of its own (not the pod's
 * cgroup itself)? ctr_cpuset=own, and always on v1, where a runtime must
 * write every container's cpuset before a task may join it. */
static bool ctr_has_cpuset(const struct guest *g, unsigned i)
{
	return strcmp(g->ctr[i], g->cgroup) != 0 && (g->ctr_own || cg_v1);
}

static void parse_guest(char *rest, int lineno)
{
	struct guest *g;
	char *tok, *save = NULL;

	if (scn.nguests >= MAX_GUESTS)
		die("line %d: too many guests", lineno);
	g = &scn.g[scn.nguests++];
	memset(g, 0, sizeof(*g));
	snprintf(g->kind, sizeof(g->kind), "docker");
	g->threads = 1;
	g->mib = 64;
	snprintf(g->cpus, sizeof(g->cpus), "all");
	snprintf(g->mems, sizeof(g->mems), "all");
	g->stop = -1;
	g->device = -1;
	g->device_node = -1;
	for (unsigned i = 0; i < MAX_CTRS; i++)
		g->ready_fd[i] = -1;
	tok = strtok_r(rest, " \t", &save);
	if (!tok)
		die("line %d: guest needs a name", lineno);
	snprintf(g->name, sizeof(g->name), "%s", tok);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(tok, '=');
		const char *k = tok, *v;

		if (!eq)
			die("line %d: \"%s\" is not key=value", lineno, tok);
		*eq = '\0';
		v = eq + 1;
		if (strcmp(k, "kind") == 0)
			snprintf(g->kind, sizeof(g->kind), "%s", v);
		else if (strcmp(k, "threads") == 0)
			g->threads = (unsigned)atoi(v);
		else if (strcmp(k, "mib") == 0)
			g->mib = (unsigned)atoi(v);
		else if (strcmp(k, "hugetlb") == 0)
			g->hugetlb_mib = (unsigned)atoi(v);
		else if (strcmp(k, "touch") == 0)
			snprintf(g->touch, sizeof(g->touch), "%s", v);
		else if (strcmp(k, "pages") == 0)
			snprintf(g->pages, sizeof(g->pages), "%s", v);
		else if (strcmp(k, "cpus") == 0)
			snprintf(g->cpus, sizeof(g->cpus), "%s", v);
		else if (strcmp(k, "mems") == 0)
			snprintf(g->mems, sizeof(g->mems), "%s", v);
		else if (strcmp(k, "run_on") == 0) {
			if (strncmp(v, "nodes:", 6) != 0)
				die("line %d: run_on must be nodes:LIST", lineno);
			snprintf(g->run_on, sizeof(g->run_on), "%s", v);
		}
		else if (strcmp(k, "busy") == 0)
			g->idle = strcmp(v, "no") == 0;
		else if (strcmp(k, "containers") == 0)
			g->containers = (unsigned)atoi(v);
		else if (strcmp(k, "ctr_cpuset") == 0) {
			if (strcmp(v, "own") && strcmp(v, "inherit"))
				die("line %d: ctr_cpuset must be own or inherit", lineno);
			g->ctr_own = strcmp(v, "own") == 0;
		} else if (strcmp(k, "driver") == 0) {
			if (strcmp(v, "systemd") && strcmp(v, "cgroupfs"))
				die("line %d: driver must be systemd or cgroupfs", lineno);
			g->cgroupfs = strcmp(v, "cgroupfs") == 0;
		} else if (strcmp(k, "widen") == 0) {
			if (strcmp(v, "all") && strcmp(v, "mems") && strcmp(v, "no"))
				die("line %d: widen must be all, mems or no", lineno);
			g->widen = strcmp(v, "all") == 0 ? 1 : strcmp(v, "mems") == 0 ? 2 : 0;
		}
		else if (strcmp(k, "device") == 0)
			g->device = atoi(v);
		else if (strcmp(k, "start") == 0)
			g->start = atof(v);
		else if (strcmp(k, "stop") == 0)
			g->stop = atof(v);
		else
			die("line %d: unknown guest key \"%s\"", lineno, k);
	}
	if (!g->threads || !g->mib)
		die("line %d: guest %s needs threads and mib", lineno, g->name);
	if (g->hugetlb_mib && (g->hugetlb_mib % 2 || g->containers > 1))
		die("line %d: guest %s: hugetlb= is MiB of 2 MiB pages, for a guest of one process", lineno, g->name);
}

static void parse_scenario(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0;

	if (!f)
		die("cannot open scenario %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *k, *v, *hash;
		bool known = false;

		lineno++;
		if ((hash = strchr(p, '#')))
			*hash = '\0';
		while (isspace((unsigned char)*p))
			p++;
		for (size_t n = strlen(p); n && isspace((unsigned char)p[n - 1]);)
			p[--n] = '\0';
		if (!*p)
			continue;
		k = p;
		v = p + strcspn(p, " \t");
		if (*v)
			*v++ = '\0';
		while (isspace((unsigned char)*v))
			v++;
		for (unsigned i = 0; host_keys[i]; i++)
			known = known || strcmp(k, host_keys[i]) == 0;
		if (known)
			continue;
		if (strcmp(k, "name") == 0)
			snprintf(scn.name, sizeof(scn.name), "%s", v);
		else if (strcmp(k, "duration") == 0)
			scn.duration = atof(v);
		else if (strcmp(k, "sample") == 0)
			scn.sample = atof(v);
		else if (strcmp(k, "pages") == 0)
			snprintf(scn.pages, sizeof(scn.pages), "%s", v);
		else if (strcmp(k, "guest") == 0)
			parse_guest(v, lineno);
		else if (strcmp(k, "hugepages") == 0)
			snprintf(scn.hugepages, sizeof(scn.hugepages), "%s", v);
		else
			die("%s:%d: unknown key \"%s\"", path, lineno, k);
	}
	fclose(f);
	if (!scn.name[0]) {
		/* The file's name is the scenario's name: "misplaced.scn". */
		const char *b = strrchr(path, '/');

		snprintf(scn.name, sizeof(scn.name), "%.*s", (int)strcspn(b ? b + 1 : path, "."),
			 b ? b + 1 : path);
	}
	if (scn.duration <= 0 || scn.sample <= 0)
		die("%s: duration and sample must be positive", path);
	for (unsigned i = 0; i < scn.nguests; i++) {
		struct guest *g = &scn.g[i];

		if (!g->pages[0])
			snprintf(g->pages, sizeof(g->pages), "%s", scn.pages);
		guest_paths(g);
	}
}

/* ---- cgroups and guests ------------------------------------------------ */

/* mkdir -p CG/REL, enabling the controllers in every ancestor on the way
 * (v2: a controller is available in a child only if its parent lists it
 * in cgroup.subtree_control). On v1, in the cpuset and the memory
 * hierarchy; a new v1 cpuset starts empty and takes its parent's CPUs and
 * nodes, as runc fills the parents it creates. */
static void cg_mkdir(const char *rel)
{
	char path[1024], sub[512], val[1024];
	const char *p = rel;

	while ((p = strchr(p + 1, '/')) || *rel) {
		size_t n = p ? (size_t)(p - rel) : strlen(rel);

		snprintf(sub, sizeof(sub), "%.*s", (int)n, rel);
		if (cg_v1) {
			for (unsigned h = 0; v1_others[h]; h++) {
				if (!v1_mounted(v1_others[h]))
					continue;
				snprintf(path, sizeof(path), CG "/%s%s", v1_others[h], sub);
				if (mkdir(path, 0755) < 0 && errno != EEXIST)
					die("mkdir %s: %s", path, strerror(errno));
			}
			snprintf(path, sizeof(path), CG "/cpuset%s", sub);
			if (mkdir(path, 0755) == 0) {
				char parent[512];

				snprintf(parent, sizeof(parent), "%.*s", (int)(strrchr(sub, '/') - sub), sub);
				for (unsigned f = 0; f < 2; f++) {
					const char *file = f ? "cpuset.mems" : "cpuset.cpus";

					cgfile(path, sizeof(path), 'c', parent, file);
					if (read_str(path, val, sizeof(val)) < 0)
						die("reading %s: %s", path, strerror(errno));
					cgfile(path, sizeof(path), 'c', sub, file);
					must_write(path, val);
				}
			} else if (errno != EEXIST) {
				die("mkdir %s: %s", path, strerror(errno));
			}
		} else {
			snprintf(path, sizeof(path), CG "%s", sub);
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				die("mkdir %s: %s", path, strerror(errno));
		}
		if (!p)
			break;
		if (!cg_v1) {
			snprintf(path, sizeof(path), CG "%s/cgroup.subtree_control", sub);
			must_write(path, "+cpuset +memory +cpu +pids");
		}
	}
}

/* G's cpuset spec as the lists a runtime writes: CPUS ("" for all and
 * v2's pod, which then inherits) and MEMS, every CPU and node for "all". */
static void resolve_all(const char *spec, bool mems, char *buf, size_t sz)
{
	buf[0] = '\0';
	if (mems && strcmp(spec, "all") != 0) {
		snprintf(buf, sz, "%s", spec);
	} else if (mems) {
		snprintf(buf, sz, "0-%d", nr_nodes - 1);
	} else if (strncmp(spec, "nodes:", 6) == 0) {
		nodes_to_cpus(spec + 6, buf, sz);
	} else if (strcmp(spec, "all") == 0) {
		for (int n = 0; n < nr_nodes; n++)
			snprintf(buf + strlen(buf), sz - strlen(buf), "%s%s", n ? "," : "", node_cpus[n]);
	} else {
		die("cpus must be all or nodes:LIST, not \"%s\"", spec);
	}
}

/* cpuset.cpus and cpuset.mems of REL := CPUS, MEMS (v1: widen or narrow
 * in the order the kernel accepts: nodes before CPUs does not matter for
 * one cgroup, a parent before its children does, which callers keep). */
static void write_cpuset(const char *rel, const char *cpus, const char *mems)
{
	char path[1024];

	cgfile(path, sizeof(path), 'c', rel, "cpuset.cpus");
	must_write(path, cpus);
	cgfile(path, sizeof(path), 'c', rel, "cpuset.mems");
	must_write(path, mems);
}

/* Container I's threads T and MiB M: the threads split evenly (the first
 * containers take what does not divide), the memory in proportion. */
static void ctr_share(const struct guest *g, unsigned i, unsigned *t, unsigned *m)
{
	unsigned before = 0;

	for (unsigned j = 0; j < i; j++)
		before += g->threads / g->nctr + (j < g->threads % g->nctr);
	*t = g->threads / g->nctr + (i < g->threads % g->nctr);
	*m = (unsigned)((unsigned long long)g->mib * (before + *t) / g->threads -
			(unsigned long long)g->mib * before / g->threads);
}

/* The NVMe namespace whose controller's PCI function sits on NODE (the
 * scenario's `nvme` puts one behind the expander bridge of a node): its
 * "MAJ:MIN" into DEV and the numa_node sysfs gives it into *GOT. The
 * node is read from the nearest ancestor of the namespace's device that
 * has a numa_node, as the agent reads it. 0, or -1 when there is none. */
static int nvme_on_node(int node, char *dev, size_t sz, int *got)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *de;
	int r = -1;

	if (!d)
		return -1;
	while (r < 0 && (de = readdir(d))) {
		char path[1100], real[1024], val[32];
		unsigned c, n;
		char *slash;

		if (sscanf(de->d_name, "nvme%un%u", &c, &n) != 2 || strchr(de->d_name, 'p'))
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s", de->d_name);
		if (!realpath(path, real))
			continue;
		while ((slash = strrchr(real, '/')) && slash != real) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/numa_node", real);
			if (read_str(path, val, sizeof(val)) == 0)
				break;
		}
		if (!slash || slash == real || atoi(val) != node)
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev", de->d_name);
		if (read_str(path, dev, sz) < 0)
			continue;
		*got = atoi(val);
		r = 0;
	}
	closedir(d);
	return r;
}

/* Container cgroup REL's device rules as runc writes them on v1: deny
 * everything, then allow its default set (mknod of any, null, zero, full,
 * random, urandom, tty, console, ptmx, the pts, tun) and the devices the
 * container was given (here: G's NVMe namespace, read and write). */
static void write_device_rules(const struct guest *g, const char *rel)
{
	static const char *const allow[] = {
		"c *:* m", "b *:* m", "c 1:3 rwm", "c 1:8 rwm", "c 1:7 rwm", "c 5:0 rwm", "c 1:5 rwm",
		"c 1:9 rwm", "c 5:1 rwm", "c 136:* rwm", "c 5:2 rwm", "c 10:200 rwm", NULL,
	};
	char path[1024], rule[64];

	snprintf(path, sizeof(path), CG "/devices%s/devices.deny", rel);
	must_write(path, "a");
	snprintf(path, sizeof(path), CG "/devices%s/devices.allow", rel);
	for (unsigned i = 0; allow[i]; i++)
		must_write(path, allow[i]);
	snprintf(rule, sizeof(rule), "b %s rw", g->device_dev);
	must_write(path, rule);
}

static void start_guest(struct guest *g)
{
	char path[1024], val[1024], mval[64], progress[128], mib[16], thr[16], fdarg[16];

	cg_mkdir(g->cgroup);
	if (!cg_v1 && strcmp(g->ctr[0], g->cgroup) != 0) {
		/* The pod's cgroup must pass the controllers to its containers. */
		snprintf(path, sizeof(path), CG "%s/cgroup.subtree_control", g->cgroup);
		must_write(path, "+cpuset +memory +cpu +pids");
	}
	/* The guest's (pod's) cpuset first: on v1 a child may not be wider. */
	if (strncmp(g->cpus, "nodes:", 6) != 0 && strcmp(g->cpus, "all") != 0)
		die("guest %s: cpus must be all or nodes:LIST", g->name);
	if (strcmp(g->cpus, "all") != 0) {
		resolve_all(g->cpus, false, val, sizeof(val));
		cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.cpus");
		must_write(path, val);
	}
	if (strcmp(g->mems, "all") != 0) {
		cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.mems");
		must_write(path, g->mems);
	}
	for (unsigned i = 0; i < g->nctr; i++) {
		if (strcmp(g->ctr[i], g->cgroup) == 0)
			continue;
		cg_mkdir(g->ctr[i]);
		if (ctr_has_cpuset(g, i)) {
			/* A container's own cpuset, as runc writes it: the
			 * pod's (the runtime was given the same CPUs). */
			resolve_all(g->cpus, false, val, sizeof(val));
			resolve_all(g->mems, true, mval, sizeof(mval));
			write_cpuset(g->ctr[i], val, mval);
		}
	}
	/* Its device rules before its process joins (v1's devices hierarchy). */
	for (unsigned i = 0; g->device_dev[0] && cg_v1 && v1_mounted("devices") && i < g->nctr; i++)
		write_device_rules(g, g->ctr[i]);
	for (unsigned i = 0; i < g->nctr; i++) {
		unsigned t, m;
		int pfd[2];
		pid_t pid;

		ctr_share(g, i, &t, &m);
		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe: %s", strerror(errno));
		if (g->nctr == 1)
			snprintf(progress, sizeof(progress), RUNDIR "/%s.progress", g->name);
		else
			snprintf(progress, sizeof(progress), RUNDIR "/%s.%u.progress", g->name, i);
		snprintf(mib, sizeof(mib), "%u", m);
		snprintf(thr, sizeof(thr), "%u", t);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			char *argv[24], hmib[16];
			int a = 0;

			/* Into the cgroup before the first page is touched, so
			 * every page is charged to it and allocated within its
			 * cpuset. */
			cgfile(path, sizeof(path), 'c', g->ctr[i], "cgroup.procs");
			if (write_str(path, "0") < 0)
				_exit(126);
			for (unsigned h = 0; cg_v1 && v1_others[h]; h++) {
				if (!v1_mounted(v1_others[h]))
					continue;
				snprintf(path, sizeof(path), CG "/%s%s/cgroup.procs", v1_others[h], g->ctr[i]);
				if (write_str(path, "0") < 0)
					_exit(126);
			}
			if (g->run_on[0]) {
				cpu_set_t set;

				nodes_to_cpus(g->run_on + 6, val, sizeof(val));
				cpulist_to_set(val, &set);
				if (sched_setaffinity(0, sizeof(set), &set) < 0)
					_exit(126);
			}
			close(pfd[0]);
			if (dup2(pfd[1], 3) < 0)
				_exit(126);
			snprintf(fdarg, sizeof(fdarg), "3");
			argv[a++] = "/bin/guestload";
			argv[a++] = "--mib";
			argv[a++] = mib;
			argv[a++] = "--threads";
			argv[a++] = thr;
			argv[a++] = "--pages";
			argv[a++] = g->pages;
			argv[a++] = "--progress";
			argv[a++] = progress;
			argv[a++] = "--ready-fd";
			argv[a++] = fdarg;
			if (g->idle)
				argv[a++] = "--idle";
			if (g->hugetlb_mib) {
				snprintf(hmib, sizeof(hmib), "%u", g->hugetlb_mib);
				argv[a++] = "--hugetlb";
				argv[a++] = hmib;
				if (!g->idle)
					argv[a++] = "--hugetlb-busy";
			}
			if (g->touch[0] && strcmp(g->touch, "local") != 0) {
				argv[a++] = "--touch";
				argv[a++] = g->touch;
			}
			argv[a] = NULL;
			execv(argv[0], argv);
			_exit(127);
		}
		close(pfd[1]);
		g->pid[i] = pid;
		g->ready_fd[i] = pfd[0];
		fcntl(pfd[0], F_SETFL, O_NONBLOCK);
		if (strcmp(g->ctr[i], g->cgroup) == 0)
			emit("E t=%.2f what=start g=%s cgroup=%s pid=%d", now_t(), g->name, g->cgroup, (int)pid);
		else
			emit("E t=%.2f what=start g=%s cgroup=%s pid=%d ctr=%s", now_t(), g->name, g->cgroup, (int)pid,
			     g->ctr[i]);
	}
	g->state = 1;
}

/* The operator's or runtime's update of a guest's cpusets to every CPU
 * and node (docker update, the kubelet's CPU Manager set free): the pod
 * first, then each container carrying its own (v1 needs that order). */
static void widen_guest(struct guest *g)
{
	char cpus[1024], mems[64];

	resolve_all("all", false, cpus, sizeof(cpus));
	resolve_all("all", true, mems, sizeof(mems));
	if (g->widen == 2) {
		/* widen=mems: a runtime's --cpuset-mems lifted, its CPUs kept:
		 * the memory it first-touched stays where the binding put it. */
		char path[1024];

		cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.mems");
		must_write(path, mems);
		for (unsigned i = 0; i < g->nctr; i++)
			if (ctr_has_cpuset(g, i)) {
				cgfile(path, sizeof(path), 'c', g->ctr[i], "cpuset.mems");
				must_write(path, mems);
			}
		emit("E t=%.2f what=widened g=%s cpus=kept mems=%s", now_t(), g->name, mems);
		return;
	}
	write_cpuset(g->cgroup, cpus, mems);
	for (unsigned i = 0; i < g->nctr; i++)
		if (ctr_has_cpuset(g, i))
			write_cpuset(g->ctr[i], cpus, mems);
	emit("E t=%.2f what=widened g=%s cpus=%s mems=%s", now_t(), g->name, cpus, mems);
}

/* Starting guests whose workloads all said "ready" become running. */
static void poll_ready(void)
{
	for (unsigned i = 0; i < scn.nguests; i++) {
		struct guest *g = &scn.g[i];
		bool all = true;

		if (g->state != 1)
			continue;
		for (unsigned c = 0; c < g->nctr; c++) {
			char buf[16];
			ssize_t n;

			if (g->ready_fd[c] < 0)
				continue;
			n = read(g->ready_fd[c], buf, sizeof(buf));
			if (n < 0) {
				all = false;
				continue;
			}
			close(g->ready_fd[c]);
			g->ready_fd[c] = -1;
			if (n == 0) {
				int st;

				waitpid(g->pid[c], &st, 0);
				die("guest %s exited before it was ready (status %d)", g->name, st);
			}
		}
		if (!all)
			continue;
		g->state = 2;
		emit("E t=%.2f what=ready g=%s", now_t(), g->name);
		if (placer_started)
			release_run_on(g);
	}
}

static void rmdir_retry(const char *path)
{
	for (int i = 0; i < 50; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return;
		usleep(100000);
	}
}

static void cg_rmdir(const char *rel)
{
	char path[512];

	if (cg_v1) {
		for (unsigned h = 0; v1_others[h]; h++) {
			if (!v1_mounted(v1_others[h]))
				continue;
			snprintf(path, sizeof(path), CG "/%s%s", v1_others[h], rel);
			rmdir_retry(path);
		}
		snprintf(path, sizeof(path), CG "/cpuset%s", rel);
	} else {
		snprintf(path, sizeof(path), CG "%s", rel);
	}
	rmdir_retry(path);
}

static void stop_guest(struct guest *g, bool remove)
{
	char end[32] = "ok";
	int st;

	if (g->state == 0 || g->state == 3)
		return;
	for (unsigned i = 0; i < g->nctr; i++)
		kill(g->pid[i], SIGTERM);
	/* How its processes ended: a workload the kernel killed during the
	 * run (SIGBUS from a hugetlb fault without a free page, SIGKILL from
	 * an OOM kill) has already ended when it is told to stop. */
	for (unsigned i = 0; i < g->nctr; i++) {
		waitpid(g->pid[i], &st, 0);
		if (strcmp(end, "ok") == 0 && WIFSIGNALED(st) && WTERMSIG(st) != SIGTERM)
			snprintf(end, sizeof(end), "sig%d", WTERMSIG(st));
		else if (strcmp(end, "ok") == 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0)
			snprintf(end, sizeof(end), "exit%d", WEXITSTATUS(st));
		if (g->ready_fd[i] >= 0)
			close(g->ready_fd[i]);
		g->ready_fd[i] = -1;
	}
	g->state = 3;
	emit("E t=%.2f what=stop g=%s end=%s", now_t(), g->name, end);
	if (!remove)
		return;
	for (unsigned i = 0; i < g->nctr; i++)
		if (strcmp(g->ctr[i], g->cgroup) != 0)
			cg_rmdir(g->ctr[i]);
	cg_rmdir(g->cgroup);
}

/* ---- sampling ---------------------------------------------------------- */

/* utime+stime (and processor) of TID; 0 or -1. */
static int thread_stat(int pid, int tid, unsigned long long *ticks, int *cpu)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, stt = 0;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_str(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2;
	*cpu = -1;
	for (char *save = NULL, *t = strtok_r(p, " ", &save); t; t = strtok_r(NULL, " ", &save), field++) {
		if (field == 14)
			ut = strtoull(t, NULL, 10);
		else if (field == 15)
			stt = strtoull(t, NULL, 10);
		else if (field == 39) {
			*cpu = atoi(t);
			break;
		}
	}
	*ticks = ut + stt;
	return *cpu >= 0 ? 0 : -1;
}

/* Bytes per node, summed over the "anon" and "file" lines (v2, bytes;
 * v1: "hierarchical_anon=" and "hierarchical_file=", pages, descendants
 * included as on v2). */
static void numa_stat(const char *rel, unsigned long long *bytes)
{
	char path[512], *b;

	memset(bytes, 0, sizeof(*bytes) * MAX_NODES);
	cgfile(path, sizeof(path), 'm', rel, "memory.numa_stat");
	b = read_all(path);
	if (!b)
		return;
	for (char *save = NULL, *l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long unit = 1;

		if (cg_v1 && (strncmp(l, "hierarchical_anon=", 18) == 0 || strncmp(l, "hierarchical_file=", 18) == 0))
			unit = 4096;
		else if (cg_v1 || (strncmp(l, "anon ", 5) && strncmp(l, "file ", 5)))
			continue;
		for (char *q = strchr(l, 'N'); q; q = strchr(q + 1, 'N')) {
			int n = atoi(q + 1);
			char *eq = strchr(q, '=');

			if (eq && n >= 0 && n < MAX_NODES)
				bytes[n] += strtoull(eq + 1, NULL, 10) * unit;
		}
	}
	free(b);
}

/* A process's hugetlb pages per node, in bytes, added to BYTES: its
 * numa_maps' "huge" mappings (N<node>=pages of kernelpagesize_kB). The
 * cgroup's memory.numa_stat does not count hugetlb memory. */
static void hugetlb_maps(pid_t pid, unsigned long long *bytes)
{
	char path[64], *b;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)pid);
	b = read_all(path);
	if (!b)
		return;
	for (char *save = NULL, *l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long kb = 0;
		char *q = strstr(l, "kernelpagesize_kB=");

		if (!strstr(l, " huge ") || !q)
			continue;
		kb = strtoull(q + 18, NULL, 10);
		for (q = strstr(l, " N"); q; q = strstr(q + 1, " N")) {
			int n = atoi(q + 2);
			char *eq = strchr(q, '=');

			if (eq && n >= 0 && n < MAX_NODES)
				bytes[n] += strtoull(eq + 1, NULL, 10) * kb * 1024;
		}
	}
	free(b);
}

/* Reserve LIST's 2 MiB huge pages per node ("128,0,0,0": node 0 gets
 * 128) before the guests start, and say what each pool holds. */
static void reserve_hugepages(const char *list)
{
	char path[128], buf[32], line[512] = "";
	const char *p = list;

	for (int n = 0; *p && n < nr_nodes; n++) {
		unsigned long v = strtoul(p, NULL, 10);

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages", n);
		snprintf(buf, sizeof(buf), "%lu", v);
		if (write_str(path, buf) < 0)
			die("cannot reserve %lu huge pages on node %d: %s", v, n, strerror(errno));
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	for (int n = 0; n < nr_nodes; n++) {
		char nr[32] = "?", fr[32] = "?";

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages", n);
		read_str(path, nr, sizeof(nr));
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/free_hugepages", n);
		read_str(path, fr, sizeof(fr));
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%d:%s/%s", n ? "," : "", n, nr, fr);
	}
	emit("H hugepages page_kib=2048 pools=%s", line);
}

static unsigned long long memory_event(const char *rel, const char *key)
{
	char path[512], *b, *p;
	unsigned long long v = 0;

	/* v1 counts its OOM kills in memory.oom_control ("oom_kill N"). */
	cgfile(path, sizeof(path), 'm', rel, cg_v1 ? "memory.oom_control" : "memory.events");
	b = read_all(path);
	if (!b)
		return 0;
	for (p = b; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, strlen(key)) == 0 && p[strlen(key)] == ' ')
			v = strtoull(p + strlen(key) + 1, NULL, 10);
	free(b);
	return v;
}

static void sample_guest(struct guest *g, double t, bool quiet)
{
	unsigned long long bytes[MAX_NODES];
	char path[512], cpus[128] = "", mems[64] = "", ccpus[128] = "", cmems[64] = "";
	char thr[4096] = "", mem[256] = "", prog[64] = "", parts[2048] = "", huge[256] = "", tcpu[1024] = "";
	char stall[512] = "";
	struct thr cur[MAX_THREADS];
	unsigned ncur = 0;
	char *b;
	double dt = t - g->prev_t;

	numa_stat(g->cgroup, bytes);
	if (g->hugetlb_mib) {
		/* A hugetlb guest's memory is mostly huge pages, which
		 * memory.numa_stat leaves out: they count in mem= as its
		 * memory, and alone in huge=. */
		unsigned long long hb[MAX_NODES];

		memset(hb, 0, sizeof(hb));
		for (unsigned c = 0; c < g->nctr; c++)
			if (g->pid[c] > 0)
				hugetlb_maps(g->pid[c], hb);
		for (int n = 0; n < nr_nodes; n++) {
			bytes[n] += hb[n];
			snprintf(huge + strlen(huge), sizeof(huge) - strlen(huge), "%s%llu", n ? "," : " huge=",
				 hb[n] / 1024);
		}
	}
	for (int n = 0; n < nr_nodes; n++)
		snprintf(mem + strlen(mem), sizeof(mem) - strlen(mem), "%s%llu", n ? "," : "",
			 bytes[n] / 1024);
	cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.cpus.effective");
	read_str(path, cpus, sizeof(cpus));
	cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.mems.effective");
	read_str(path, mems, sizeof(mems));
	cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.cpus");
	read_str(path, ccpus, sizeof(ccpus));
	cgfile(path, sizeof(path), 'c', g->cgroup, "cpuset.mems");
	read_str(path, cmems, sizeof(cmems));
	{
		/* MiB written, summed over the guest's workload processes, and
		 * the stalls its threads felt (guestload's progress line):
		 * the longest, and the MiB per time-bucket, summed. */
		double mib = 0, gmax = -1;
		unsigned long long gaps[STALL_BUCKETS] = { 0 };

		for (unsigned i = 0; i < g->nctr; i++) {
			char one[512], *p;
			double m, secs, gm;
			int used = 0;

			if (g->nctr == 1)
				snprintf(path, sizeof(path), RUNDIR "/%s.progress", g->name);
			else
				snprintf(path, sizeof(path), RUNDIR "/%s.%u.progress", g->name, i);
			if (read_str(path, one, sizeof(one)) != 0)
				continue;
			if (sscanf(one, "%lf %lf %lf %n", &m, &secs, &gm, &used) < 3 || !used) {
				mib += atof(one);
				continue;
			}
			mib += m;
			gmax = gm > gmax ? gm : gmax;
			p = one + used;
			for (unsigned k = 0; k < STALL_BUCKETS && *p; k++) {
				gaps[k] += strtoull(p, &p, 10);
				if (*p == ',')
					p++;
			}
		}
		snprintf(prog, sizeof(prog), "%.0f", mib);
		if (gmax >= 0) {
			int n = snprintf(stall, sizeof(stall), " stall=%.1f:", gmax);

			for (unsigned k = 0; k < STALL_BUCKETS; k++)
				n += snprintf(stall + n, sizeof(stall) - (size_t)n, "%s%llu", k ? "," : "", gaps[k]);
		}
	}
	/* Threads: node each last ran on and its share of a CPU since the
	 * previous sample ("node:busy%", busy -1 when not seen before). A pod
	 * of several containers also says, per container, how many of those
	 * entries are its threads and its own memory per node ("parts=N:KiB,
	 * ...;..."): a container's threads touch only its own memory, so
	 * their locality is against it, not against the pod's. */
	for (unsigned c = 0; c < g->nctr; c++) {
		unsigned before = ncur;

		cgfile(path, sizeof(path), 'c', g->ctr[c], "cgroup.threads");
		b = read_all(path);
		if (!b)
			b = strdup(""); /* its parts entry still comes, with no thread */
		for (char *save = NULL, *l = strtok_r(b, "\n", &save); l && ncur < MAX_THREADS;
		     l = strtok_r(NULL, "\n", &save)) {
			unsigned long long ticks;
			int tid = atoi(l), cpu, node, busy = -1;

			if (thread_stat(g->pid[c], tid, &ticks, &cpu) < 0)
				continue;
			node = cpu < MAX_CPUS ? cpu_node[cpu] : -1;
			for (unsigned k = 0; k < g->nprev; k++)
				if (g->prev[k].tid == tid && dt > 0)
					busy = (int)(100.0 * (double)(ticks - g->prev[k].ticks) /
						     ((double)clk_tck * dt) + 0.5);
			cur[ncur].tid = tid;
			cur[ncur].ticks = ticks;
			ncur++;
			snprintf(thr + strlen(thr), sizeof(thr) - strlen(thr), "%s%d:%d",
				 thr[0] ? "," : "", node, busy);
			snprintf(tcpu + strlen(tcpu), sizeof(tcpu) - strlen(tcpu), "%s%d", tcpu[0] ? "," : "", cpu);
		}
		free(b);
		if (g->nctr > 1) {
			unsigned long long cb[MAX_NODES];

			numa_stat(g->ctr[c], cb);
			snprintf(parts + strlen(parts), sizeof(parts) - strlen(parts), "%s%u:", parts[0] ? ";" : "",
				 ncur - before);
			for (int n = 0; n < nr_nodes; n++)
				snprintf(parts + strlen(parts), sizeof(parts) - strlen(parts), "%s%llu", n ? "," : "",
					 cb[n] / 1024);
		}
	}
	memcpy(g->prev, cur, ncur * sizeof(cur[0]));
	g->nprev = ncur;
	g->prev_t = t;
	if (quiet)
		return;
	/* tcpu=: the CPU each thread of thr= last ran on (the analysis
	 * reads SMT siblings and caches from it against "H cores"). */
	emit("G t=%.2f g=%s mem=%s thr=%s cpus=%s mems=%s ccpus=%s cmems=%s prog=%s oom=%llu ready=%d%s%s%s tcpu=%s%s",
	     t, g->name, mem, thr[0] ? thr : "-", cpus[0] ? cpus : "-", mems[0] ? mems : "-",
	     ccpus[0] ? ccpus : "-", cmems[0] ? cmems : "-", prog[0] ? prog : "0",
	     memory_event(g->cgroup, "oom_kill"), g->state == 2, parts[0] ? " parts=" : "", parts, huge,
	     tcpu[0] ? tcpu : "-", stall);
}

static void sample_host(double t, pid_t placer)
{
	static const char *const keys[] = {
		"numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail", "oom_kill",
		"numa_hint_faults", "thp_migration_success", "thp_migration_split", NULL,
	};
	char line[1024] = "", path[128], buf[2048], free_s[256] = "";
	char *b = read_all("/proc/vmstat");

	for (unsigned i = 0; keys[i]; i++) {
		unsigned long long v = 0;

		for (char *p = b; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (strncmp(p, keys[i], strlen(keys[i])) == 0 && p[strlen(keys[i])] == ' ')
				v = strtoull(p + strlen(keys[i]) + 1, NULL, 10);
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s=%llu", keys[i], v);
	}
	free(b);
	emit("V t=%.2f%s", t, line);
	for (int n = 0; n < nr_nodes; n++) {
		char *p;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
		if (read_str(path, buf, sizeof(buf)) < 0)
			continue;
		p = strstr(buf, "MemFree:");
		snprintf(free_s + strlen(free_s), sizeof(free_s) - strlen(free_s), "%s%llu",
			 n ? "," : "", p ? strtoull(p + 8, NULL, 10) : 0ULL);
	}
	emit("F t=%.2f free=%s", t, free_s);
	if (placer > 0) {
		unsigned long long ticks[4] = { 0 };
		char *p;
		int field = 3;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)placer);
		if (read_str(path, buf, sizeof(buf)) == 0 && (p = strrchr(buf, ')'))) {
			for (char *save = NULL, *tk = strtok_r(p + 2, " ", &save); tk && field <= 17;
			     tk = strtok_r(NULL, " ", &save), field++)
				if (field >= 14 && field <= 17)
					ticks[field - 14] = strtoull(tk, NULL, 10);
			emit("P t=%.2f cpu_s=%.2f", t,
			     (double)(ticks[0] + ticks[1] + ticks[2] + ticks[3]) / (double)clk_tck);
		}
	}
}

/* ---- placers ----------------------------------------------------------- */

static void set_balancing(int on)
{
	must_write("/proc/sys/kernel/numa_balancing", on ? "1" : "0");
}

static pid_t spawn(char *const argv[], const char *log, bool timens)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (timens) {
			/* numad moves nothing until its CLOCK_MONOTONIC passes
			 * 300 s. Its children (it daemonizes by forking) land in
			 * a time namespace 400 s ahead: its start-up delay is
			 * already over when the scenario starts. */
			if (unshare(CLONE_NEWTIME) < 0 ||
			    write_str("/proc/self/timens_offsets", "monotonic 400 0") < 0 ||
			    write_str("/proc/self/timens_offsets", "boottime 400 0") < 0) {
				fprintf(stderr, "time namespace: %s\n", strerror(errno));
				_exit(126);
			}
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

#define DROPIN "/etc/numaorch/numaorchd.conf.d/50-testbed.conf"

static void put_dropin(const char *conf)
{
	int fd;

	mkdir("/etc/numaorch/numaorchd.conf.d", 0755);
	fd = open(DROPIN, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, conf, strlen(conf)) != (ssize_t)strlen(conf))
		die("writing the testbed's numaorchd.conf.d drop-in: %s", strerror(errno));
	close(fd);
}

/* LIST: SECTION.KEY=VALUE[,SECTION.KEY=VALUE...], each a line of its
 * section in the drop-in. Only [A-Za-z0-9_.-] in names and values: the
 * placer comes from the kernel's command line, and nothing in it may
 * start another section or key. */
static void write_dropin(const char *placer, const char *list)
{
	char conf[1024], item[256];
	size_t len = 0;

	conf[0] = '\0';
	while (*list) {
		size_t n = strcspn(list, ",");
		char *dot, *eq;

		if (n == 0 || n >= sizeof(item))
			die("placer \"%s\": empty or overlong setting", placer);
		memcpy(item, list, n);
		item[n] = '\0';
		list += n + (list[n] == ',');
		if (item[strspn(item, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-=")])
			die("placer \"%s\": \"%s\" may hold only letters, digits, _ . - and =", placer, item);
		dot = strchr(item, '.');
		eq = strchr(item, '=');
		if (!dot || !eq || dot > eq || dot == item || eq == dot + 1 || !eq[1] || strchr(eq + 1, '='))
			die("placer \"%s\": \"%s\" is not SECTION.KEY=VALUE", placer, item);
		*dot = *eq = '\0';
		len += (size_t)snprintf(conf + len, len < sizeof(conf) ? sizeof(conf) - len : 0, "[%s]\n%s = %s\n",
				       item, dot + 1, eq + 1);
		if (len >= sizeof(conf))
			die("placer \"%s\": too many settings", placer);
	}
	put_dropin(conf);
}

static pid_t start_placer(const char *placer)
{
	if (strcmp(placer, "none") == 0) {
		set_balancing(0);
		return 0;
	}
	if (strcmp(placer, "kernel") == 0) {
		set_balancing(1);
		return 0;
	}
	if (strcmp(placer, "numad") == 0) {
		char *argv[] = { "/usr/bin/numad", NULL };
		char buf[32];
		pid_t p;
		int st;

		set_balancing(0);
		mkdir("/var/log", 0755);
		mkdir("/var/run", 0755);
		p = spawn(argv, RUNDIR "/numad.stderr", true);
		/* numad forks its daemon and exits; the daemon writes its pid. */
		waitpid(p, &st, 0);
		for (int i = 0; i < 50; i++) {
			if (read_str("/var/run/numad.pid", buf, sizeof(buf)) == 0 && atoi(buf) > 0)
				return (pid_t)atoi(buf);
			usleep(100000);
		}
		die("numad did not start (exit status %d)", st);
	}
	/* numaorchd+kernel: the shipped agent beside the kernel's balancing
	 * (balancing 1), as operators first run it; numaorchd+kernel:SETTING
	 * sets [memory] kernel_balancing = SETTING through a drop-in.
	 * numaorchd[+kernel]:SECTION.KEY=VALUE[,...] sets those keys through
	 * the drop-in instead, so an A/B of one setting runs from the tree
	 * (write_dropin). */
	if (strcmp(placer, "numaorchd") == 0 || strncmp(placer, "numaorchd:", 10) == 0 ||
	    strncmp(placer, "numaorchd+kernel", 16) == 0) {
		char *argv[] = { "/bin/numaorchd", "--config", "/etc/numaorch/numaorchd.conf",
				 "--decision-log", RUNDIR "/decisions.jsonl", NULL };
		bool beside = placer[9] == '+';
		const char *arg = beside ? placer + 16 : placer + 9;

		if (*arg == ':' && strchr(arg, '='))
			write_dropin(placer, arg + 1);
		else if (beside && *arg == ':' && arg[1]) {
			char kbal[96];

			snprintf(kbal, sizeof(kbal), "memory.kernel_balancing=%.60s", arg + 1);
			write_dropin(placer, kbal);
		}
		else if (*arg)
			die("unknown placer \"%s\"", placer);
		set_balancing(beside ? 1 : 0);
		mkdir("/var/lib/numaorch", 0755);
		mkdir("/run/numaorch", 0755);
		return spawn(argv, RUNDIR "/placer.log", false);
	}
	die("unknown placer \"%s\" (none, kernel, numad, numaorchd, numaorchd[+kernel][:SECTION.KEY=VALUE,...], numaorchd+kernel:SETTING)", placer);
}

static void dump_file(const char *path, char tag, unsigned max_lines)
{
	char *b = read_all(path);
	unsigned n = 0, skip = 0;

	if (!b)
		return;
	for (char *p = b; *p; p++)
		n += *p == '\n';
	skip = n > max_lines ? n - max_lines : 0;
	if (skip)
		emit("%c ... %u earlier lines left out", tag, skip);
	for (char *save = NULL, *l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (skip) {
			skip--;
			continue;
		}
		emit("%c %s", tag, l);
	}
	free(b);
}

static void open_out(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
	struct termios tio;

	if (fd < 0) {
		fprintf(stderr, "numavm-run: cannot open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	/* A serial port would turn \n into \r\n and echo: make it raw. */
	if (isatty(fd) && tcgetattr(fd, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(fd, TCSANOW, &tio);
	}
	out = fdopen(fd, "w");
}

int main(int argc, char **argv)
{
	const char *placer;
	pid_t ppid;
	double t, next;
	unsigned k;
	int st;

	if (argc != 4) {
		fprintf(stderr, "usage: numavm-run SCENARIO PLACER OUT\n");
		return 2;
	}
	placer = argv[2];
	open_out(argv[3]);
	clk_tck = sysconf(_SC_CLK_TCK);
	signal(SIGPIPE, SIG_IGN);
	mkdir(RUNDIR, 0755);
	/* The init mounts v1's cpuset and memory hierarchies instead of
	 * cgroup2 when the scenario (or numavm.py run --cgroup v1) asks. */
	cg_v1 = access(CG "/cpuset/cpuset.cpus", F_OK) == 0;
	read_topology();
	parse_scenario(argv[1]);
	/* make check-numa runs a scenario longer than the benchmark does
	 * (its check_duration): the kernel command line says so. */
	if (getenv("NUMAVM_DURATION") && atof(getenv("NUMAVM_DURATION")) > 0)
		scn.duration = atof(getenv("NUMAVM_DURATION"));
	emit("H scenario=%s placer=%s nodes=%d duration=%.0f sample=%.1f pages=%s cgroup=%s", scn.name, placer,
	     nr_nodes, scn.duration, scn.sample, scn.pages, cg_v1 ? "v1" : "v2");
	for (int n = 0; n < nr_nodes; n++)
		emit("H node=%d cpus=%s", n, node_cpus[n]);
	emit_cores();
	for (unsigned i = 0; i < scn.nguests; i++) {
		struct guest *g = &scn.g[i];
		char hl[160] = "";

		if (g->hugetlb_mib)
			snprintf(hl, sizeof(hl), " hugetlb_mib=%u hugetlb_page_kib=2048", g->hugetlb_mib);
		/* device=N: the NVMe on node N, and the node the kernel gives it
		 * (what the analysis scores device locality against). On v2 its
		 * rules would be a BPF program nobody can read back: none are
		 * written, and the line says so. */
		if (g->device >= 0) {
			/* The controller is probed asynchronously at boot: give
			 * its namespace a few seconds to appear. */
			for (int w = 0; w < 100 && nvme_on_node(g->device, g->device_dev, sizeof(g->device_dev),
								 &g->device_node) < 0; w++)
				usleep(100000);
			if (nvme_on_node(g->device, g->device_dev, sizeof(g->device_dev), &g->device_node) < 0)
				die("guest %s: device=%d: no NVMe namespace on node %d (the scenario's nvme key)",
				    g->name, g->device, g->device);
			snprintf(hl + strlen(hl), sizeof(hl) - strlen(hl), " device=b:%s device_node=%d device_rules=%s",
				 g->device_dev, g->device_node, cg_v1 && v1_mounted("devices") ? "v1" : "none");
		}
		emit("H guest=%s cgroup=%s kind=%s threads=%u mib=%u touch=%s pages=%s cpus=%s mems=%s run_on=%s busy=%s start=%.0f stop=%.0f containers=%u ctr_cpuset=%s widen=%s%s",
		     g->name, g->cgroup, g->kind, g->threads, g->mib, g->touch[0] ? g->touch : "local",
		     g->pages, g->cpus, g->mems, g->run_on[0] ? g->run_on : "any", g->idle ? "no" : "yes",
		     g->start, g->stop, strcmp(g->ctr[0], g->cgroup) ? g->nctr : 0,
		     strcmp(g->ctr[0], g->cgroup) == 0 ? "-" : ctr_has_cpuset(g, 0) ? "own" : "inherit",
		     g->widen == 1 ? "all" : g->widen == 2 ? "mems" : "no", hl);
	}
	if (scn.hugepages[0])
		reserve_hugepages(scn.hugepages);

	/* No placer while the initial guests lay out their memory: the bad
	 * start must be the same for every placer. */
	set_balancing(0);
	t_zero = mono();
	for (unsigned i = 0; i < scn.nguests; i++)
		if (scn.g[i].start <= 0)
			start_guest(&scn.g[i]);
	for (;;) {
		bool all = true;

		poll_ready();
		for (unsigned i = 0; i < scn.nguests; i++)
			all = all && (scn.g[i].start > 0 || scn.g[i].state == 2);
		if (all)
			break;
		if (now_t() > 300)
			die("guests not ready after 300 s");
		usleep(50000);
	}
	emit("E t=%.2f what=setup_done", now_t());
	/* Their memory first-touched, the guests that ask are set free by
	 * their runtime (cpusets widened to every node), before t = 0 so
	 * that every placer starts from the same layout. */
	for (unsigned i = 0; i < scn.nguests; i++)
		if (scn.g[i].widen && scn.g[i].state == 2)
			widen_guest(&scn.g[i]);

	/* One quiet sample a second before t = 0, so the first real sample
	 * already knows how busy each thread is. */
	for (unsigned i = 0; i < scn.nguests; i++)
		if (scn.g[i].state == 2)
			sample_guest(&scn.g[i], now_t(), true);
	sleep(1);
	{
		double z = mono();
		struct timespec rt;

		for (unsigned i = 0; i < scn.nguests; i++)
			scn.g[i].prev_t -= z - t_zero;
		t_zero = z;
		for (unsigned i = 0; i < scn.nguests; i++)
			release_run_on(&scn.g[i]);
		placer_started = true;
		clock_gettime(CLOCK_REALTIME, &rt);
		ppid = start_placer(placer);
		/* numavm.py --balancing on: the kernel's balancing left on
		 * beside every placer, as on most hosts in the field. */
		if (getenv("NUMAVM_BALANCING") && strcmp(getenv("NUMAVM_BALANCING"), "on") == 0)
			set_balancing(1);
		{
			char bal[8] = "?";

			read_str("/proc/sys/kernel/numa_balancing", bal, sizeof(bal));
			emit("E t=0.00 what=placer placer=%s pid=%d real=%.3f balancing=%s", placer, (int)ppid,
			     (double)rt.tv_sec + (double)rt.tv_nsec / 1e9, strcmp(bal, "0") ? "on" : "off");
		}
	}

	for (k = 0;; k++) {
		t = now_t();
		poll_ready();
		if (ppid > 0 && strcmp(placer, "numad") != 0 && waitpid(ppid, &st, WNOHANG) == ppid) {
			dump_file(RUNDIR "/placer.log", 'L', 400);
			die("the placer exited early (status %d)", st);
		}
		for (unsigned i = 0; i < scn.nguests; i++) {
			struct guest *g = &scn.g[i];

			if (g->state == 0 && g->start > 0 && t >= g->start)
				start_guest(g);
			if (g->state == 2 && g->stop >= 0 && t >= g->stop)
				stop_guest(g, true);
		}
		/* A guest started during the run is sampled from its start,
		 * while its workload first-touches its memory: where those
		 * pages land is what it feels first, and what a placer that
		 * acts before the touch changes (its samples say ready=0). */
		for (unsigned i = 0; i < scn.nguests; i++)
			if (scn.g[i].state == 2 || scn.g[i].state == 1)
				sample_guest(&scn.g[i], t, false);
		sample_host(t, ppid);
		if (t >= scn.duration)
			break;
		next = (k + 1) * scn.sample;
		while ((t = now_t()) < next) {
			poll_ready();
			usleep(t + 0.1 < next ? 100000 : (useconds_t)((next - t) * 1e6));
		}
	}

	if (ppid > 0) {
		kill(ppid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(ppid, &st, WNOHANG) == 0 && kill(ppid, 0) == 0; i++)
			usleep(100000);
		emit("E t=%.2f what=placer_stopped", now_t());
	}
	for (unsigned i = 0; i < scn.nguests; i++)
		stop_guest(&scn.g[i], false);
	dump_file(RUNDIR "/decisions.jsonl", 'D', 5000);
	dump_file(RUNDIR "/placer.log", 'L', 400);
	dump_file("/var/log/numad.log", 'L', 400);
	dump_file(RUNDIR "/numad.stderr", 'L', 50);
	emit("END rc=0");
	return 0;
}
