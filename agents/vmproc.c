#include "vmproc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/procstat.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/numamaps.h"
#include "../orchestrator/model/numastat.h"

#define CMDLINE_MAX (256u << 10)
#define TASKS_MAX (4u << 20)
#define NUMA_MAPS_MAX (64u << 20)

void vmproc_threads_free(struct vmproc_threads *t)
{
	if (!t)
		return;
	free(t->vcpu_tids);
	free(t->emulator_tids);
	free(t->iothread_ids);
	free(t->iothread_tids);
	memset(t, 0, sizeof(*t));
}

static bool parse_uint(const char *s, unsigned *out)
{
	uint64_t v;

	if (!*s || parse_u64(s, &v) < 0 || v > 1000000)
		return false;
	*out = (unsigned)v;
	return true;
}

char vmproc_classify_comm(const char *comm, unsigned *num)
{
	char buf[32];
	const char *slash;

	/* "CPU 3/KVM", "CPU 0/TCG" (QEMU's qemu_thread_create names). */
	if (strncmp(comm, "CPU ", 4) == 0 && (slash = strchr(comm + 4, '/')) &&
	    (size_t)(slash - comm - 4) < sizeof(buf)) {
		memcpy(buf, comm + 4, (size_t)(slash - comm - 4));
		buf[slash - comm - 4] = '\0';
		if (parse_uint(buf, num))
			return 'v';
	}
	/* libvirt names its iothread objects "iothread<id>"; QEMU names the
	 * thread "IO <object id>". "IO mon_iothread" is QEMU's own. */
	if (strncmp(comm, "IO iothread", 11) == 0 && parse_uint(comm + 11, num))
		return 'i';
	return 'e';
}

static int read_proc(const struct host_paths *hp, char *path, size_t psz, size_t max, char **buf,
		     size_t *len, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int read_proc(const struct host_paths *hp, char *path, size_t psz, size_t max, char **buf,
		     size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(path, psz, "%s/", hp->procfs);

	va_start(ap, fmt);
	if (n < 0 || (size_t)n >= psz || vsnprintf(path + n, psz - (size_t)n, fmt, ap) >= (int)(psz - (size_t)n)) {
		va_end(ap);
		return -ENAMETOOLONG;
	}
	va_end(ap);
	return fs_read_file(path, max, buf, len);
}

static int read_stat(const struct host_paths *hp, pid_t pid, pid_t tid, uint64_t *ticks,
		     uint64_t *start)
{
	char path[PATH_MAX], *buf = NULL;
	const char *f[20];
	unsigned long long ut, st, stt;
	size_t len;
	int r;

	if (tid)
		r = read_proc(hp, path, sizeof(path), 4096, &buf, &len, "%d/task/%d/stat", (int)pid, (int)tid);
	else
		r = read_proc(hp, path, sizeof(path), 4096, &buf, &len, "%d/stat", (int)pid);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	r = proc_stat_fields(buf, f, 20);
	if (r == 0 && (sscanf(f[11], "%llu", &ut) != 1 || sscanf(f[12], "%llu", &st) != 1 ||
		       sscanf(f[19], "%llu", &stt) != 1))
		r = -EINVAL;
	if (r == 0) {
		if (ticks)
			*ticks = ut + st;
		if (start)
			*start = stt;
	}
	free(buf);
	return r;
}

static uint64_t ticks_to_ns(uint64_t t)
{
	long hz = sysconf(_SC_CLK_TCK);

	return t * (1000000000ULL / (uint64_t)(hz > 0 ? hz : 100));
}

int vmproc_start_time(const struct host_paths *hp, pid_t pid, uint64_t *start)
{
	return read_stat(hp, pid, 0, NULL, start);
}

int vmproc_process_cpu_ns(const struct host_paths *hp, pid_t pid, uint64_t *ns)
{
	uint64_t t;
	int r = read_stat(hp, pid, 0, &t, NULL);

	if (r == 0)
		*ns = ticks_to_ns(t);
	return r;
}

int vmproc_thread_cpu_ns(const struct host_paths *hp, pid_t pid, pid_t tid, uint64_t *ns)
{
	char path[PATH_MAX], *buf = NULL;
	unsigned long long v;
	size_t len;
	uint64_t t;
	int r;

	r = read_proc(hp, path, sizeof(path), 256, &buf, &len, "%d/task/%d/schedstat", (int)pid, (int)tid);
	if (r == 0) {
		r = sscanf(buf, "%llu", &v) == 1 ? 0 : -EINVAL;
		free(buf);
		if (r == 0)
			*ns = v;
		return r;
	}
	if (r != -ENOENT)
		return r;
	/* No schedstat (a kernel without CONFIG_SCHED_INFO) or the thread
	 * is gone: stat tells which, in clock ticks. */
	r = read_stat(hp, pid, tid, &t, NULL);
	if (r == 0)
		*ns = ticks_to_ns(t);
	return r;
}

double vmproc_thread_rate(uint64_t cur_ns, uint64_t prev_ns, int64_t dt_ns)
{
	double r;

	if (dt_ns <= 0 || cur_ns < prev_ns)
		return NAN;
	r = (double)(cur_ns - prev_ns) / (double)dt_ns;
	/* A thread runs on one CPU at a time. Its counter misses a running
	 * thread's time since its last tick, unevenly at the two ends (far
	 * more under TCG, where ticks come late): more than 1 is that error
	 * (cgthr.c bounds a container the same way). */
	return r > 1.0 ? 1.0 : r;
}

double *vmproc_vcpu_nodes(const struct host_paths *hp, const struct snapshot *snap, const struct snap_vm *vm,
			  double cpu_use)
{
	double *dn;

	if (isnan(cpu_use) || cpu_use <= 0.0 || !snap->nr_nodes)
		return NULL;
	dn = xcalloc(snap->nr_nodes, sizeof(double));
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		char path[PATH_MAX], *buf = NULL;
		uint64_t ticks;
		size_t len;
		int cpu, k;

		if (!vm->vcpu_tids[i] || isnan(vm->vcpu_use[i]) || vm->vcpu_use[i] <= 0.0 ||
		    read_proc(hp, path, sizeof(path), 4096, &buf, &len, "%d/task/%d/stat", (int)vm->qemu_pid,
			      (int)vm->vcpu_tids[i]) < 0)
			continue;
		if (proc_stat_ticks_cpu(buf, &ticks, &cpu) == 0 && (k = snap_cpu_node_index(snap, cpu)) >= 0)
			dn[k] += vm->vcpu_use[i];
		free(buf);
	}
	return snap_node_use(snap, dn, cpu_use);
}

int vmproc_thread_affinity(const struct host_paths *hp, pid_t pid, pid_t tid, cpumask_t *cpus,
			   nodemask_t *mems)
{
	char path[PATH_MAX], *buf = NULL;
	bool have_c = false, have_m = false;
	size_t len;
	int r;

	r = read_proc(hp, path, sizeof(path), 64 * 1024, &buf, &len, "%d/task/%d/status", (int)pid, (int)tid);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *v;

		if (strncmp(l, "Cpus_allowed_list:", 18) == 0) {
			for (v = l + 18; *v == ' ' || *v == '\t'; v++)
				;
			mask_zero(cpus);
			have_c = mask_parse(v, cpus) == 0;
		} else if (strncmp(l, "Mems_allowed_list:", 18) == 0) {
			for (v = l + 18; *v == ' ' || *v == '\t'; v++)
				;
			mask_zero(mems);
			have_m = mask_parse(v, mems) == 0;
		}
	}
	free(buf);
	return have_c && have_m ? 0 : -EINVAL;
}

int vmproc_vm_affinity(const struct host_paths *hp, const struct snap_vm *vm, cpumask_t *cpus,
		       nodemask_t *mems)
{
	bool any = false;

	mask_zero(cpus);
	if (mems)
		mask_zero(mems);
	for (unsigned k = 0; k < 3; k++) {
		unsigned n = k == 0 ? vm->nr_vcpus : k == 1 ? vm->nr_emulator_tids : vm->nr_iothreads;
		const pid_t *tids = k == 0 ? vm->vcpu_tids : k == 1 ? vm->emulator_tids : vm->iothread_tids;

		for (unsigned i = 0; i < n; i++) {
			cpumask_t c;
			nodemask_t m;

			/* tid 0 marks a vCPU not found; a thread that fails to
			 * read has exited since the threads were listed. Its
			 * masks may be half-written, so only a full read counts. */
			if (!tids[i] || vmproc_thread_affinity(hp, vm->qemu_pid, tids[i], &c, &m) < 0)
				continue;
			mask_or(cpus, cpus, &c);
			if (mems)
				mask_or(mems, mems, &m);
			any = true;
		}
	}
	return any ? 0 : -ESRCH;
}

/* cmdline holds NUL-separated arguments. */
static bool cmdline_has_uuid(const char *buf, size_t len, const char *uuid)
{
	bool prev_uuid = false, have_name = false, match = false;

	for (size_t off = 0; off < len;) {
		const char *a = buf + off;
		size_t n = strnlen(a, len - off);

		if (prev_uuid && strcasecmp(a, uuid) == 0)
			match = true;
		prev_uuid = strcmp(a, "-uuid") == 0;
		if (strcmp(a, "-name") == 0)
			have_name = true;
		off += n + 1;
	}
	return match && have_name;
}

int vmproc_find_qemu(const struct host_paths *hp, const char *uuid, pid_t *pid, uint64_t *start)
{
	DIR *d = opendir(hp->procfs);
	pid_t found = 0;

	if (!d)
		return -errno;
	for (struct dirent *de; !found && (de = readdir(d));) {
		char path[PATH_MAX], *buf = NULL;
		unsigned p;
		size_t len;

		if (!isdigit((unsigned char)de->d_name[0]) || !parse_uint(de->d_name, &p))
			continue;
		if (read_proc(hp, path, sizeof(path), CMDLINE_MAX, &buf, &len, "%s/cmdline", de->d_name) < 0)
			continue;
		if (cmdline_has_uuid(buf, len, uuid))
			found = (pid_t)p;
		free(buf);
	}
	closedir(d);
	if (!found)
		return -ESRCH;
	if (start) {
		int r = vmproc_start_time(hp, found, start);

		if (r < 0)
			return r;
	}
	*pid = found;
	return 0;
}

int vmproc_cgroup_of(const struct host_paths *hp, pid_t pid, const char *ctrl, char **out)
{
	char path[PATH_MAX], *buf = NULL, *v2 = NULL, *hit = NULL;
	size_t len;
	int r;

	r = read_proc(hp, path, sizeof(path), 64 * 1024, &buf, &len, "%d/cgroup", (int)pid);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && !hit; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		if (l[0] == '0' && c1 == l + 1 && c2 == c1 + 1) {
			v2 = c2 + 1;
			continue;
		}
		if (!ctrl)
			continue;
		/* "4:cpu,cpuacct:/x": controllers are comma-separated. */
		for (char *s2 = NULL, *t = strtok_r(c1 + 1, ",", &s2); t; t = strtok_r(NULL, ",", &s2))
			if (strcmp(t, ctrl) == 0)
				hit = c2 + 1;
	}
	if (!hit)
		hit = v2;
	r = hit && hit[0] == '/' ? 0 : -ENOENT;
	if (r == 0)
		*out = xstrdup(hit);
	free(buf);
	return r;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);

	return n >= m && strcmp(s + n - m, sfx) == 0;
}

void vmproc_domain_cgroup(const char *proc_cgroup, char **threads_base, char **domain)
{
	char *d = xstrdup(proc_cgroup);

	*threads_base = NULL;
	if (ends_with(d, "/emulator")) {
		d[strlen(d) - strlen("/emulator")] = '\0';
		if (!*d)
			strcpy(d, "/");
		*threads_base = xstrdup(d);
	}
	if (ends_with(d, "/libvirt") && strlen(d) > strlen("/libvirt"))
		d[strlen(d) - strlen("/libvirt")] = '\0';
	*domain = d;
}

static void push_pid(pid_t **v, unsigned *n, pid_t p)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(pid_t));
	(*v)[(*n)++] = p;
}

static void add_iothread(struct vmproc_threads *t, unsigned id, pid_t tid)
{
	for (unsigned i = 0; i < t->nr_iothreads; i++)
		if (t->iothread_ids[i] == id)
			return;
	t->iothread_ids = xrealloc(t->iothread_ids, (t->nr_iothreads + 1) * sizeof(unsigned));
	t->iothread_tids = xrealloc(t->iothread_tids, (t->nr_iothreads + 1) * sizeof(pid_t));
	t->iothread_ids[t->nr_iothreads] = id;
	t->iothread_tids[t->nr_iothreads] = tid;
	t->nr_iothreads++;
}

/* Thread ids of the process, sorted as the directory lists them. */
static int list_tasks(const struct host_paths *hp, pid_t pid, pid_t **out, unsigned *n)
{
	char path[PATH_MAX];
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/%d/task", hp->procfs, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	*out = NULL;
	*n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		unsigned t;

		if (isdigit((unsigned char)de->d_name[0]) && parse_uint(de->d_name, &t))
			push_pid(out, n, (pid_t)t);
	}
	closedir(d);
	return 0;
}

static bool in_list(const pid_t *v, unsigned n, pid_t p)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

/* The first thread id in a tasks file that belongs to the process. */
static int read_tids(const struct cg_hier *h, const char *base, const char *sub, const pid_t *tasks,
		     unsigned ntasks, pid_t **out, unsigned *n)
{
	char rel[PATH_MAX], path[PATH_MAX], *buf = NULL;
	const char *file = h->v2[CGC_CPUSET] ? "cgroup.threads" : "tasks";
	size_t len;
	int r;

	if (snprintf(rel, sizeof(rel), "%s/%s", strcmp(base, "/") ? base : "", sub) >= (int)sizeof(rel))
		return -ENAMETOOLONG;
	r = cgh_path(h, CGC_CPUSET, rel, file, path, sizeof(path));
	if (r < 0)
		return r;
	r = fs_read_file(path, TASKS_MAX, &buf, &len);
	if (r < 0)
		return r;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned t;

		if (parse_uint(l, &t) && in_list(tasks, ntasks, (pid_t)t))
			push_pid(out, n, (pid_t)t);
	}
	free(buf);
	return 0;
}

static int threads_from_cgroup(const struct cg_hier *h, const char *base, const pid_t *tasks,
			       unsigned ntasks, struct vmproc_threads *t)
{
	char dir[PATH_MAX];
	DIR *d;
	int r;

	if (!cgh_has(h, CGC_CPUSET))
		return -ENODEV;
	r = cgh_path(h, CGC_CPUSET, base, NULL, dir, sizeof(dir));
	if (r < 0)
		return r;
	d = opendir(dir);
	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));) {
		pid_t *tids = NULL;
		unsigned n = 0, num;

		if (de->d_name[0] == '.')
			continue;
		if (strncmp(de->d_name, "vcpu", 4) == 0 && parse_uint(de->d_name + 4, &num)) {
			if (read_tids(h, base, de->d_name, tasks, ntasks, &tids, &n) == 0 && n &&
			    num < t->nr_vcpus)
				t->vcpu_tids[num] = tids[0];
		} else if (strncmp(de->d_name, "iothread", 8) == 0 && parse_uint(de->d_name + 8, &num)) {
			if (read_tids(h, base, de->d_name, tasks, ntasks, &tids, &n) == 0 && n)
				add_iothread(t, num, tids[0]);
		} else if (strcmp(de->d_name, "emulator") == 0) {
			if (read_tids(h, base, de->d_name, tasks, ntasks, &tids, &n) == 0) {
				free(t->emulator_tids);
				t->emulator_tids = tids;
				t->nr_emulator = n;
				tids = NULL;
			}
		}
		free(tids);
	}
	closedir(d);
	return 0;
}

static void threads_from_comm(const struct host_paths *hp, pid_t pid, const pid_t *tasks,
			      unsigned ntasks, struct vmproc_threads *t)
{
	for (unsigned i = 0; i < ntasks; i++) {
		char path[PATH_MAX], *buf = NULL;
		size_t len;
		unsigned num;

		if (read_proc(hp, path, sizeof(path), 256, &buf, &len, "%d/task/%d/comm", (int)pid,
			      (int)tasks[i]) < 0)
			continue; /* exited meanwhile */
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		switch (vmproc_classify_comm(buf, &num)) {
		case 'v':
			if (num < t->nr_vcpus)
				t->vcpu_tids[num] = tasks[i];
			break;
		case 'i':
			add_iothread(t, num, tasks[i]);
			break;
		default:
			push_pid(&t->emulator_tids, &t->nr_emulator, tasks[i]);
		}
		free(buf);
	}
}

int vmproc_threads(const struct host_paths *hp, const struct cg_hier *h, pid_t pid,
		   const char *threads_base, unsigned nr_vcpus, struct vmproc_threads *out)
{
	struct vmproc_threads t = { 0 };
	pid_t *tasks = NULL;
	unsigned ntasks = 0;
	bool any = false;
	int r;

	r = list_tasks(hp, pid, &tasks, &ntasks);
	if (r < 0)
		return r;
	t.nr_vcpus = nr_vcpus;
	t.vcpu_tids = xcalloc(nr_vcpus ? nr_vcpus : 1, sizeof(pid_t));
	t.nr_threads = ntasks;
	if (threads_base && threads_from_cgroup(h, threads_base, tasks, ntasks, &t) == 0) {
		for (unsigned i = 0; i < nr_vcpus; i++)
			any = any || t.vcpu_tids[i];
		t.from_cgroup = any;
	}
	if (!t.from_cgroup) {
		vmproc_threads_free(&t);
		t.nr_vcpus = nr_vcpus;
		t.vcpu_tids = xcalloc(nr_vcpus ? nr_vcpus : 1, sizeof(pid_t));
		t.nr_threads = ntasks;
		threads_from_comm(hp, pid, tasks, ntasks, &t);
	}
	free(tasks);
	*out = t;
	return 0;
}

int vmproc_numa_stat(const struct cg_hier *h, const char *rel, const struct snapshot *snap,
		     uint64_t *mem)
{
	bool v2 = h->v2[CGC_MEMORY];
	char path[PATH_MAX], *buf = NULL;
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	int r;

	if (!cgh_has(h, CGC_MEMORY))
		return -ENOENT;
	r = cgh_path(h, CGC_MEMORY, rel, "memory.numa_stat", path, sizeof(path));
	if (r == 0)
		r = fs_read_file(path, 1 << 20, &buf, &len);
	if (r < 0)
		return r == -ENODEV ? -ENOENT : r;
	/* numastat_parse zeroes MEM first and leaves it zero on failure. */
	r = numastat_parse(buf, v2, page, snap, mem, NULL);
	free(buf);
	return r;
}

int vmproc_numa_maps(const struct host_paths *hp, pid_t pid, const struct snapshot *snap,
		     uint64_t *mem)
{
	char path[PATH_MAX], *buf = NULL;
	uint64_t *by_id;
	size_t len;
	int r;

	r = read_proc(hp, path, sizeof(path), NUMA_MAPS_MAX, &buf, &len, "%d/numa_maps", (int)pid);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	/* Nothing below fails, so MEM is only touched once the file is read:
	 * on an error it keeps what it held. */
	by_id = xcalloc(MASK_MAX_NODES, sizeof(*by_id));
	numamaps_parse(buf, by_id, MASK_MAX_NODES);
	memset(mem, 0, snap->nr_nodes * sizeof(uint64_t));
	for (unsigned i = 0; i < snap->nr_nodes; i++)
		if (snap->nodes[i].id >= 0 && snap->nodes[i].id < MASK_MAX_NODES)
			mem[i] = by_id[snap->nodes[i].id];
	free(by_id);
	free(buf);
	return 0;
}
