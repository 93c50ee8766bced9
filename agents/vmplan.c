#include "vmplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

void vmpins_free(struct vmpins *p)
{
	free(p->vcpu);
	free(p->emu);
	free(p->io_ids);
	free(p->io);
}

int vmplan_maplen(int ncpus)
{
	return (ncpus + 7) / 8;
}

static void mask_to_map(const cpumask_t *m, unsigned char *map, int maplen, int ncpus)
{
	memset(map, 0, (size_t)maplen);
	mask_foreach(c, m)
		if (c < ncpus)
			map[c / 8] |= (unsigned char)(1u << (c % 8));
}

const char *vmplan_fmt_map(const unsigned char *map, int maplen, char *buf, size_t sz)
{
	cpumask_t m;

	mask_zero(&m);
	for (int c = 0; c < maplen * 8 && c < MASK_MAX_CPUS; c++)
		if (map[c / 8] & (1u << (c % 8)))
			mask_set(&m, c);
	if (mask_format(&m, buf, sz) < 0)
		snprintf(buf, sz, "?");
	return buf;
}

const char *vmplan_step_name(const struct vmstep *s, char *buf, size_t sz)
{
	switch (s->kind) {
	case VMSTEP_NUMATUNE: snprintf(buf, sz, "numatune"); break;
	case VMSTEP_VCPU: snprintf(buf, sz, "vcpupin %u", s->id); break;
	case VMSTEP_EMULATOR: snprintf(buf, sz, "emulatorpin"); break;
	case VMSTEP_IOTHREAD: snprintf(buf, sz, "iothreadpin %u", s->id); break;
	}
	return buf;
}

static void add(struct vmplan *p, enum vmstep_kind kind, unsigned id, const unsigned char *old)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->s = xrealloc(p->s, p->cap * sizeof(*p->s));
	}
	p->s[p->n++] = (struct vmstep){ .kind = kind, .id = id, .old = old };
}

/* The memory step. libvirt's numatune must name the target, so its live
 * view says where the memory belongs, not only the cgroup: the step is
 * made unless numatune already names exactly the target and the guest's
 * memory is there. */
static void plan_memory(struct vmplan *p, const struct vmplan_in *in)
{
	const struct vmxml_info *x = in->x;
	nodemask_t cur_ns;
	bool mem_step;

	mask_zero(&cur_ns);
	mem_step = !x->has_numatune || mask_parse(x->numatune_nodeset, &cur_ns) < 0 ||
		   !mask_equal(&cur_ns, in->to_mems) || !mask_equal(in->mems, in->to_mems);
	if (x->has_numatune && x->numatune_nodeset[0])
		snprintf(p->old_nodeset, sizeof(p->old_nodeset), "%s", x->numatune_nodeset);
	else if (mask_format(in->mems, p->old_nodeset, sizeof(p->old_nodeset)) < 0)
		p->old_nodeset[0] = '\0';
	if (mem_step && x->nr_memnodes_bound) {
		p->mem_refused = true;
		snprintf(p->mem_msg, sizeof(p->mem_msg), "%u guest NUMA cell%s bound to host nodes by <memnode>: "
			 "libvirt cannot move that memory live", x->nr_memnodes_bound,
			 x->nr_memnodes_bound == 1 ? " is" : "s are");
	} else if (mem_step) {
		p->restrictive = !x->has_numatune;
		p->mem_movable = vmxml_numatune_movable(x);
		add(p, VMSTEP_NUMATUNE, 0, NULL);
	}
}

void vmplan_make(struct vmplan *p, const struct vmplan_in *in, const struct vmpins *now)
{
	size_t ml;

	memset(p, 0, sizeof(*p));
	p->in = in;
	p->maplen = vmplan_maplen(in->ncpus);
	ml = (size_t)p->maplen;
	p->target = xcalloc(1, ml);
	mask_to_map(in->to_cpus, p->target, p->maplen, in->ncpus);
	p->cpus_follow = in->cwm == VM_CPUS_ALWAYS ||
			 (in->cwm == VM_CPUS_LOCAL && in->locality_target + 1e-9 >= in->locality_now);
	plan_memory(p, in);
	for (unsigned i = 0; i < now->nv; i++)
		if (memcmp(now->vcpu + i * ml, p->target, ml))
			add(p, VMSTEP_VCPU, i, now->vcpu + i * ml);
	if (now->have_emu && memcmp(now->emu, p->target, ml))
		add(p, VMSTEP_EMULATOR, 0, now->emu);
	for (unsigned i = 0; i < now->nio; i++)
		if (memcmp(now->io + i * ml, p->target, ml))
			add(p, VMSTEP_IOTHREAD, now->io_ids[i], now->io + i * ml);
}

void vmplan_free(struct vmplan *p)
{
	free(p->s);
	free(p->target);
	p->s = NULL;
	p->target = NULL;
	p->n = p->cap = 0;
}
