#include "vmjournal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

int vmj_read(const struct vmlv *lv, void *dom, unsigned nvcpus, int maplen, struct vmpins *p)
{
	int n;

	memset(p, 0, sizeof(*p));
	p->maplen = maplen;
	p->vcpu = xcalloc(nvcpus ? nvcpus : 1, (size_t)maplen);
	n = lv->vcpu_pins(dom, nvcpus, p->vcpu, maplen);
	if (n < 0)
		return -EIO;
	p->nv = (unsigned)n < nvcpus ? (unsigned)n : nvcpus;
	p->emu = xcalloc(1, (size_t)maplen);
	n = lv->emulator_pin(dom, p->emu, maplen);
	if (n < 0)
		return -EIO;
	p->have_emu = n > 0;
	n = lv->iothreads(dom, maplen, &p->io_ids, &p->io);
	if (n < 0)
		return -EIO;
	p->nio = (unsigned)n;
	return 0;
}

/* One move in progress. */
struct move {
	const struct vmlv *lv;
	void *dom;
	const struct vmplan_in *in;
	struct vmpins now;
	struct vmplan p;
	unsigned nj, *j;               /* the journal: indices of the steps made, oldest first */
	unsigned writes;               /* calls that write, restores included */
	struct vmlv_err le;            /* the failed call's error */
	bool mem_changed, mem_refused;
	char mem_msg[200];
};

static int pin(const struct move *m, const struct vmstep *s, const unsigned char *map)
{
	switch (s->kind) {
	case VMSTEP_VCPU: return m->lv->pin_vcpu(m->dom, s->id, map, m->p.maplen);
	case VMSTEP_EMULATOR: return m->lv->pin_emulator(m->dom, map, m->p.maplen);
	case VMSTEP_IOTHREAD: return m->lv->pin_iothread(m->dom, s->id, map, m->p.maplen);
	case VMSTEP_NUMATUNE: break;
	}
	return -1;
}

/* Step I: its call, journaled if it was made; -EIO with its error in
 * m->le if not. */
static int step(struct move *m, unsigned i)
{
	const struct vmstep *s = &m->p.s[i];
	int r;

	m->writes++;
	if (s->kind == VMSTEP_NUMATUNE)
		r = m->lv->set_numa(m->dom, m->in->to_mems_s, m->p.restrictive);
	else
		r = pin(m, s, m->p.target);
	if (r < 0) {
		m->lv->error(&m->le);
		return -EIO;
	}
	m->j[m->nj++] = i;
	return 0;
}

/* Put back what the journal's steps replaced, newest first: every pin
 * (a failure does not stop the others), then the old nodeset unless the
 * domain is gone (restored without the mode: libvirt keeps the one the
 * step set). Returns 0 or -EIO with the first failure's error in E. */
static int revert(struct move *m, bool vanished, struct vmlv_err *e)
{
	int ret = 0;

	for (unsigned k = m->nj; k-- > 0;) {
		const struct vmstep *s = &m->p.s[m->j[k]];
		int r;

		if (s->kind == VMSTEP_NUMATUNE) {
			if (vanished)
				continue;
			m->writes++;
			if (!m->p.old_nodeset[0]) {
				snprintf(e->msg, sizeof(e->msg), "the old nodeset is unknown");
				ret = ret ? ret : -EIO;
				continue;
			}
			r = m->lv->set_numa(m->dom, m->p.old_nodeset, false);
		} else {
			m->writes++;
			r = pin(m, s, s->old);
		}
		if (r < 0 && !ret) {
			m->lv->error(e);
			ret = -EIO;
		}
	}
	return ret;
}

/* The numatune step, if the plan has one. 0 to go on to the CPUs (the
 * memory moved, or libvirt cannot move it: m->mem_refused), else -1 with
 * RES filled. */
static int carry_memory(struct move *m, struct apply_result *res)
{
	const struct vmplan_in *in = m->in;

	if (m->p.mem_refused) {
		m->mem_refused = true;
		snprintf(m->mem_msg, sizeof(m->mem_msg), "%s", m->p.mem_msg);
		return 0;
	}
	if (!m->p.n || m->p.s[0].kind != VMSTEP_NUMATUNE)
		return 0;
	if (step(m, 0) == 0) {
		m->mem_changed = true;
		return 0;
	}
	if (m->lv->gone(m->dom, &m->le)) {
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped", in->name);
		return -1;
	}
	if (!m->p.mem_movable) {
		/* the refusal its numatune predicts */
		m->mem_refused = true;
		snprintf(m->mem_msg, sizeof(m->mem_msg), "libvirt: %.180s", m->le.msg);
		return 0;
	}
	apply_result_set(res, APPLY_FAILED, -EIO, "libvirt refused memory nodes %s for %s: %s", in->to_mems_s,
			 in->name, m->le.msg);
	return -1;
}

/* A pin failed (step I): undo, and say what happened. */
static void carry_failed(struct move *m, unsigned i, struct apply_result *res)
{
	const struct vmplan_in *in = m->in;
	struct vmlv_err rle = { .msg = "" };
	bool vanished = m->lv->gone(m->dom, &m->le);
	int rr = revert(m, vanished, &rle);
	char name[64];

	vmplan_step_name(&m->p.s[i], name, sizeof(name));
	if (vanished)
		apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped during the move", in->name);
	else if (rr < 0)
		apply_result_set(res, APPLY_FAILED_PARTIAL, -EIO,
			"libvirt refused %s for %s: %s; restoring the old pinning/nodeset also failed: %s",
			name, in->name, m->le.msg, rle.msg);
	else
		apply_result_set(res, APPLY_FAILED, -EIO, "libvirt refused %s for %s: %s; old pinning%s restored",
			name, in->name, m->le.msg, m->mem_changed ? " and nodeset" : "");
}

static void carry_done(const struct move *m, struct apply_result *res)
{
	const struct vmplan_in *in = m->in;
	const struct vmpins *p = &m->now;
	char vb[64];

	if (m->mem_refused) {
		res->cpus_moved = true;
		apply_result_set(res, APPLY_NOT_APPLICABLE, -EOPNOTSUPP,
			"memory of %s cannot move to nodes %s: %s; CPUs moved %s -> %s (cpus_without_memory=%s)",
			in->name, in->to_mems_s, m->mem_msg, in->from_cpus_s, in->to_cpus_s,
			vm_cpus_without_memory_name(in->cwm));
		return;
	}
	apply_result_set(res, APPLY_DONE, 0, "via libvirt: %u vCPU%s, emulator%s -> CPUs %s (vCPU0 was %s); "
		"memory %s%s%s", p->nv, p->nv == 1 ? "" : "s", p->nio ? ", iothreads" : "", in->to_cpus_s,
		p->nv ? vmplan_fmt_map(p->vcpu, p->maplen, vb, sizeof(vb)) : "-",
		m->mem_changed ? "nodes " : "stays on nodes ", m->mem_changed ? in->to_mems_s : m->p.old_nodeset,
		m->mem_changed && m->p.restrictive ? " (numatune restrictive)" : "");
}

/* After the memory step: the pins, unless the memory cannot follow and
 * cpus_without_memory keeps the CPUs where they are. */
static void carry_cpus(struct move *m, struct apply_result *res, bool *touched)
{
	const struct vmplan_in *in = m->in;

	if (m->mem_refused && !m->p.cpus_follow) {
		apply_result_set(res, APPLY_NOT_APPLICABLE, -EOPNOTSUPP,
			"memory of %s cannot move to nodes %s (numatune %s): %s; CPUs left on %s "
			"(cpus_without_memory=%s: locality %.2f there, %.2f on the target)",
			in->name, in->to_mems_s, in->x->has_numatune ? in->x->numatune_mode : "none", m->mem_msg,
			in->from_cpus_s, vm_cpus_without_memory_name(in->cwm), in->locality_now, in->locality_target);
		return;
	}
	for (unsigned i = 0; i < m->p.n; i++) {
		if (m->p.s[i].kind == VMSTEP_NUMATUNE)
			continue;       /* made (or refused) above */
		if (step(m, i) < 0) {
			*touched = true;
			carry_failed(m, i, res);
			return;
		}
	}
	*touched = true;
	carry_done(m, res);
}

void vmj_carry(const struct vmlv *lv, void *dom, const struct vmplan_in *in, struct apply_result *res,
	       bool *touched)
{
	struct move m = { .lv = lv, .dom = dom, .in = in };

	*touched = false;
	if (vmj_read(lv, dom, in->nr_vcpus, vmplan_maplen(in->ncpus), &m.now) < 0) {
		lv->error(&m.le);
		if (lv->gone(dom, &m.le))
			apply_result_set(res, APPLY_VANISHED, 0, "domain %s stopped", in->name);
		else
			apply_result_set(res, APPLY_FAILED, -EIO, "libvirt: reading the pinning of %s: %s", in->name,
					 m.le.msg);
		vmpins_free(&m.now);
		return;
	}
	vmplan_make(&m.p, in, &m.now);
	m.j = xcalloc(m.p.n ? m.p.n : 1, sizeof(*m.j));
	if (carry_memory(&m, res) == 0)
		carry_cpus(&m, res, touched);
	res->writes += m.writes;
	free(m.j);
	vmplan_free(&m.p);
	vmpins_free(&m.now);
}
