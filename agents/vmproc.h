/* vmproc.h — what procfs and cgroupfs say about one QEMU process: which
 * process runs a domain, its cgroup, which of its threads are vCPUs,
 * I/O threads and emulator threads, their CPU time and affinity, and
 * where its memory is. libvirt's public API gives none of these (no pid,
 * no thread ids); asking QEMU directly (QMP query-cpus-fast through
 * virDomainQemuMonitorCommand) would taint the domain.
 *
 * How threads are told apart, first that applies:
 *   1. libvirt's own thread cgroups: DOM/vcpuN, DOM/iothreadN and
 *      DOM/emulator below the domain's cgroup (v1: in the cpuset
 *      hierarchy, "tasks"; v2: DOM/libvirt/..., "cgroup.threads").
 *      libvirt puts each vCPU thread there by the thread id QEMU reported
 *      for it over QMP, so this is QEMU's own answer.
 *   2. Thread names: libvirt always starts QEMU with -name
 *      ...,debug-threads=on, so vCPU threads are named "CPU <n>/KVM" or
 *      "CPU <n>/TCG" and I/O threads "IO iothread<id>"; everything else
 *      (main loop, RCU, workers, "IO mon_iothread") is emulator.
 * Every path is built from the injectable host_paths roots.
 */
#ifndef NUMAORCH_VMPROC_H
#define NUMAORCH_VMPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../orchestrator/base/cghier.h"
#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/base/mask.h"
#include "../orchestrator/model/snapshot.h"

struct vmproc_threads {
	unsigned nr_vcpus;
	pid_t *vcpu_tids;          /* [nr_vcpus], by vCPU number; 0 where not found */
	unsigned nr_emulator;
	pid_t *emulator_tids;
	unsigned nr_iothreads;
	unsigned *iothread_ids;    /* libvirt iothread ids */
	pid_t *iothread_tids;
	unsigned nr_threads;       /* every thread of the process */
	bool from_cgroup;          /* rule 1 above, else rule 2 */
};

void vmproc_threads_free(struct vmproc_threads *t);

/* Classify a thread name (comm). Returns 'v' with *num = vCPU number,
 * 'i' with *num = iothread id, or 'e' (emulator). Pure. */
char vmproc_classify_comm(const char *comm, unsigned *num);

/* The process whose command line has "-uuid UUID" and "-name" (QEMU as
 * libvirt starts it), scanning PROCFS. *pid and *start (the process's
 * start time in clock ticks, /proc/PID/stat field 22: with the pid it
 * names one process for good) on success; -ESRCH if none. */
int vmproc_find_qemu(const struct host_paths *hp, const char *uuid, pid_t *pid, uint64_t *start);
/* Start time of PID (see above); -ESRCH/-ENOENT if it is gone. */
int vmproc_start_time(const struct host_paths *hp, pid_t pid, uint64_t *start);

/* From /proc/PID/cgroup: the path of PID's cgroup in the hierarchy that
 * holds controller CTRL (v1 "cpuset", "memory"), or the v2 path when
 * CTRL is NULL or not found on a v1 line and a "0::" line exists.
 * *out is malloc'd. -ENOENT if PID has no such line. */
int vmproc_cgroup_of(const struct host_paths *hp, pid_t pid, const char *ctrl, char **out);

/* The directory of libvirt's thread cgroups, from the QEMU process's
 * cgroup: ".../emulator" → "..." (the process lives in emulator/), else
 * NULL (libvirt made no thread cgroups). And the domain's cgroup as an
 * operator knows it: that directory, without a trailing "/libvirt" (v2
 * puts the thread groups one level below the machine scope). Pure;
 * results malloc'd, *threads_base may be NULL. */
void vmproc_domain_cgroup(const char *proc_cgroup, char **threads_base, char **domain);

/* Threads of PID: from libvirt's thread cgroups under THREADS_BASE in the
 * hierarchy H holds cpuset (when THREADS_BASE is not NULL and vcpu0 is
 * there), else from thread names. NR_VCPUS sizes vcpu_tids (vCPUs found
 * beyond it are ignored). */
int vmproc_threads(const struct host_paths *hp, const struct cg_hier *h, pid_t pid,
		   const char *threads_base, unsigned nr_vcpus, struct vmproc_threads *out);

/* CPU time of thread TID of PID in ns: /proc/PID/task/TID/schedstat
 * (nanoseconds), else utime+stime of .../stat (clock ticks). */
int vmproc_thread_cpu_ns(const struct host_paths *hp, pid_t pid, pid_t tid, uint64_t *ns);
/* CPUs one thread used between two such readings DT_NS apart: at most 1,
 * NAN if unknown (no time passed, the counter went back: another thread). */
double vmproc_thread_rate(uint64_t cur_ns, uint64_t prev_ns, int64_t dt_ns);
/* CPU time of the whole process (every thread, live and exited): utime +
 * stime of /proc/PID/stat, in ns. */
int vmproc_process_cpu_ns(const struct host_paths *hp, pid_t pid, uint64_t *ns);
/* The VM's CPU use per node, by node index ([snap->nr_nodes], the
 * caller's): each vCPU's use (vm->vcpu_use) counts on the node of the
 * CPU it last ran on (/proc/PID/task/TID/stat field 39), and the whole
 * is scaled to CPU_USE (emulator and I/O threads in proportion). The
 * same measure as for containers (cgscan.c), with the vCPU rates the
 * source has already. NULL when no vCPU has a known, non-zero use. */
double *vmproc_vcpu_nodes(const struct host_paths *hp, const struct snapshot *snap, const struct snap_vm *vm,
			  double cpu_use);
/* Cpus_allowed_list and Mems_allowed_list of thread TID of PID (the
 * affinity the kernel enforces, whoever set it). */
int vmproc_thread_affinity(const struct host_paths *hp, pid_t pid, pid_t tid, cpumask_t *cpus,
			   nodemask_t *mems);
/* The union of that affinity over VM's vCPU (those found), emulator and
 * I/O threads, all of process VM->qemu_pid: where the domain runs, as
 * the kernel enforces it. Threads that cannot be read (exited since the
 * snapshot) are skipped. *CPUS and *MEMS (MEMS may be NULL) are zeroed
 * first; -ESRCH if no thread could be read (they stay zero). */
int vmproc_vm_affinity(const struct host_paths *hp, const struct snap_vm *vm, cpumask_t *cpus,
		       nodemask_t *mems);

/* Memory per node of SNAP (bytes, by node index, into MEM[snap->nr_nodes])
 * from memory.numa_stat of cgroup REL in H (v1: hierarchical_total, pages;
 * v2: anon + file, bytes). -ENOENT if there is no such file (no memory
 * controller for it), MEM untouched; -EINVAL if malformed, MEM all zero.
 * Nodes SNAP does not know are ignored. */
int vmproc_numa_stat(const struct cg_hier *h, const char *rel, const struct snapshot *snap,
		     uint64_t *mem);
/* The same from /proc/PID/numa_maps: N<node>=<pages> × kernelpagesize_kB
 * summed over every mapping. Slower (the kernel walks the page tables),
 * so only a fallback. -ESRCH if PID is gone; MEM is untouched on error. */
int vmproc_numa_maps(const struct host_paths *hp, pid_t pid, const struct snapshot *snap,
		     uint64_t *mem);

#endif
