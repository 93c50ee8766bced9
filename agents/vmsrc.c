#include "vmsrc_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include "hugetlb.h"
#include "vmproc.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

#define REFRESH_NS    60000000000LL   /* re-read a domain's settings at least this often */
#define PENDING_TTL_NS 30000000000LL  /* a start event whose domain never showed up */

/* ---- pure helpers -------------------------------------------------------- */

void vmsrc_guest_id(char out[GUEST_ID_MAX], const char *uuid)
{
	snap_make_id(out, "vm", uuid);
}


static const char *numa_mode_name(int m)
{
	switch (m) {
	case VIR_DOMAIN_NUMATUNE_MEM_STRICT: return "strict";
	case VIR_DOMAIN_NUMATUNE_MEM_PREFERRED: return "preferred";
	case VIR_DOMAIN_NUMATUNE_MEM_INTERLEAVE: return "interleave";
	case VIR_DOMAIN_NUMATUNE_MEM_RESTRICTIVE: return "restrictive";
	default: return "?";
	}
}

/* ---- the domain cache (engine thread) ------------------------------------- */

static void dom_clear(struct vm_dom *d)
{
	free(d->threads_base);
	free(d->cgroup);
	free(d->mem_cg);
	free(d->prev_vcpu_tid);
	free(d->prev_vcpu_ns);
	memset(d, 0, sizeof(*d));
}

static struct vm_dom *dom_find(struct vmsrc *vs, const char *uuid)
{
	for (unsigned i = 0; i < vs->nr_doms; i++)
		if (strcmp(vs->doms[i].uuid, uuid) == 0)
			return &vs->doms[i];
	return NULL;
}

static struct vm_dom *dom_add(struct vmsrc *vs, const char *uuid, int domid)
{
	struct vm_dom *d;

	if (vs->nr_doms == vs->cap_doms) {
		vs->cap_doms = vs->cap_doms ? vs->cap_doms * 2 : 16;
		vs->doms = xrealloc(vs->doms, vs->cap_doms * sizeof(*vs->doms));
	}
	d = &vs->doms[vs->nr_doms++];
	memset(d, 0, sizeof(*d));
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	vmsrc_guest_id(d->id, uuid);
	d->domid = domid;
	d->dirty = true;
	return d;
}

static void dom_remove(struct vmsrc *vs, unsigned i)
{
	dom_clear(&vs->doms[i]);
	vs->nr_doms--;
	if (i != vs->nr_doms)
		vs->doms[i] = vs->doms[vs->nr_doms];
}

int vmsrc_facts(struct vmsrc *vs, const char *uuid, struct vmsrc_facts *out)
{
	const struct vm_dom *d = dom_find(vs, uuid);

	if (!d)
		return -ENOENT;
	out->domid = d->domid;
	out->x = d->x;
	return 0;
}

void vmsrc_mark_dirty(struct vmsrc *vs, const char *uuid)
{
	struct vm_dom *d = dom_find(vs, uuid);

	if (d)
		d->dirty = true;
}

static bool pending_take(struct vmsrc *vs, const char *uuid, int domid, int64_t *t)
{
	bool found = false;

	for (unsigned i = 0; i < vs->nr_pending;) {
		struct vm_event *p = &vs->pending[i];

		if (strcmp(p->uuid, uuid) == 0 && (p->domid < 0 || p->domid == domid)) {
			if (!found)
				*t = p->t_ns;
			found = true;
			vs->pending[i] = vs->pending[--vs->nr_pending];
		} else {
			i++;
		}
	}
	return found;
}

/* Events queued by the loop thread, applied on the engine thread. */
static bool drain_events(struct vmsrc *vs)
{
	struct vm_event *q;
	unsigned n;
	bool resync;

	resync = vmsrc_loop_take_events(vs, &q, &n);

	for (unsigned i = 0; i < n; i++) {
		struct vm_dom *d = dom_find(vs, q[i].uuid);

		switch (q[i].action) {
		case VMSRC_PLACE:
			if (d && d->domid == q[i].domid && d->offered)
				break; /* this instance was placed already */
			vs->pending = xrealloc(vs->pending, (vs->nr_pending + 1) * sizeof(*vs->pending));
			vs->pending[vs->nr_pending++] = q[i];
			break;
		case VMSRC_FORGET:
			if (d && (q[i].domid < 0 || d->domid == q[i].domid || !d->seen))
				dom_remove(vs, (unsigned)(d - vs->doms));
			break;
		case VMSRC_REFRESH:
		case VMSRC_RESCAN:
			if (d)
				d->dirty = true;
			break;
		default:
			break;
		}
	}
	free(q);
	if (resync)
		for (unsigned i = 0; i < vs->nr_doms; i++)
			vs->doms[i].dirty = true;
	return resync;
}

static int get_numa_params(virDomainPtr dom, char mode[16], char nodeset[64])
{
	virTypedParameterPtr p = NULL;
	int n = 0;

	if (virDomainGetNumaParameters(dom, NULL, &n, VIR_DOMAIN_AFFECT_LIVE) < 0 || n <= 0)
		return -EIO;
	p = xcalloc((size_t)n, sizeof(*p));
	if (virDomainGetNumaParameters(dom, p, &n, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		free(p);
		return -EIO;
	}
	mode[0] = nodeset[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(p[i].field, VIR_DOMAIN_NUMA_MODE) == 0 && p[i].type == VIR_TYPED_PARAM_INT)
			snprintf(mode, 16, "%s", numa_mode_name(p[i].value.i));
		else if (strcmp(p[i].field, VIR_DOMAIN_NUMA_NODESET) == 0 &&
			 p[i].type == VIR_TYPED_PARAM_STRING && p[i].value.s)
			snprintf(nodeset, 64, "%s", p[i].value.s);
	}
	virTypedParamsClear(p, n);
	free(p);
	return 0;
}

static bool dom_gone_error(void)
{
	virErrorPtr e = virGetLastError();

	return e && (e->code == VIR_ERR_NO_DOMAIN || e->code == VIR_ERR_OPERATION_INVALID);
}

/* The nodes of D's devices (its XML just read), from sysfs: they stay
 * until its XML is read again (a device attached or detached). */
static void dev_nodes(const struct vmsrc *vs, struct vm_dom *d, struct snapshot *snap)
{
	unsigned n = d->x.nr_devs < VMXML_DEV_MAX ? d->x.nr_devs : VMXML_DEV_MAX;

	mask_zero(&d->dev_nodes);
	for (unsigned i = 0; i < n; i++) {
		const struct vmxml_dev *dev = &d->x.devs[i];
		int node = -1, r = devnode_of(&vs->hp, dev->kind, dev->addr, &node);

		if (r < 0)
			snap_warn(snap, "libvirt: domain %s: device %s: its NUMA node unknown (%s)", d->x.name,
				  dev->addr[0] ? dev->addr : "without an address",
				  r == -ENOENT ? "not in sysfs" : strerror(-r));
		else if (node >= 0)
			mask_set(&d->dev_nodes, node);
	}
	if (d->x.nr_devs > VMXML_DEV_MAX)
		snap_warn(snap, "libvirt: domain %s: %u devices, the nodes of the first %u counted", d->x.name,
			  d->x.nr_devs, VMXML_DEV_MAX);
}

/* Re-read a domain's settings and find its process. Returns 0, -ESRCH if
 * the domain is gone, or another negative errno (warned). */
static int refresh(struct vmsrc *vs, struct vm_dom *d, virDomainPtr dom, struct snapshot *snap,
		   int64_t now)
{
	char *xml, err[200], *cg = NULL;
	struct vmxml_info x;
	uint64_t start;
	int r;

	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml) {
		if (dom_gone_error())
			return -ESRCH;
		vmsrc_libvirt_error(err, sizeof(err));
		snap_warn(snap, "libvirt: domain %s: cannot read its XML: %s", d->uuid, err);
		return -EIO;
	}
	r = vmxml_parse(xml, strlen(xml), &x, err, sizeof(err));
	free(xml);
	if (r < 0) {
		snap_warn(snap, "libvirt: domain %s: %s", d->uuid, err);
		return r;
	}
	/* A policy changed in its metadata since the last read was set now
	 * (a pin set since the guest's last move is not held by its
	 * cool-down); a domain read for the first time: not known. */
	vmxml_policy_carry(&x, d->x_read ? &d->x : NULL, clock_real_ns());
	d->x = x;
	d->x_read = true;
	dev_nodes(vs, d, snap);
	d->warned = false;
	if (get_numa_params(dom, d->numa_mode, d->numa_nodeset) < 0) {
		if (dom_gone_error())
			return -ESRCH;
		snprintf(d->numa_mode, sizeof(d->numa_mode), "%s", x.numatune_mode);
		snprintf(d->numa_nodeset, sizeof(d->numa_nodeset), "%s", x.numatune_nodeset);
	}

	/* The process: kept while pid and start time still match. */
	if (!d->pid || vmproc_start_time(&vs->hp, d->pid, &start) < 0 || start != d->start) {
		pid_t pid;

		d->pid = 0;
		r = vmproc_find_qemu(&vs->hp, d->uuid, &pid, &start);
		if (r < 0) {
			snap_warn(snap, "libvirt: domain %s (%s): no QEMU process with -uuid %s under %s: "
				  "not reported", x.name, d->uuid, d->uuid, vs->hp.procfs);
			return r;
		}
		d->pid = pid;
		d->start = start;
		free(d->threads_base);
		free(d->cgroup);
		free(d->mem_cg);
		d->threads_base = d->cgroup = d->mem_cg = NULL;
		if (vmproc_cgroup_of(&vs->hp, pid, vs->h.v2[CGC_CPUSET] ? NULL : "cpuset", &cg) == 0) {
			vmproc_domain_cgroup(cg, &d->threads_base, &d->cgroup);
			free(cg);
			cg = NULL;
			if (strcmp(d->cgroup, "/") == 0) {
				/* libvirt without cgroups: no domain group */
				free(d->cgroup);
				d->cgroup = NULL;
			}
		}
		if (vmproc_cgroup_of(&vs->hp, pid, vs->h.v2[CGC_MEMORY] ? NULL : "memory", &cg) == 0) {
			char *tb = NULL;

			vmproc_domain_cgroup(cg, &tb, &d->mem_cg);
			free(tb);
			free(cg);
			if (strcmp(d->mem_cg, "/") == 0) {
				free(d->mem_cg);
				d->mem_cg = NULL;
			}
		}
	}
	d->dirty = false;
	d->refreshed_ns = now;
	return 0;
}

static bool in_scope(const struct vmsrc *vs, const char *cg)
{
	if (!vs->nr_scopes)
		return true;
	if (!cg)
		return false;
	for (unsigned i = 0; i < vs->nr_scopes; i++)
		if (cgh_rel_under(cg, vs->scopes[i]))
			return true;
	return false;
}

static double rate(uint64_t now_v, uint64_t prev_v, int64_t dt_ns)
{
	if (dt_ns <= 0 || now_v < prev_v)
		return NAN;
	return (double)(now_v - prev_v) / (double)dt_ns;
}

/* D as a new guest of SNAP, its threads T (taken over), its process's
 * CPU time CPU_NS (HAVE_CPU) at NOW. */
static struct snap_guest *add_guest(struct vm_dom *d, struct snapshot *snap, struct vmproc_threads *t,
				    uint64_t cpu_ns, bool have_cpu, int64_t now, unsigned nv)
{
	struct snap_guest *g = snap_add_guest(snap);
	struct snap_vm *vm = xcalloc(1, sizeof(*vm));

	g->vm = vm;
	memcpy(g->id, d->id, sizeof(g->id));
	g->kind = GUEST_VM;
	snprintf(g->runtime, sizeof(g->runtime), "libvirt");
	snprintf(g->name, sizeof(g->name), "%s", d->x.name);
	g->cgroup = d->cgroup ? xstrdup(d->cgroup) : NULL;
	g->nr_threads = t->nr_threads;
	g->nr_procs = 1;
	g->main_pid = d->pid;
	g->cpu_usage_ns = cpu_ns;
	g->cpu_use = have_cpu && d->prev_t_ns ? rate(cpu_ns, d->prev_cpu_ns, now - d->prev_t_ns) : NAN;
	if (have_cpu) {
		d->prev_cpu_ns = cpu_ns;
	}

	snprintf(vm->uuid, sizeof(vm->uuid), "%s", d->uuid);
	snprintf(vm->name, sizeof(vm->name), "%s", d->x.name);
	vm->qemu_pid = d->pid;
	vm->domid = d->domid;
	vm->qemu_start = d->start;
	vm->nr_vcpus = t->nr_vcpus;
	vm->vcpu_tids = t->vcpu_tids;
	t->vcpu_tids = NULL;
	vm->vcpu_use = xcalloc(nv, sizeof(double));
	vm->nr_emulator_tids = t->nr_emulator;
	vm->emulator_tids = t->emulator_tids;
	t->emulator_tids = NULL;
	vm->nr_iothreads = t->nr_iothreads;
	vm->iothread_ids = t->iothread_ids;
	vm->iothread_tids = t->iothread_tids;
	t->iothread_ids = NULL;
	t->iothread_tids = NULL;
	if (d->x.has_numatune) {
		snprintf(vm->numatune_mode, sizeof(vm->numatune_mode), "%s",
			 d->numa_mode[0] ? d->numa_mode : d->x.numatune_mode);
		snprintf(vm->numatune_nodeset, sizeof(vm->numatune_nodeset), "%s",
			 d->numa_nodeset[0] ? d->numa_nodeset : d->x.numatune_nodeset);
	}
	return g;
}

/* Per-vCPU CPU use, against the same thread's last sample (kept in D
 * for the next). */
static void measure_vcpus(struct vmsrc *vs, struct vm_dom *d, struct snap_guest *g, unsigned nv, int64_t now)
{
	struct snap_vm *vm = g->vm;
	uint64_t *vns = xcalloc(nv, sizeof(uint64_t));

	for (unsigned i = 0; i < nv; i++) {
		vm->vcpu_use[i] = NAN;
		if (!vm->vcpu_tids[i] || vmproc_thread_cpu_ns(&vs->hp, d->pid, vm->vcpu_tids[i], &vns[i]) < 0)
			continue;
		if (i < d->nr_prev_vcpu && d->prev_vcpu_tid[i] == vm->vcpu_tids[i] && d->prev_t_ns) {
			vm->vcpu_use[i] = vmproc_thread_rate(vns[i], d->prev_vcpu_ns[i], now - d->prev_t_ns);
			/* Every vCPU is measured: the policy counts busy ones. */
			g->busy_measured = g->busy_measured || !isnan(vm->vcpu_use[i]);
			g->busy_threads += vm->vcpu_use[i] >= SNAP_BUSY_THREAD_CPU;
		}
	}
	free(d->prev_vcpu_ns);
	free(d->prev_vcpu_tid);
	d->prev_vcpu_ns = vns;
	d->prev_vcpu_tid = xcalloc(nv, sizeof(pid_t));
	memcpy(d->prev_vcpu_tid, vm->vcpu_tids, nv * sizeof(pid_t));
	d->nr_prev_vcpu = nv;
	d->prev_t_ns = now;
}

/* Where it runs: the affinity the kernel enforces on its threads.
 * g->mems is the union of their Mems_allowed. */
static void measure_affinity(struct vmsrc *vs, struct vm_dom *d, struct snapshot *snap, struct snap_guest *g)
{
	cpumask_t cpus;
	nodemask_t on;
	int r = vmproc_vm_affinity(&vs->hp, g->vm, &cpus, &g->mems);

	g->cpus = snap_cpumask(snap, &cpus);
	if (r < 0)
		snap_warn(snap, "libvirt: domain %s: cannot read its threads' affinity", d->x.name);
	/* Spread over several nodes: which of them carry its load (only
	 * there does the policy need it). */
	snap_cpus_to_nodes(snap, g->cpus, &on);
	if (mask_count(&on) > 1)
		g->cpu_node = vmproc_vcpu_nodes(&vs->hp, snap, g->vm, g->cpu_use);
}

/* Memory per node: the domain cgroup's memory.numa_stat counts what is
 * charged to the domain (QEMU and its children) without walking page
 * tables; numa_maps only where the domain has no memory cgroup (libvirt
 * without the memory controller, or no cgroups at all). */
static void measure_memory(struct vmsrc *vs, struct vm_dom *d, struct snapshot *snap, struct snap_guest *g)
{
	struct snap_vm *vm = g->vm;
	int r = d->mem_cg ? vmproc_numa_stat(&vs->h, d->mem_cg, snap, g->mem_node) : -ENOENT;

	if (r == 0) {
		snprintf(vm->mem_source, sizeof(vm->mem_source), "numa_stat");
	} else if (vmproc_numa_maps(&vs->hp, d->pid, snap, g->mem_node) == 0) {
		snprintf(vm->mem_source, sizeof(vm->mem_source), "numa_maps");
	} else {
		snap_warn(snap, "libvirt: domain %s: memory per node unknown (no memory.numa_stat, "
			  "numa_maps unreadable)", d->x.name);
		g->mem_unknown = true;
	}
	/* Hugetlb-backed guest memory (<memoryBacking><hugepages/>): not in
	 * memory.numa_stat, in numa_maps already. */
	if (ghuge_host_in_use(snap)) {
		char cgdir[PATH_MAX];
		bool cg = r == 0 && vs->h.v2[CGC_MEMORY] &&
			  cgh_path(&vs->h, CGC_MEMORY, d->mem_cg, NULL, cgdir, sizeof(cgdir)) == 0;

		if (ghuge_read(&vs->hp, snap, g, cg ? cgdir : NULL, d->pid, r == 0) < 0)
			snap_warn(snap, "libvirt: domain %s: hugetlb memory per node unknown", d->x.name);
	}
}

/* What the policy may do with G: libvirt owns the domain's cgroups and
 * checks a nodeset against the host itself (refusing, e.g., "NUMA node 1
 * is unavailable"), so the bound offered is the host: its online CPUs
 * and its nodes with memory. Its policy is the domain's metadata, if
 * any (a malformed one warned about once). */
static void set_bounds_and_policy(struct vm_dom *d, struct snapshot *snap, struct snap_guest *g)
{
	cpumask_t allowed;

	mask_zero(&allowed);
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		mask_or(&allowed, &allowed, &snap->nodes[n].cpus);
		if (snap->nodes[n].mem_total)
			mask_set(&g->allowed_mems, snap->nodes[n].id);
	}
	g->allowed_cpus = snap_cpumask(snap, &allowed);

	g->policy.mode = GPOL_AUTO;
	g->policy.source = GPOL_SRC_DEFAULT;
	if (d->x.has_policy)
		g->policy = d->x.policy;
	g->nr_devices = d->x.nr_devs;
	g->dev_nodes = d->dev_nodes;
	if (d->x.policy_error[0] && !d->warned)
		snap_warn(snap, "libvirt: domain %s: numaorch policy metadata ignored: %s", d->x.name,
			  d->x.policy_error);
	d->warned = true;
}

/* A domain started while the agent runs: offer it for initial placement,
 * once. */
static void offer_placement(struct vmsrc *vs, struct vm_dom *d, unsigned nv)
{
	struct vmsrc_placement *p;

	if (!d->place_pending || d->offered)
		return;
	vs->offer = xrealloc(vs->offer, (vs->nr_offer + 1) * sizeof(*vs->offer));
	p = &vs->offer[vs->nr_offer++];
	memset(p, 0, sizeof(*p));
	memcpy(p->id, d->id, sizeof(p->id));
	snprintf(p->uuid, sizeof(p->uuid), "%s", d->uuid);
	snprintf(p->name, sizeof(p->name), "%s", d->x.name);
	p->nr_vcpus = nv;
	p->mem_bytes = d->x.mem_bytes;
	p->event_ns = d->place_event_ns;
}

/* One domain into SNAP. NOW is the scan's time, MONO0 the monotonic
 * clock when the scan began: a domain's rates run to when its counters
 * were read (cgscan.c's read_time says why; here libvirt's calls and
 * the container scan come before, and vary). Returns false if its
 * process is gone. */
static bool measure(struct vmsrc *vs, struct vm_dom *d, struct snapshot *snap, int64_t now, int64_t mono0)
{
	struct vmproc_threads t;
	struct snap_guest *g;
	uint64_t cpu_ns = 0;
	bool have_cpu;
	unsigned nv = d->x.vcpus ? d->x.vcpus : 1;

	if (!d->pid)
		return true;
	if (!in_scope(vs, d->cgroup))
		return true;
	if (vmproc_threads(&vs->hp, &vs->h, d->pid, d->threads_base, nv, &t) < 0)
		return false;
	have_cpu = vmproc_process_cpu_ns(&vs->hp, d->pid, &cpu_ns) == 0;
	now += clock_mono_ns() - mono0;

	g = add_guest(d, snap, &t, cpu_ns, have_cpu, now, nv);
	measure_vcpus(vs, d, g, nv, now);
	measure_affinity(vs, d, snap, g);
	measure_memory(vs, d, snap, g);
	set_bounds_and_policy(d, snap, g);
	offer_placement(vs, d, nv);
	vmproc_threads_free(&t);
	return true;
}

int vmsrc_scan(void *ctx, struct snapshot *snap, int64_t now)
{
	struct vmsrc *vs = ctx;
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	char err[256] = "";
	int64_t mono0 = clock_mono_ns();
	int n = -1;

	drain_events(vs);
	vs->nr_offer = 0;
	conn = vmsrc_conn(vs);
	if (conn) {
		n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
		if (n < 0) {
			vmsrc_libvirt_error(err, sizeof(err));
			virConnectClose(conn);
			conn = NULL;
		}
	}
	if (conn) {
		for (unsigned i = 0; i < vs->nr_doms; i++)
			vs->doms[i].seen = false;
		for (int i = 0; i < n; i++) {
			char uuid[VIR_UUID_STRING_BUFLEN];
			int domid = (int)virDomainGetID(doms[i]);
			struct vm_dom *d;
			bool fresh = false;
			int64_t t = now;

			if (virDomainGetUUIDString(doms[i], uuid) < 0)
				goto next;
			d = dom_find(vs, uuid);
			if (d && d->domid != domid) {
				/* restarted: a new instance */
				dom_remove(vs, (unsigned)(d - vs->doms));
				d = NULL;
			}
			if (!d) {
				d = dom_add(vs, uuid, domid);
				fresh = true;
			}
			d->seen = true;
			if (pending_take(vs, uuid, domid, &t) && !d->offered) {
				d->place_pending = true;
				d->place_event_ns = t;
			} else if (fresh && vs->synced) {
				/* started while we were not told (hook-triggered
				 * cycle before the event, or while reconnecting) */
				d->place_pending = true;
				d->place_event_ns = now;
			}
			if (d->dirty || now - d->refreshed_ns > REFRESH_NS) {
				int r = refresh(vs, d, doms[i], snap, now);

				if (r == -ESRCH && !d->pid)
					d->seen = false;
			}
next:
			virDomainFree(doms[i]);
		}
		free(doms);
		for (unsigned i = 0; i < vs->nr_doms;)
			if (!vs->doms[i].seen)
				dom_remove(vs, i);
			else
				i++;
		vs->synced = true;
		for (unsigned i = 0; i < vs->nr_pending;)
			if (now - vs->pending[i].t_ns > PENDING_TTL_NS)
				vs->pending[i] = vs->pending[--vs->nr_pending];
			else
				i++;
		virConnectClose(conn);
	} else {
		/* libvirtd is away; QEMU is not. Keep what still runs. */
		for (unsigned i = 0; i < vs->nr_doms;) {
			struct vm_dom *d = &vs->doms[i];
			uint64_t start;

			if (d->pid && vmproc_start_time(&vs->hp, d->pid, &start) == 0 && start == d->start)
				i++;
			else
				dom_remove(vs, i);
		}
		bool was_connected = vmsrc_loop_error(vs, err, sizeof(err));

		/* A host without libvirtd at all is not worth a warning per cycle. */
		if (was_connected || vs->nr_doms)
			snap_warn(snap, "libvirt: not connected to %s (%s): %u domain%s reported as last seen",
				  vs->uri, err, vs->nr_doms, vs->nr_doms == 1 ? "" : "s");
	}
	for (unsigned i = 0; i < vs->nr_doms;)
		if (measure(vs, &vs->doms[i], snap, now, mono0))
			i++;
		else
			dom_remove(vs, i);
	return 0;
}

unsigned vmsrc_take_placements(struct vmsrc *vs, const struct snapshot *snap,
			       struct vmsrc_placement **out)
{
	struct vmsrc_placement *res = NULL;
	unsigned n = 0;

	for (unsigned i = 0; i < vs->nr_offer; i++) {
		struct vm_dom *d = dom_find(vs, vs->offer[i].uuid);

		if (!d || d->offered || !snap_find_guest(snap, vs->offer[i].id))
			continue;
		d->offered = true;
		d->place_pending = false;
		res = xrealloc(res, (n + 1) * sizeof(*res));
		res[n++] = vs->offer[i];
	}
	vs->nr_offer = 0;
	*out = res;
	return n;
}

void vmsrc_free(struct vmsrc *vs)
{
	if (!vs)
		return;
	vmsrc_loop_stop(vs);
	for (unsigned i = 0; i < vs->nr_doms; i++)
		dom_clear(&vs->doms[i]);
	free(vs->doms);
	free(vs->pending);
	free(vs->offer);
	vs->doms = NULL;
	vs->pending = NULL;
	vs->offer = NULL;
	/* The event loop may still hold references (a callback in flight);
	 * the last one frees the rest. */
	vmsrc_loop_unref(vs);
}
