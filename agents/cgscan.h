/* cgscan.h — the container source: finds guests by walking cgroupfs and
 * measures them.
 *
 * Recognised (relative cgroup paths; v1 paths are the same in every
 * hierarchy):
 *   docker      .../docker-<64hex>.scope             /docker/<64hex>
 *   kubernetes  pods: .../kubepods[-<qos>]-pod<uid>.slice, /kubepods[/<qos>]/pod<uid>
 *               (the pod is the guest; its containers are its children)
 *   podman      .../libpod-<64hex>.scope             /libpod_parent/libpod-<64hex>
 *               (libpod-conmon-* is podman's monitor, not a guest)
 *   runc        containers in runc state dirs (<rundir>/runc/<id>/state.json
 *               and configured roots): their cgroup, whatever cgroupsPath said
 *   containerd  containers in containerd's runc state dirs, every namespace
 *               (<rundir>/containerd/runc/<ns>/<id>/state.json, configured roots)
 *   lxc         /lxc.payload.<name>, /lxc/<name> (lxc.monitor.* is not a guest)
 *   nspawn      /machine.slice/machine-<name>.scope, except libvirt's
 *               machine-qemu\x2d* and machine-lxc\x2d* scopes
 *   custom      every child of a configured parent cgroup
 * libvirt's own groups (/machine/qemu-<N>-<name>.libvirt-qemu, the
 * machine-qemu scopes) are left to the VM source.
 *
 * A guest's subtree belongs to it: nothing below a guest is a guest.
 *
 * Kubernetes pods are marked as the kubelet placed them (kubestate.h): a
 * pod with exclusive CPUs or a NUMA assignment is owned by the kubelet
 * (snap_guest.owner), the others are bound to its shared pool.
 *
 * The scanner's parts: cgname.c (the name rules, pure), cgrunc.c (runc's
 * and containerd's state), cglabel.c (the names runtimes show),
 * kubestate.c (the kubelet's checkpoints, pure), cgproc.c
 * (a process's cgroups), cgfdc.c (files kept open between scans), cgthr.c
 * (CPU use across scans, per thread); cgscan.c is the walk and the
 * readers.
 */
#ifndef NUMAORCH_CGSCAN_H
#define NUMAORCH_CGSCAN_H

#include <stdint.h>

#include "../orchestrator/base/cghier.h"
#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/model/snapshot.h"
#include "../orchestrator/model/source.h"

struct cgscan;

/* Detect the cgroup layout under hp->cgroupfs. Copies CFG.
 * -ENOENT if there is no cgroupfs, -EOPNOTSUPP if no cpuset controller
 * is available in any hierarchy. */
int cgscan_new(const struct host_paths *hp, const struct cgscan_config *cfg,
	       struct cgscan **out);
void cgscan_free(struct cgscan *cs);
const struct cg_hier *cgscan_hier(const struct cgscan *cs);
/* Pure: a cgroup CPU counter's text (cpu.stat on v2: its usage_usec
 * line; cpuacct.usage on v1: ns) to nanoseconds. 0 or -EINVAL/-ERANGE. */
int cgscan_parse_usage(const char *text, bool v2, uint64_t *ns);
/* Between scans: the CPU counter (ns) of guest cgroup REL through the
 * file the last scan kept open (cgfdc.h); -ENOENT if none is kept (a
 * VM's cgroup, a file over the fd budget), another negative errno if it
 * cannot be read. */
int cgscan_read_usage(struct cgscan *cs, const char *rel, uint64_t *ns);
/* Between scans: the threads the last scan measured of guest ID by node
 * (cgthr_prev_tids), and one thread's CPU time and last CPU
 * (cgthr_read_thread). */
unsigned cgscan_thread_ids(const struct cgscan *cs, const char *id, pid_t *out, unsigned max);
int cgscan_read_thread(struct cgscan *cs, pid_t tid, uint64_t *ns, int *cpu);

/* Discover and measure every container into SNAP, whose nodes must already
 * be set (memory.numa_stat is mapped onto them). NOW_NS is the monotonic
 * time of this sample: cpu_use is the CPU-time delta since the previous
 * scan that saw the same guest, divided by the elapsed time; NAN on first
 * sight. Guests that vanish mid-scan are skipped silently; unreadable or
 * malformed files add a snap_warn() naming the cgroup (relative path) and
 * the file, and the guest is kept with what could be read.
 * Returns 0, or a negative errno when the tree itself cannot be read. */
int cgscan_scan(struct cgscan *cs, struct snapshot *snap, int64_t now_ns);

#endif
