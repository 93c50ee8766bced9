#include "vmapply.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "vmjournal.h"
#include "vmproc.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

struct vmapply {
	struct vmsrc *vs;
	struct host_paths hp;
	enum vm_cpus_without_memory cwm;
};

struct vmapply *vmapply_new(struct vmsrc *vs, const struct host_paths *hp,
			    enum vm_cpus_without_memory cpus_without_memory)
{
	struct vmapply *va = xcalloc(1, sizeof(*va));

	va->vs = vs;
	va->hp = *hp;
	va->cwm = cpus_without_memory;
	return va;
}

void vmapply_free(struct vmapply *va)
{
	free(va);
}

double vmapply_locality_on(const struct snapshot *snap, const struct snap_guest *g,
			   const nodemask_t *nodes)
{
	double wk[64] = { 0 }, *w = snap->nr_nodes <= 64 ? wk : xcalloc(snap->nr_nodes, sizeof(double));
	double r;

	/* Its vCPUs pinned to NODES run on each in proportion to its CPUs
	 * there: true locality (snap_guest.locality), not its memory
	 * anywhere on NODES. */
	for (unsigned n = 0; n < snap->nr_nodes; n++)
		w[n] = mask_test(nodes, snap->nodes[n].id) ? (double)snap->nodes[n].nr_cpus : 0.0;
	r = snap_locality_for(snap, g, w);
	if (w != wk)
		free(w);
	return r;
}


/* libvirt's error of the call that just failed, copied before any other
 * call replaces the thread's last error. */
static void lv_error(struct vmlv_err *e)
{
	virErrorPtr le = virGetLastError();

	e->code = le ? le->code : VIR_ERR_OK;
	snprintf(e->msg, sizeof(e->msg), "%s", le && le->message ? le->message : "unknown libvirt error");
}

/* After a failed call (its error in E): is the domain simply gone? */
static bool lv_gone(void *dom, const struct vmlv_err *e)
{
	if (e->code == VIR_ERR_NO_DOMAIN)
		return true;
	return e->code == VIR_ERR_OPERATION_INVALID && virDomainIsActive(dom) == 0;
}

static int set_nodeset(virDomainPtr dom, const char *nodeset, bool restrictive)
{
	virTypedParameterPtr params = NULL;
	int n = 0, max = 0, r;

	if (restrictive &&
	    virTypedParamsAddInt(&params, &n, &max, VIR_DOMAIN_NUMA_MODE,
				 VIR_DOMAIN_NUMATUNE_MEM_RESTRICTIVE) < 0)
		return -ENOMEM;
	if (virTypedParamsAddString(&params, &n, &max, VIR_DOMAIN_NUMA_NODESET, nodeset) < 0) {
		virTypedParamsFree(params, n);
		return -ENOMEM;
	}
	r = virDomainSetNumaParameters(dom, params, n, VIR_DOMAIN_AFFECT_LIVE);
	virTypedParamsFree(params, n);
	return r < 0 ? -EIO : 0;
}

/* The libvirt calls of a move (vmjournal.h), made on the live domain. */
static int lv_vcpu_pins(void *dom, unsigned nvcpus, unsigned char *maps, int maplen)
{
	return virDomainGetVcpuPinInfo(dom, (int)nvcpus, maps, maplen, VIR_DOMAIN_AFFECT_LIVE);
}

static int lv_emulator_pin(void *dom, unsigned char *map, int maplen)
{
	return virDomainGetEmulatorPinInfo(dom, map, maplen, VIR_DOMAIN_AFFECT_LIVE);
}

static int lv_iothreads(void *dom, int maplen, unsigned **ids, unsigned char **maps)
{
	virDomainIOThreadInfoPtr *info = NULL;
	int n = virDomainGetIOThreadInfo(dom, &info, VIR_DOMAIN_AFFECT_LIVE);

	if (n < 0)
		return n;
	*ids = xcalloc(n ? (size_t)n : 1, sizeof(unsigned));
	*maps = xcalloc(n ? (size_t)n : 1, (size_t)maplen);
	for (int i = 0; i < n; i++) {
		(*ids)[i] = info[i]->iothread_id;
		memcpy(*maps + (size_t)i * (size_t)maplen, info[i]->cpumap,
		       (size_t)(info[i]->cpumaplen < maplen ? info[i]->cpumaplen : maplen));
		virDomainIOThreadInfoFree(info[i]);
	}
	free(info);
	return n;
}

static int lv_set_numa(void *dom, const char *nodeset, bool restrictive)
{
	return set_nodeset(dom, nodeset, restrictive);
}

static int lv_pin_vcpu(void *dom, unsigned vcpu, const unsigned char *map, int maplen)
{
	return virDomainPinVcpuFlags(dom, vcpu, (unsigned char *)map, maplen, VIR_DOMAIN_AFFECT_LIVE);
}

static int lv_pin_emulator(void *dom, const unsigned char *map, int maplen)
{
	return virDomainPinEmulator(dom, (unsigned char *)map, maplen, VIR_DOMAIN_AFFECT_LIVE);
}

static int lv_pin_iothread(void *dom, unsigned id, const unsigned char *map, int maplen)
{
	return virDomainPinIOThread(dom, id, (unsigned char *)map, maplen, VIR_DOMAIN_AFFECT_LIVE);
}

static const struct vmlv vmlv_libvirt = {
	.vcpu_pins = lv_vcpu_pins,
	.emulator_pin = lv_emulator_pin,
	.iothreads = lv_iothreads,
	.set_numa = lv_set_numa,
	.pin_vcpu = lv_pin_vcpu,
	.pin_emulator = lv_pin_emulator,
	.pin_iothread = lv_pin_iothread,
	.error = lv_error,
	.gone = lv_gone,
};

int vmapply_same_instance(const struct snap_vm *job, int live_domid, int start_r, uint64_t live_start,
			  char *err, size_t errsz)
{
	if (job->domid >= 0 && live_domid != job->domid) {
		snprintf(err, errsz, "domain %s was restarted since its job began (domain id %d, the job's %d): "
			 "the new instance is not narrowed", job->name, live_domid, job->domid);
		return -ESRCH;
	}
	if (job->qemu_pid <= 0 || start_r < 0) {
		snprintf(err, errsz, "domain %s: the QEMU process %d its job moved is gone", job->name,
			 (int)job->qemu_pid);
		return -ESRCH;
	}
	if (job->qemu_start && live_start != job->qemu_start) {
		snprintf(err, errsz, "domain %s: pid %d is another process than the QEMU its job moved "
			 "(started at tick %llu, not %llu)", job->name, (int)job->qemu_pid,
			 (unsigned long long)live_start, (unsigned long long)job->qemu_start);
		return -ESRCH;
	}
	return 0;
}

/* The instance check against the domain and the job's process as they
 * are now, not against the agent's current view of them (which follows
 * a restart at its next scan). */
static int instance_now(struct vmapply *va, virDomainPtr dom, const struct snap_vm *job, char *err, size_t errsz)
{
	uint64_t start = 0;
	int sr = job->qemu_pid > 0 ? vmproc_start_time(&va->hp, job->qemu_pid, &start) : -ESRCH;

	return vmapply_same_instance(job, (int)virDomainGetID(dom), sr, start, err, errsz);
}

int vmapply_set_mems(void *ctx, const struct snap_guest *g, const nodemask_t *mems, char *err, size_t errsz)
{
	struct vmapply *va = ctx;
	const struct snap_vm *vm = g->vm;
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	struct vmsrc_facts f;
	struct vmlv_err le = { 0 };
	char ns[NODELIST_BUFSZ];
	int r = 0;

	err[0] = '\0';
	if (!vm || mask_empty(mems) || mask_format(mems, ns, sizeof(ns)) < 0) {
		snprintf(err, errsz, "no VM details or an empty nodeset");
		return -EINVAL;
	}
	if (vmsrc_facts(va->vs, vm->uuid, &f) < 0) {
		snprintf(err, errsz, "domain %s is no longer running", vm->name);
		return -ESRCH;
	}
	conn = vmsrc_conn(va->vs);
	if (!conn) {
		snprintf(err, errsz, "not connected to libvirt");
		return -ENOTCONN;
	}
	dom = virDomainLookupByUUIDString(conn, vm->uuid);
	if (!dom || virDomainIsActive(dom) != 1) {
		snprintf(err, errsz, "domain %s is no longer running", vm->name);
		r = -ESRCH;
	} else if ((r = instance_now(va, dom, vm, err, errsz)) < 0) {
		/* not the instance the job moved: nothing written */
	} else if (set_nodeset(dom, ns, !f.x.has_numatune) < 0) {
		lv_error(&le);
		snprintf(err, errsz, "libvirt: %.200s", le.msg);
		r = lv_gone(dom, &le) ? -ESRCH : -EIO;
	}
	vmsrc_mark_dirty(va->vs, vm->uuid);
	if (dom)
		virDomainFree(dom);
	virConnectClose(conn);
	return r;
}

/* The domain a move acts on, and the plan's target formatted. */
struct move {
	virConnectPtr conn;
	virDomainPtr dom;
	struct vmsrc_facts f;
	int ncpus;                     /* the host's, as libvirt counts them */
	char *to_cpus, *from_cpus;     /* [CPULIST_BUFSZ] */
	char to_mems[NODELIST_BUFSZ];
};

/* Refuse a plan item no domain can take. 0, or -1 with RES filled. */
static int move_refused(const struct snap_guest *g, const struct plan_item *it, struct move *m,
			struct apply_result *res)
{
	if (!g->vm) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: guest has no VM details");
		return -1;
	}
	if (!it->to_cpus || mask_empty(it->to_cpus) || mask_empty(&it->to_mems)) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: target cpuset is empty");
		return -1;
	}
	if (mask_format(it->to_cpus, m->to_cpus, CPULIST_BUFSZ) < 0 ||
	    mask_format(&it->to_mems, m->to_mems, sizeof(m->to_mems)) < 0 ||
	    mask_format(g->cpus, m->from_cpus, CPULIST_BUFSZ) < 0) {
		apply_result_set(res, APPLY_REFUSED, -ENOSPC, "refused: cannot format the target");
		return -1;
	}
	return 0;
}

/* Re-check: the domain still runs, as the instance the snapshot measured
 * (not the agent's view now), on the CPUs the snapshot saw, and the
 * target CPUs are the host's. 0 with M's connection and domain, or -1
 * with RES filled. */
static int move_recheck(struct vmapply *va, const struct snap_guest *g, const struct plan_item *it,
			struct move *m, struct apply_result *res)
{
	const struct snap_vm *vm = g->vm;
	struct vmlv_err le = { 0 };
	cpumask_t cur;
	int act;

	if (vmsrc_facts(va->vs, vm->uuid, &m->f) < 0) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s is no longer running", vm->name);
		return -1;
	}
	m->conn = vmsrc_conn(va->vs);
	if (!m->conn) {
		apply_result_set(res, APPLY_FAILED, -ENOTCONN, "not connected to libvirt: cannot move domain %s", vm->name);
		return -1;
	}
	m->dom = virDomainLookupByUUIDString(m->conn, vm->uuid);
	act = m->dom ? virDomainIsActive(m->dom) : -1;
	if (act != 1) {
		lv_error(&le);
		if (act == 0 || le.code == VIR_ERR_NO_DOMAIN)
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s is no longer running", vm->name);
		else
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: looking up domain %s: %s", vm->name, le.msg);
		return -1;
	}
	if ((int)virDomainGetID(m->dom) != (vm->domid >= 0 ? vm->domid : m->f.domid)) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s was restarted since the snapshot", vm->name);
		return -1;
	}
	/* The threads' affinity now: has anyone moved it since the snapshot? */
	if (vmproc_vm_affinity(&va->hp, vm, &cur, NULL) < 0) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s: its QEMU threads are gone", vm->name);
		return -1;
	}
	if (!mask_equal(&cur, g->cpus)) {
		char *now_s = xmalloc(CPULIST_BUFSZ);

		mask_format(&cur, now_s, CPULIST_BUFSZ);
		apply_result_set(res, APPLY_CHANGED, 0, "domain %s now runs on CPUs %s (was %s); deciding again next cycle",
			vm->name, now_s, m->from_cpus);
		free(now_s);
		return -1;
	}
	m->ncpus = virNodeGetCPUMap(m->conn, NULL, NULL, 0);
	if (m->ncpus <= 0) {
		lv_error(&le);
		apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: host CPU map: %s", le.msg);
		return -1;
	}
	if (mask_first(it->to_cpus->w, MASK_BITS(it->to_cpus)) >= m->ncpus ||
	    mask_next(it->to_cpus->w, MASK_BITS(it->to_cpus), m->ncpus - 1) >= 0) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: CPUs %s are not all among the host's %d",
			m->to_cpus, m->ncpus);
		return -1;
	}
	return 0;
}

int vmapply_move(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
		 const struct plan_item *it, struct apply_result *res)
{
	struct vmapply *va = ctx;
	struct move m = { .to_cpus = xmalloc(CPULIST_BUFSZ), .from_cpus = xmalloc(CPULIST_BUFSZ) };

	if (move_refused(g, it, &m, res) == 0 && move_recheck(va, g, it, &m, res) == 0) {
		const struct vmplan_in in = {
			.name = g->vm->name,
			.nr_vcpus = g->vm->nr_vcpus,
			.to_cpus = it->to_cpus,
			.mems = &g->mems,
			.to_mems = &it->to_mems,
			.to_cpus_s = m.to_cpus,
			.from_cpus_s = m.from_cpus,
			.to_mems_s = m.to_mems,
			.x = &m.f.x,
			.ncpus = m.ncpus,
			.cwm = va->cwm,
			/* where its vCPUs run now (measured where acquire
			 * could), and where they would run on the target */
			.locality_now = g->locality,
			.locality_target = vmapply_locality_on(snap, g, &it->to_nodes),
		};
		bool touched;

		vmj_carry(&vmlv_libvirt, m.dom, &in, res, &touched);
		if (touched)
			vmsrc_mark_dirty(va->vs, g->vm->uuid);
	}
	free(m.to_cpus);
	free(m.from_cpus);
	if (m.dom)
		virDomainFree(m.dom);
	if (m.conn)
		virConnectClose(m.conn);
	return res->status == APPLY_FAILED || res->status == APPLY_FAILED_PARTIAL ||
	       res->status == APPLY_REFUSED ? res->err : 0;
}
