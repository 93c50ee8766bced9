#include "vmapply.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

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
struct lverr {
	int code;
	char msg[240];
};

static void lverr_take(struct lverr *e)
{
	virErrorPtr le = virGetLastError();

	e->code = le ? le->code : VIR_ERR_OK;
	snprintf(e->msg, sizeof(e->msg), "%s", le && le->message ? le->message : "unknown libvirt error");
}

/* After a failed call (its error in E): is the domain simply gone? */
static bool gone(virDomainPtr dom, const struct lverr *e)
{
	if (e->code == VIR_ERR_NO_DOMAIN)
		return true;
	return e->code == VIR_ERR_OPERATION_INVALID && virDomainIsActive(dom) == 0;
}

static void mask_to_map(const cpumask_t *m, unsigned char *map, int maplen, int ncpus)
{
	memset(map, 0, (size_t)maplen);
	mask_foreach(c, m)
		if (c < ncpus)
			VIR_USE_CPU(map, c);
}

static void map_to_mask(const unsigned char *map, int maplen, cpumask_t *m)
{
	mask_zero(m);
	for (int c = 0; c < maplen * 8 && c < MASK_MAX_CPUS; c++)
		if (VIR_CPU_USABLE(map, maplen, 0, c))
			mask_set(m, c);
}

static const char *fmt_map(const unsigned char *map, int maplen, char *buf, size_t sz)
{
	cpumask_t m;

	map_to_mask(map, maplen, &m);
	if (mask_format(&m, buf, sz) < 0)
		snprintf(buf, sz, "?");
	return buf;
}

/* The live pinning before the move, and what was changed. */
struct pins {
	int maplen;
	unsigned nv;                 /* vCPUs whose pinning was read */
	unsigned char *vcpu;         /* [nv * maplen] */
	bool *vcpu_changed;
	unsigned char *emu;          /* [maplen] */
	bool have_emu, emu_changed;
	unsigned nio;
	unsigned *io_ids;
	unsigned char *io;           /* [nio * maplen] */
	bool *io_changed;
};

static void pins_free(struct pins *p)
{
	free(p->vcpu);
	free(p->vcpu_changed);
	free(p->emu);
	free(p->io_ids);
	free(p->io);
	free(p->io_changed);
}

static int pins_read(virDomainPtr dom, unsigned nvcpus, int maplen, struct pins *p)
{
	virDomainIOThreadInfoPtr *info = NULL;
	int n;

	memset(p, 0, sizeof(*p));
	p->maplen = maplen;
	p->vcpu = xcalloc(nvcpus ? nvcpus : 1, (size_t)maplen);
	n = virDomainGetVcpuPinInfo(dom, (int)nvcpus, p->vcpu, maplen, VIR_DOMAIN_AFFECT_LIVE);
	if (n < 0)
		return -EIO;
	p->nv = (unsigned)n < nvcpus ? (unsigned)n : nvcpus;
	p->vcpu_changed = xcalloc(p->nv ? p->nv : 1, sizeof(bool));
	p->emu = xcalloc(1, (size_t)maplen);
	n = virDomainGetEmulatorPinInfo(dom, p->emu, maplen, VIR_DOMAIN_AFFECT_LIVE);
	if (n < 0)
		return -EIO;
	p->have_emu = n > 0;
	n = virDomainGetIOThreadInfo(dom, &info, VIR_DOMAIN_AFFECT_LIVE);
	if (n < 0)
		return -EIO;
	p->nio = (unsigned)n;
	p->io_ids = xcalloc(p->nio ? p->nio : 1, sizeof(unsigned));
	p->io = xcalloc(p->nio ? p->nio : 1, (size_t)maplen);
	p->io_changed = xcalloc(p->nio ? p->nio : 1, sizeof(bool));
	for (int i = 0; i < n; i++) {
		p->io_ids[i] = info[i]->iothread_id;
		memcpy(p->io + (size_t)i * (size_t)maplen, info[i]->cpumap,
		       (size_t)(info[i]->cpumaplen < maplen ? info[i]->cpumaplen : maplen));
		virDomainIOThreadInfoFree(info[i]);
	}
	free(info);
	return 0;
}

/* Put back every pin this move changed, newest first. Returns 0 or the
 * first failure; *writes counts the calls made. */
static int pins_restore(virDomainPtr dom, struct pins *p, unsigned *writes, struct lverr *err)
{
	int ret = 0;

	for (unsigned i = p->nio; i-- > 0;)
		if (p->io_changed[i]) {
			(*writes)++;
			if (virDomainPinIOThread(dom, p->io_ids[i], p->io + (size_t)i * (size_t)p->maplen,
						 p->maplen, VIR_DOMAIN_AFFECT_LIVE) < 0 && !ret) {
				lverr_take(err);
				ret = -EIO;
			}
		}
	if (p->emu_changed) {
		(*writes)++;
		if (virDomainPinEmulator(dom, p->emu, p->maplen, VIR_DOMAIN_AFFECT_LIVE) < 0 && !ret) {
			lverr_take(err);
			ret = -EIO;
		}
	}
	for (unsigned i = p->nv; i-- > 0;)
		if (p->vcpu_changed[i]) {
			(*writes)++;
			if (virDomainPinVcpuFlags(dom, i, p->vcpu + (size_t)i * (size_t)p->maplen, p->maplen,
						  VIR_DOMAIN_AFFECT_LIVE) < 0 && !ret) {
				lverr_take(err);
				ret = -EIO;
			}
		}
	return ret;
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
	struct lverr le = { 0 };
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
		lverr_take(&le);
		snprintf(err, errsz, "libvirt: %.200s", le.msg);
		r = gone(dom, &le) ? -ESRCH : -EIO;
	}
	vmsrc_mark_dirty(va->vs, vm->uuid);
	if (dom)
		virDomainFree(dom);
	virConnectClose(conn);
	return r;
}

int vmapply_move(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
		 const struct plan_item *it, struct apply_result *res)
{
	struct vmapply *va = ctx;
	const struct snap_vm *vm = g->vm;
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	struct vmsrc_facts f;
	struct pins p = { 0 };
	unsigned char *target = NULL;
	char *to_cpus = xmalloc(CPULIST_BUFSZ), *from_cpus = xmalloc(CPULIST_BUFSZ);
	char to_mems[NODELIST_BUFSZ], old_nodeset[NODELIST_BUFSZ], mem_msg[200] = "", buf[64];
	bool mem_step, mem_changed = false, mem_refused = false, restrictive = false;
	const char *step = "";
	int ncpus, maplen, r;
	cpumask_t cur;
	unsigned writes = 0;
	struct lverr le = { 0 };
	int act;

	if (!vm) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: guest has no VM details");
		goto out;
	}
	if (!it->to_cpus || mask_empty(it->to_cpus) || mask_empty(&it->to_mems)) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: target cpuset is empty");
		goto out;
	}
	if (mask_format(it->to_cpus, to_cpus, CPULIST_BUFSZ) < 0 ||
	    mask_format(&it->to_mems, to_mems, sizeof(to_mems)) < 0 ||
	    mask_format(g->cpus, from_cpus, CPULIST_BUFSZ) < 0) {
		apply_result_set(res, APPLY_REFUSED, -ENOSPC, "refused: cannot format the target");
		goto out;
	}

	/* 1. Re-check. */
	if (vmsrc_facts(va->vs, vm->uuid, &f) < 0) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s is no longer running", vm->name);
		goto out;
	}
	conn = vmsrc_conn(va->vs);
	if (!conn) {
		apply_result_set(res, APPLY_FAILED, -ENOTCONN, "not connected to libvirt: cannot move domain %s", vm->name);
		goto out;
	}
	dom = virDomainLookupByUUIDString(conn, vm->uuid);
	act = dom ? virDomainIsActive(dom) : -1;
	if (act != 1) {
		lverr_take(&le);
		if (act == 0 || le.code == VIR_ERR_NO_DOMAIN)
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s is no longer running", vm->name);
		else
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: looking up domain %s: %s", vm->name, le.msg);
		goto out;
	}
	/* The instance the snapshot measured, not the agent's view now. */
	if ((int)virDomainGetID(dom) != (vm->domid >= 0 ? vm->domid : f.domid)) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s was restarted since the snapshot", vm->name);
		goto out;
	}
	/* The threads' affinity now: has anyone moved it since the snapshot? */
	r = vmproc_vm_affinity(&va->hp, vm, &cur, NULL);
	if (r < 0) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s: its QEMU threads are gone", vm->name);
		goto out;
	}
	if (!mask_equal(&cur, g->cpus)) {
		char *now_s = xmalloc(CPULIST_BUFSZ);

		mask_format(&cur, now_s, CPULIST_BUFSZ);
		apply_result_set(res, APPLY_CHANGED, 0, "domain %s now runs on CPUs %s (was %s); deciding again next cycle",
			vm->name, now_s, from_cpus);
		free(now_s);
		goto out;
	}
	ncpus = virNodeGetCPUMap(conn, NULL, NULL, 0);
	if (ncpus <= 0) {
		lverr_take(&le);
		apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: host CPU map: %s", le.msg);
		goto out;
	}
	if (mask_first(it->to_cpus->w, MASK_BITS(it->to_cpus)) >= ncpus ||
	    mask_next(it->to_cpus->w, MASK_BITS(it->to_cpus), ncpus - 1) >= 0) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: CPUs %s are not all among the host's %d",
			to_cpus, ncpus);
		goto out;
	}
	maplen = VIR_CPU_MAPLEN(ncpus);
	target = xcalloc(1, (size_t)maplen);
	mask_to_map(it->to_cpus, target, maplen, ncpus);

	/* 2. Save. */
	if (pins_read(dom, vm->nr_vcpus, maplen, &p) < 0) {
		lverr_take(&le);
		if (gone(dom, &le))
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped", vm->name);
		else
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: reading the pinning of %s: %s", vm->name, le.msg);
		goto out;
	}

	/* 3. Memory. libvirt's numatune must name the target, so its live
	 * view says where the memory belongs, not only the cgroup. */
	{
		nodemask_t cur_ns;

		mask_zero(&cur_ns);
		mem_step = !f.x.has_numatune || mask_parse(f.x.numatune_nodeset, &cur_ns) < 0 ||
			   !mask_equal(&cur_ns, &it->to_mems) || !mask_equal(&g->mems, &it->to_mems);
		if (f.x.has_numatune && f.x.numatune_nodeset[0])
			snprintf(old_nodeset, sizeof(old_nodeset), "%s", f.x.numatune_nodeset);
		else if (mask_format(&g->mems, old_nodeset, sizeof(old_nodeset)) < 0)
			old_nodeset[0] = '\0';
	}
	if (mem_step && f.x.nr_memnodes_bound) {
		mem_refused = true;
		snprintf(mem_msg, sizeof(mem_msg), "%u guest NUMA cell%s bound to host nodes by <memnode>: "
			 "libvirt cannot move that memory live", f.x.nr_memnodes_bound,
			 f.x.nr_memnodes_bound == 1 ? " is" : "s are");
	} else if (mem_step) {
		restrictive = !f.x.has_numatune;
		step = "numatune";
		writes++;
		if (set_nodeset(dom, to_mems, restrictive) == 0) {
			mem_changed = true;
		} else if (lverr_take(&le), gone(dom, &le)) {
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped", vm->name);
			goto out;
		} else if (!vmxml_numatune_movable(&f.x)) {
			/* the refusal its numatune predicts */
			mem_refused = true;
			snprintf(mem_msg, sizeof(mem_msg), "libvirt: %.180s", le.msg);
		} else {
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt refused memory nodes %s for %s: %s", to_mems,
				vm->name, le.msg);
			goto out;
		}
	}
	if (mem_refused) {
		/* Where its vCPUs run now (measured where acquire could), and
		 * where they would run on the target. */
		double before = g->locality;
		double after = vmapply_locality_on(snap, g, &it->to_nodes);
		bool move = va->cwm == VM_CPUS_ALWAYS || (va->cwm == VM_CPUS_LOCAL && after + 1e-9 >= before);

		if (!move) {
			apply_result_set(res, APPLY_NOT_APPLICABLE, -EOPNOTSUPP,
				"memory of %s cannot move to nodes %s (numatune %s): %s; CPUs left on %s "
				"(cpus_without_memory=%s: locality %.2f there, %.2f on the target)",
				vm->name, to_mems, f.x.has_numatune ? f.x.numatune_mode : "none", mem_msg, from_cpus,
				vm_cpus_without_memory_name(va->cwm), before, after);
			goto out;
		}
	}

	/* 4. CPUs. */
	for (unsigned i = 0; i < p.nv; i++) {
		if (!memcmp(p.vcpu + (size_t)i * (size_t)maplen, target, (size_t)maplen))
			continue;
		snprintf(buf, sizeof(buf), "vcpupin %u", i);
		step = buf;
		writes++;
		if (virDomainPinVcpuFlags(dom, i, target, maplen, VIR_DOMAIN_AFFECT_LIVE) < 0)
			goto fail;
		p.vcpu_changed[i] = true;
	}
	if (p.have_emu && memcmp(p.emu, target, (size_t)maplen)) {
		step = "emulatorpin";
		writes++;
		if (virDomainPinEmulator(dom, target, maplen, VIR_DOMAIN_AFFECT_LIVE) < 0)
			goto fail;
		p.emu_changed = true;
	}
	for (unsigned i = 0; i < p.nio; i++) {
		if (!memcmp(p.io + (size_t)i * (size_t)maplen, target, (size_t)maplen))
			continue;
		snprintf(buf, sizeof(buf), "iothreadpin %u", p.io_ids[i]);
		step = buf;
		writes++;
		if (virDomainPinIOThread(dom, p.io_ids[i], target, maplen, VIR_DOMAIN_AFFECT_LIVE) < 0)
			goto fail;
		p.io_changed[i] = true;
	}
	vmsrc_mark_dirty(va->vs, vm->uuid);
	if (mem_refused) {
		res->cpus_moved = true;
		apply_result_set(res, APPLY_NOT_APPLICABLE, -EOPNOTSUPP,
			"memory of %s cannot move to nodes %s: %s; CPUs moved %s -> %s (cpus_without_memory=%s)",
			vm->name, to_mems, mem_msg, from_cpus, to_cpus, vm_cpus_without_memory_name(va->cwm));
	} else {
		char vb[64];

		apply_result_set(res, APPLY_DONE, 0, "via libvirt: %u vCPU%s, emulator%s -> CPUs %s (vCPU0 was %s); "
			"memory %s%s%s", p.nv, p.nv == 1 ? "" : "s", p.nio ? ", iothreads" : "", to_cpus,
			p.nv ? fmt_map(p.vcpu, maplen, vb, sizeof(vb)) : "-",
			mem_changed ? "nodes " : "stays on nodes ", mem_changed ? to_mems : old_nodeset,
			mem_changed && restrictive ? " (numatune restrictive)" : "");
	}
	goto out;

fail:
	{
		struct lverr rle = { .msg = "" };
		bool vanished;
		int rr;

		lverr_take(&le);
		vanished = gone(dom, &le);
		rr = pins_restore(dom, &p, &writes, &rle);
		if (mem_changed && !vanished) {
			writes++;
			if (!old_nodeset[0]) {
				snprintf(rle.msg, sizeof(rle.msg), "the old nodeset is unknown");
				rr = rr ? rr : -EIO;
			} else if (set_nodeset(dom, old_nodeset, false) < 0 && !rr) {
				lverr_take(&rle);
				rr = -EIO;
			}
		}
		vmsrc_mark_dirty(va->vs, vm->uuid);
		if (vanished)
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped during the move", vm->name);
		else if (rr < 0)
			apply_result_set(res, APPLY_FAILED_PARTIAL, -EIO,
				"libvirt refused %s for %s: %s; restoring the old pinning/nodeset also failed: %s",
				step, vm->name, le.msg, rle.msg);
		else
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt refused %s for %s: %s; old pinning%s restored",
				step, vm->name, le.msg, mem_changed ? " and nodeset" : "");
	}
out:
	res->writes += writes;
	pins_free(&p);
	free(target);
	free(to_cpus);
	free(from_cpus);
	if (dom)
		virDomainFree(dom);
	if (conn)
		virConnectClose(conn);
	return res->status == APPLY_FAILED || res->status == APPLY_FAILED_PARTIAL ||
	       res->status == APPLY_REFUSED ? res->err : 0;
}
