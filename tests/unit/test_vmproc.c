/* agents/vmproc.c on small procfs/cgroupfs trees written to a temp
 * directory, shaped as libvirt 9 leaves them: a QEMU process with two
 * vCPU threads, an I/O thread and emulator threads, in libvirt's thread
 * cgroups (v1: /machine/qemu-1-vm1.libvirt-qemu/{vcpuN,iothreadN,emulator};
 * v2 under systemd: .../machine-qemu\x2d1\x2dvm1.scope/libvirt/...). */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/vmproc.h"
#include "orchestrator/base/xalloc.h"

#define UUID "6112aa7d-0765-49e7-a90f-029606270916"
#define V1DOM "/machine/qemu-1-vm1.libvirt-qemu"
#define V2DOM "/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope"

struct fx {
	char *root;
	struct host_paths hp;
	struct cg_hier h;
	struct snapshot *snap;
};

static void write_bin(const char *root, const char *rel, const char *data, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	tu_write(root, rel, "");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void task(const char *root, int tid, const char *comm, const char *cpus, unsigned long long ns)
{
	char rel[128], text[256];

	snprintf(rel, sizeof(rel), "proc/100/task/%d/comm", tid);
	snprintf(text, sizeof(text), "%s\n", comm);
	tu_write(root, rel, text);
	snprintf(rel, sizeof(rel), "proc/100/task/%d/status", tid);
	snprintf(text, sizeof(text), "Name:\t%s\nCpus_allowed:\t3\nCpus_allowed_list:\t%s\n"
		 "Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t1\n", comm, cpus);
	tu_write(root, rel, text);
	snprintf(rel, sizeof(rel), "proc/100/task/%d/schedstat", tid);
	snprintf(text, sizeof(text), "%llu 55 7\n", ns);
	tu_write(root, rel, text);
}

static void build_proc(const char *root, bool v2)
{
	static const char cmd[] = "/usr/bin/qemu-system-x86_64\0-name\0guest=vm1,debug-threads=on\0-S\0"
				  "-uuid\0" UUID "\0-smp\0" "2";
	static const char other[] = "/usr/bin/virsh\0-c\0qemu:///system\0start\0vm1\0-uuid\0" UUID "\0";

	write_bin(root, "proc/100/cmdline", cmd, sizeof(cmd));
	write_bin(root, "proc/99/cmdline", other, sizeof(other)); /* has no -name */
	tu_write(root, "proc/1/cmdline", "init");
	/* utime 150 stime 50 (ticks), starttime 4242 */
	tu_write(root, "proc/100/stat",
		 "100 (qemu-system-x86) S 1 100 100 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 5 0 4242 1 2\n");
	if (v2)
		tu_write(root, "proc/100/cgroup", "0::" V2DOM "/libvirt/emulator\n");
	else
		tu_write(root, "proc/100/cgroup",
			 "9:name=systemd:/\n4:memory:" V1DOM "\n3:cpuset:" V1DOM "/emulator\n"
			 "1:cpu,cpuacct:" V1DOM "/emulator\n0::" V1DOM "/emulator\n");
	task(root, 100, "qemu-system-x86", "0-3", 1000);
	task(root, 101, "qemu-system-x86", "0-3", 1000);
	task(root, 102, "IO mon_iothread", "0-3", 1000);
	task(root, 103, "CPU 0/KVM", "1", 5000000000ULL);
	task(root, 104, "CPU 1/KVM", "2-3", 7);
	task(root, 105, "IO iothread1", "0", 9);
}

static void build_cg(const char *root, bool v2)
{
	if (v2) {
		tu_write(root, "cg/cgroup.controllers", "cpuset cpu io memory pids\n");
		tu_write(root, "cg" V2DOM "/libvirt/vcpu0/cgroup.threads", "103\n");
		tu_write(root, "cg" V2DOM "/libvirt/vcpu1/cgroup.threads", "104\n");
		tu_write(root, "cg" V2DOM "/libvirt/iothread1/cgroup.threads", "105\n");
		tu_write(root, "cg" V2DOM "/libvirt/emulator/cgroup.threads", "100\n101\n102\n");
		tu_write(root, "cg" V2DOM "/memory.numa_stat",
			 "anon N0=1048576 N1=2097152\nfile N0=4096 N1=0\nkernel_stack N0=16384 N1=0\n");
	} else {
		tu_write(root, "cg/cpuset/cpuset.cpus", "0-3\n");
		tu_write(root, "cg/cpuset" V1DOM "/vcpu0/tasks", "103\n");
		tu_write(root, "cg/cpuset" V1DOM "/vcpu1/tasks", "104\n");
		tu_write(root, "cg/cpuset" V1DOM "/iothread1/tasks", "105\n");
		tu_write(root, "cg/cpuset" V1DOM "/emulator/tasks", "100\n101\n102\n");
		tu_write(root, "cg/memory/memory.numa_stat", "total=1 N0=1\n");
		tu_write(root, "cg/memory" V1DOM "/memory.numa_stat",
			 "total=10 N0=10 N1=0\nfile=0 N0=0 N1=0\nanon=10 N0=10 N1=0\n"
			 "hierarchical_total=300 N0=100 N1=200\nhierarchical_file=0 N0=0 N1=0\n");
	}
}

static struct fx *fx_new(bool v2)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	struct snap_node nodes[2] = { { .id = 0, .nr_cpus = 2, .mem_total = 1ULL << 30 },
				      { .id = 1, .nr_cpus = 2, .mem_total = 1ULL << 30 } };
	char cg[PATH_MAX];

	f->root = tu_mkdtemp();
	build_proc(f->root, v2);
	build_cg(f->root, v2);
	assert_int_equal(host_paths_from_root(&f->hp, f->root), 0);
	snprintf(f->hp.procfs, sizeof(f->hp.procfs), "%s/proc", f->root);
	snprintf(cg, sizeof(cg), "%s/cg", f->root);
	assert_int_equal(cgh_detect(cg, &f->h), 0);
	f->snap = snap_new();
	snap_set_nodes(f->snap, nodes, 2, NULL);
	return f;
}

static void fx_free(struct fx *f)
{
	snap_unref(f->snap);
	tu_rm_rf(f->root);
	free(f->root);
	free(f);
}

static void test_classify_comm(void **state)
{
	static const struct { const char *comm; char kind; unsigned num; } t[] = {
		{ "CPU 0/KVM", 'v', 0 }, { "CPU 17/TCG", 'v', 17 }, { "CPU 3/HVF", 'v', 3 },
		{ "IO iothread1", 'i', 1 }, { "IO iothread42", 'i', 42 },
		{ "IO mon_iothread", 'e', 0 }, { "qemu-system-x86", 'e', 0 }, { "CPU x/KVM", 'e', 0 },
		{ "CPU 1", 'e', 0 }, { "call_rcu", 'e', 0 }, { "worker", 'e', 0 }, { "IO iothread", 'e', 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unsigned num = 0;

		assert_int_equal(vmproc_classify_comm(t[i].comm, &num), t[i].kind);
		if (t[i].kind != 'e')
			assert_int_equal(num, t[i].num);
	}
}

static void test_domain_cgroup(void **state)
{
	static const struct { const char *in, *base, *dom; } t[] = {
		{ V1DOM "/emulator", V1DOM, V1DOM },
		{ V2DOM "/libvirt/emulator", V2DOM "/libvirt", V2DOM },
		{ V1DOM, NULL, V1DOM },
		{ "/", NULL, "/" },
		{ "/emulator", "/", "/" },
		{ "/libvirt", NULL, "/libvirt" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *base, *dom;

		vmproc_domain_cgroup(t[i].in, &base, &dom);
		if (t[i].base)
			assert_string_equal(base, t[i].base);
		else
			assert_null(base);
		assert_string_equal(dom, t[i].dom);
		free(base);
		free(dom);
	}
}

static void check_threads(const struct vmproc_threads *t)
{
	assert_int_equal(t->nr_vcpus, 2);
	assert_int_equal(t->vcpu_tids[0], 103);
	assert_int_equal(t->vcpu_tids[1], 104);
	assert_int_equal(t->nr_iothreads, 1);
	assert_int_equal(t->iothread_ids[0], 1);
	assert_int_equal(t->iothread_tids[0], 105);
	assert_int_equal(t->nr_emulator, 3);
	assert_int_equal(t->nr_threads, 6);
}

static void test_v1_process(void **state)
{
	struct fx *f = fx_new(false);
	struct vmproc_threads t;
	uint64_t start = 0, ns = 0, mem[2];
	char *cg = NULL, *base, *dom;
	cpumask_t cpus;
	nodemask_t mems;
	char buf[32];
	pid_t pid = 0;

	(void)state;
	assert_int_equal(vmproc_find_qemu(&f->hp, UUID, &pid, &start), 0);
	assert_int_equal(pid, 100);
	assert_int_equal(start, 4242);
	assert_int_equal(vmproc_find_qemu(&f->hp, "00000000-0000-0000-0000-000000000000", &pid, NULL), -ESRCH);

	assert_int_equal(vmproc_cgroup_of(&f->hp, 100, "cpuset", &cg), 0);
	assert_string_equal(cg, V1DOM "/emulator");
	vmproc_domain_cgroup(cg, &base, &dom);
	free(cg);
	assert_int_equal(vmproc_cgroup_of(&f->hp, 100, "cpuacct", &cg), 0); /* "cpu,cpuacct" */
	assert_string_equal(cg, V1DOM "/emulator");
	free(cg);
	assert_int_equal(vmproc_cgroup_of(&f->hp, 100, "memory", &cg), 0);
	assert_string_equal(cg, V1DOM);
	free(cg);

	/* from libvirt's thread cgroups */
	assert_int_equal(vmproc_threads(&f->hp, &f->h, 100, base, 2, &t), 0);
	assert_true(t.from_cgroup);
	check_threads(&t);
	vmproc_threads_free(&t);
	/* from thread names when there are no thread cgroups */
	assert_int_equal(vmproc_threads(&f->hp, &f->h, 100, NULL, 2, &t), 0);
	assert_false(t.from_cgroup);
	check_threads(&t);
	vmproc_threads_free(&t);

	assert_int_equal(vmproc_thread_cpu_ns(&f->hp, 100, 103, &ns), 0);
	assert_int_equal(ns, 5000000000ULL);
	assert_int_equal(vmproc_process_cpu_ns(&f->hp, 100, &ns), 0);
	assert_int_equal(ns, 200ULL * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK)));
	assert_int_equal(vmproc_thread_affinity(&f->hp, 100, 104, &cpus, &mems), 0);
	mask_format(&cpus, buf, sizeof(buf));
	assert_string_equal(buf, "2-3");
	assert_int_equal(vmproc_thread_affinity(&f->hp, 100, 999, &cpus, &mems), -ESRCH);

	/* hierarchical_total, in pages */
	assert_int_equal(vmproc_numa_stat(&f->h, dom, f->snap, mem), 0);
	assert_int_equal(mem[0], 100ULL * (uint64_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(mem[1], 200ULL * (uint64_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(vmproc_numa_stat(&f->h, "/nope", f->snap, mem), -ENOENT);
	free(base);
	free(dom);
	fx_free(f);
}

static void test_v2_process(void **state)
{
	struct fx *f = fx_new(true);
	struct vmproc_threads t;
	uint64_t mem[2];
	char *cg = NULL, *base, *dom;

	(void)state;
	assert_int_equal(vmproc_cgroup_of(&f->hp, 100, NULL, &cg), 0);
	assert_string_equal(cg, V2DOM "/libvirt/emulator");
	vmproc_domain_cgroup(cg, &base, &dom);
	assert_string_equal(dom, V2DOM);
	free(cg);
	assert_int_equal(vmproc_threads(&f->hp, &f->h, 100, base, 2, &t), 0);
	assert_true(t.from_cgroup);
	check_threads(&t);
	vmproc_threads_free(&t);
	/* anon + file, bytes */
	assert_int_equal(vmproc_numa_stat(&f->h, dom, f->snap, mem), 0);
	assert_int_equal(mem[0], 1048576 + 4096);
	assert_int_equal(mem[1], 2097152);
	free(base);
	free(dom);
	fx_free(f);
}

static void test_numa_maps(void **state)
{
	struct fx *f = fx_new(false);
	uint64_t mem[2];

	(void)state;
	tu_write(f->root, "proc/100/numa_maps",
		 "55d0c0000000 default file=/usr/bin/qemu-system-x86_64 mapped=10 N0=10 kernelpagesize_kB=4\n"
		 "7f0000000000 default anon=512 dirty=512 N0=256 N1=256 kernelpagesize_kB=4\n"
		 "7f1000000000 bind:1 anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n"
		 "7f2000000000 default N7=5 kernelpagesize_kB=4\n"
		 "7fff00000000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4\n");
	assert_int_equal(vmproc_numa_maps(&f->hp, 100, f->snap, mem), 0);
	assert_int_equal(mem[0], (10 + 256 + 3) * 4096ULL);
	assert_int_equal(mem[1], 256 * 4096ULL + 2 * (2048ULL << 10));
	/* an error leaves MEM as it was */
	mem[0] = mem[1] = 7;
	assert_int_equal(vmproc_numa_maps(&f->hp, 4711, f->snap, mem), -ESRCH);
	assert_int_equal(mem[0], 7);
	assert_int_equal(mem[1], 7);
	/* memory.numa_stat: missing leaves MEM alone, malformed zeroes it */
	assert_int_equal(vmproc_numa_stat(&f->h, "/nope", f->snap, mem), -ENOENT);
	assert_int_equal(mem[0], 7);
	tu_write(f->root, "cg/memory/bad/memory.numa_stat", "total=\nfile=0 N0=0\n");
	assert_int_equal(vmproc_numa_stat(&f->h, "/bad", f->snap, mem), -EINVAL);
	assert_int_equal(mem[0], 0);
	assert_int_equal(mem[1], 0);
	fx_free(f);
}

/* The union over vCPU (0 = not found, skipped), emulator and I/O threads;
 * a thread that has exited (999) does not count. */
static void test_vm_affinity(void **state)
{
	struct fx *f = fx_new(false);
	pid_t vcpus[3] = { 0, 104, 999 }, emu[2] = { 999, 100 }, io[1] = { 105 }, gone[1] = { 998 };
	struct snap_vm vm = { .qemu_pid = 100, .nr_vcpus = 3, .vcpu_tids = vcpus };
	cpumask_t cpus;
	nodemask_t mems;
	char buf[32];

	(void)state;
	tu_write(f->root, "proc/100/task/104/status",
		 "Name:\tCPU 1/KVM\nCpus_allowed_list:\t2-3\nMems_allowed_list:\t1\n");
	assert_int_equal(vmproc_vm_affinity(&f->hp, &vm, &cpus, &mems), 0);
	mask_format(&cpus, buf, sizeof(buf));
	assert_string_equal(buf, "2-3");
	mask_format(&mems, buf, sizeof(buf));
	assert_string_equal(buf, "1");

	vm.nr_emulator_tids = 2;
	vm.emulator_tids = emu;
	vm.nr_iothreads = 1;
	vm.iothread_tids = io;
	assert_int_equal(vmproc_vm_affinity(&f->hp, &vm, &cpus, &mems), 0);
	mask_format(&cpus, buf, sizeof(buf));
	assert_string_equal(buf, "0-3");
	mask_format(&mems, buf, sizeof(buf));
	assert_string_equal(buf, "0-1");
	assert_int_equal(vmproc_vm_affinity(&f->hp, &vm, &cpus, NULL), 0);
	mask_format(&cpus, buf, sizeof(buf));
	assert_string_equal(buf, "0-3");

	/* none readable: -ESRCH, outputs emptied */
	vm.nr_vcpus = 1;
	vm.nr_emulator_tids = 0;
	vm.nr_iothreads = 1;
	vm.iothread_tids = gone;
	assert_int_equal(vmproc_vm_affinity(&f->hp, &vm, &cpus, &mems), -ESRCH);
	assert_true(mask_empty(&cpus));
	assert_true(mask_empty(&mems));
	fx_free(f);
}

/* A VM's use per node from its vCPUs: each vCPU's rate on the node of the
 * CPU it last ran on (field 39), scaled to the whole VM's use; a vCPU
 * with no rate, or gone, counts nothing; none known → NULL. */
static void vcpu_stat(const char *root, int tid, int cpu)
{
	char rel[128], stat[512];

	snprintf(rel, sizeof(rel), "proc/100/task/%d/stat", tid);
	snprintf(stat, sizeof(stat),
		 "%d (CPU 0/KVM) R 1 100 100 0 -1 4194560 0 0 0 0 500 20 0 0 20 0 1 0 100 1000 10 "
		 "0 0 0 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0\n", tid, cpu);
	tu_write(root, rel, stat);
}

/* A vCPU thread's use between two readings: at most one CPU (its
 * counter's two ends unevenly behind read 1.13 over half a second),
 * unknown when no time passed or the counter went back. */
static void test_thread_rate(void **state)
{
	(void)state;
	assert_float_equal(vmproc_thread_rate(1750000000ULL, 1000000000ULL, 1000000000LL), 0.75, 1e-12);
	assert_float_equal(vmproc_thread_rate(1565000000ULL, 1000000000ULL, 500000000LL), 1.0, 1e-12);
	assert_float_equal(vmproc_thread_rate(5, 5, 1000), 0.0, 1e-12);
	assert_true(isnan(vmproc_thread_rate(2, 1, 0)));
	assert_true(isnan(vmproc_thread_rate(1, 2, 1000)));
}

static void test_vcpu_nodes(void **state)
{
	char *root = tu_mkdtemp();
	struct snap_node nodes[2];
	struct host_paths hp;
	struct snapshot *s = snap_new();
	pid_t tids[4] = { 101, 102, 103, 104 };
	double use[4] = { 1.0, 0.5, NAN, 0.25 };
	struct snap_vm vm = { .qemu_pid = 100, .nr_vcpus = 4, .vcpu_tids = tids, .vcpu_use = use };
	double *dn;

	(void)state;
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < 2; i++) {
		nodes[i].id = i;
		mask_set(&nodes[i].cpus, 2 * i);
		mask_set(&nodes[i].cpus, 2 * i + 1);
		nodes[i].nr_cpus = 2;
	}
	snap_set_nodes(s, nodes, 2, NULL);
	vcpu_stat(root, 101, 0);
	vcpu_stat(root, 102, 3);
	vcpu_stat(root, 103, 2);   /* no rate yet */
	/* 104: exited, no /proc entry */
	assert_int_equal(host_paths_from_root(&hp, root), 0);
	dn = vmproc_vcpu_nodes(&hp, s, &vm, 3.0);
	assert_non_null(dn);
	assert_float_equal(dn[0], 2.0, 1e-9);
	assert_float_equal(dn[1], 1.0, 1e-9);
	free(dn);
	assert_null(vmproc_vcpu_nodes(&hp, s, &vm, NAN));
	use[0] = use[1] = use[3] = NAN;
	assert_null(vmproc_vcpu_nodes(&hp, s, &vm, 3.0));
	snap_unref(s);
	tu_rm_rf(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_comm),
		cmocka_unit_test(test_domain_cgroup),
		cmocka_unit_test(test_v1_process),
		cmocka_unit_test(test_v2_process),
		cmocka_unit_test(test_numa_maps),
		cmocka_unit_test(test_vm_affinity),
		cmocka_unit_test(test_thread_rate),
		cmocka_unit_test(test_vcpu_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
