#include "orchestrator/model/snapjson.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

json_t *snapj_real_or_null(double v)
{
	if (isnan(v) || isinf(v))
		return json_null();
	return json_real(round(v * 10000.0) / 10000.0);
}

json_t *snapj_cpumask(const cpumask_t *m)
{
	char *buf = xmalloc(CPULIST_BUFSZ);
	json_t *j;

	if (mask_format(m, buf, CPULIST_BUFSZ) < 0)
		buf[0] = '\0';
	j = json_string(buf);
	free(buf);
	return j;
}

/* The CPU lists of node N's groups by KEY (snap_cpu_core or
 * snap_cpu_llc), each group once, in the order of its lowest CPU. */
static json_t *cpu_groups(const struct snapshot *s, const struct snap_node *n,
			  int (*key)(const struct snapshot *, int))
{
	cpumask_t *m = xmalloc(sizeof(*m));
	json_t *a = json_array();

	mask_foreach(c, &n->cpus) {
		int k = key(s, c);
		bool first = true;

		mask_foreach(d, &n->cpus) {
			if (d >= c)
				break;
			if (key(s, d) == k)
				first = false;
		}
		if (!first || k < 0)
			continue;
		mask_zero(m);
		mask_foreach(d, &n->cpus)
			if (key(s, d) == k)
				mask_set(m, d);
		json_array_append_new(a, snapj_cpumask(m));
	}
	free(m);
	return a;
}

/* Its cores and last-level caches, where the host showed them. */
static void node_cputopo_json(const struct snapshot *s, const struct snap_node *n, json_t *o)
{
	json_object_set_new(o, "cores", json_integer(n->nr_cores));
	json_object_set_new(o, "threads_per_core", json_integer(n->threads_per_core));
	json_object_set_new(o, "core_cpus", cpu_groups(s, n, snap_cpu_core));
	json_object_set_new(o, "llcs", json_integer(n->nr_llcs));
	json_object_set_new(o, "llc_cpus", cpu_groups(s, n, snap_cpu_llc));
}

json_t *snapj_nodemask(const nodemask_t *m)
{
	char buf[NODELIST_BUFSZ];

	if (mask_format(m, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return json_string(buf);
}

json_t *snap_node_to_json(const struct snapshot *s, unsigned idx)
{
	const struct snap_node *n = &s->nodes[idx];
	json_t *dist = json_object();
	json_t *o;

	for (unsigned j = 0; j < s->nr_nodes; j++) {
		char key[16];

		snprintf(key, sizeof(key), "%d", s->nodes[j].id);
		json_object_set_new(dist, key, json_integer(snap_distance(s, idx, j)));
	}
	o = json_pack("{s:i, s:o, s:i, s:I, s:I, s:o, s:o, s:o}",
		      "id", n->id,
		      "cpus", snapj_cpumask(&n->cpus),
		      "nr_cpus", (int)n->nr_cpus,
		      "mem_total_bytes", (json_int_t)n->mem_total,
		      "mem_free_bytes", (json_int_t)n->mem_free,
		      "busy", snapj_real_or_null(n->busy),
		      "agent_cpus", snapj_real_or_null(n->agent_cpus),
		      "distance", dist);
	if (n->nr_hpools) {
		json_t *hp = json_array();

		for (unsigned i = 0; i < n->nr_hpools && i < SNAP_HP_MAX; i++)
			json_array_append_new(hp, json_pack("{s:I, s:I, s:I, s:I}",
							    "page_size_bytes", (json_int_t)n->hpools[i].page,
							    "total", (json_int_t)n->hpools[i].total,
							    "free", (json_int_t)n->hpools[i].free,
							    "surplus", (json_int_t)n->hpools[i].surplus));
		json_object_set_new(o, "hugepages", hp);
	}
	if (n->nr_cores)
		node_cputopo_json(s, n, o);
	return o;
}

static json_t *vm_to_json(const struct snap_vm *vm)
{
	json_t *vcpus = json_array(), *emu = json_array(), *io = json_array();

	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		json_array_append_new(vcpus, json_pack("{s:i, s:i, s:o}", "vcpu", (int)i,
						       "tid", (int)vm->vcpu_tids[i],
						       "cpu_use", snapj_real_or_null(vm->vcpu_use ? vm->vcpu_use[i] : NAN)));
	for (unsigned i = 0; i < vm->nr_emulator_tids; i++)
		json_array_append_new(emu, json_integer(vm->emulator_tids[i]));
	for (unsigned i = 0; i < vm->nr_iothreads; i++)
		json_array_append_new(io, json_pack("{s:i, s:i}", "id", (int)vm->iothread_ids[i],
						    "tid", (int)vm->iothread_tids[i]));
	return json_pack("{s:s, s:s, s:i, s:o, s:o, s:o, s:s, s:s, s:s}",
			 "uuid", vm->uuid, "name", vm->name, "qemu_pid", (int)vm->qemu_pid,
			 "vcpus", vcpus, "emulator_tids", emu, "iothreads", io,
			 "numatune_mode", vm->numatune_mode, "numatune_nodeset", vm->numatune_nodeset,
			 "mem_source", vm->mem_source);
}

json_t *gpol_to_json(const struct guest_policy *p)
{
	json_t *o = json_pack("{s:s, s:s}", "mode", gpol_mode_name(p->mode), "source", gpol_source_name(p->source));

	if (p->mode == GPOL_PINNED)
		json_object_set_new(o, "nodes", snapj_nodemask(&p->nodes));
	/* The default (prefer) is not shown. */
	if (p->devices != GPOL_DEV_PREFER)
		json_object_set_new(o, "devices", json_string(gpol_devices_name(p->devices)));
	return o;
}

/* The kernel's flow of a guest's memory over the last window (only a
 * measured one is shown: no object, no measurement). */
static json_t *kflow_to_json(const struct snapshot *s, const struct snap_kflow *f)
{
	json_t *d = json_object();

	for (unsigned n = 0; n < s->nr_nodes; n++) {
		char key[16];

		snprintf(key, sizeof(key), "%d", s->nodes[n].id);
		json_object_set_new(d, key, json_integer((json_int_t)f->delta[n]));
	}
	return json_pack("{s:f, s:o, s:I, s:I, s:I, s:f}", "window_s", f->window_s, "delta_bytes_by_node", d,
			 "arrived_bytes", (json_int_t)f->arrived, "left_bytes", (json_int_t)f->left,
			 "moved_bytes", (json_int_t)f->moved,
			 "moved_bytes_per_s", f->window_s > 0 ? (double)f->moved / f->window_s : 0.0);
}

json_t *snap_guest_to_json(const struct snapshot *s, const struct snap_guest *g)
{
	json_t *mem = g->mem_unknown ? json_null() : json_object(), *pol, *o;

	for (unsigned n = 0; !g->mem_unknown && n < s->nr_nodes; n++) {
		char key[16];

		snprintf(key, sizeof(key), "%d", s->nodes[n].id);
		json_object_set_new(mem, key, json_integer((json_int_t)g->mem_node[n]));
	}
	pol = gpol_to_json(&g->policy);
	/* Memory not measured is null, never a 0 the agent did not read. */
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o}",
		      "id", g->id,
		      "kind", snap_kind_name(g->kind),
		      "runtime", g->runtime,
		      "name", g->name,
		      "cgroup", g->cgroup ? g->cgroup : "",
		      "nr_threads", (int)g->nr_threads,
		      "nr_procs", (int)g->nr_procs,
		      "cpu_use", snapj_real_or_null(g->cpu_use),
		      "mem_bytes_by_node", mem,
		      "mem_total_bytes", g->mem_unknown ? json_null() : json_integer((json_int_t)g->mem_total),
		      "mem_in_cpuset_bytes",
		      g->mem_unknown ? json_null() : json_integer((json_int_t)g->mem_in_cpuset_bytes),
		      "mem_in_cpuset", snapj_real_or_null(g->mem_in_cpuset),
		      "locality", snapj_real_or_null(g->locality),
		      "locality_source", snap_loc_source_name(g->locality_source),
		      "cpus", snapj_cpumask(g->cpus),
		      "mems", snapj_nodemask(&g->mems),
		      "cpu_nodes", snapj_nodemask(&g->cpu_nodes),
		      "policy", pol);
	if (g->cpu_node) {
		json_t *cn = json_object();

		for (unsigned n = 0; n < s->nr_nodes; n++) {
			char key[16];

			snprintf(key, sizeof(key), "%d", s->nodes[n].id);
			json_object_set_new(cn, key, json_real(g->cpu_node[n]));
		}
		json_object_set_new(o, "cpu_use_by_node", cn);
	}
	if (g->ns[0])
		json_object_set_new(o, "namespace", json_string(g->ns));
	if (g->pod[0])
		json_object_set_new(o, "pod", json_string(g->pod));
	if (g->owner[0]) {
		json_object_set_new(o, "owner", json_string(g->owner));
		json_object_set_new(o, "owner_reason", json_string(g->owner_reason));
	}
	if (g->busy_measured)
		json_object_set_new(o, "busy_threads", json_integer(g->busy_threads));
	if (g->nr_devices || g->dev_all) {
		json_t *dv = json_pack("{s:i, s:o}", "count", (int)g->nr_devices, "nodes", snapj_nodemask(&g->dev_nodes));

		if (g->dev_all)
			json_object_set_new(dv, "all", json_true());
		if (!mask_empty(&g->dev_nodes) && !mask_empty(&g->cpu_nodes))
			json_object_set_new(dv, "local", json_boolean(mask_intersects(&g->cpu_nodes, &g->dev_nodes)));
		json_object_set_new(o, "devices", dv);
	}
	if (g->huge_total && g->huge_node) {
		json_t *hn = json_object();

		for (unsigned n = 0; n < s->nr_nodes; n++) {
			char key[16];

			snprintf(key, sizeof(key), "%d", s->nodes[n].id);
			json_object_set_new(hn, key, json_integer((json_int_t)g->huge_node[n]));
		}
		json_object_set_new(o, "hugetlb_bytes_by_node", hn);
		json_object_set_new(o, "hugetlb_total_bytes", json_integer((json_int_t)g->huge_total));
		json_object_set_new(o, "hugetlb_page_size_bytes", json_integer((json_int_t)g->huge_page));
	}
	if (g->nr_parts) {
		json_t *a = json_array();

		for (unsigned i = 0; i < g->nr_parts; i++) {
			const struct snap_part *p = &g->parts[i];

			json_array_append_new(a, json_pack("{s:s, s:o, s:o, s:o, s:i, s:o}", "cgroup", p->cgroup,
							   "mems", snapj_nodemask(&p->mems),
							   "mem_total_bytes", p->mem_node ? json_integer((json_int_t)p->mem_total) : json_null(),
							   "cpu_use", p->cpu_node ? json_real(p->cpu_use) : json_null(),
							   "busy_threads", (int)p->busy_threads,
							   "locality", snapj_real_or_null(snap_part_locality(s, p))));
		}
		json_object_set_new(o, "parts", a);
	}
	if (g->kflow)
		json_object_set_new(o, "kernel_flow", kflow_to_json(s, g->kflow));
	if (g->vm)
		json_object_set_new(o, "vm", vm_to_json(g->vm));
	return o;
}

json_t *snap_to_json(const struct snapshot *s, unsigned flags)
{
	json_t *o = json_object(), *nodes = json_array();

	if (!(flags & SNAPJ_STABLE)) {
		json_object_set_new(o, "seq", json_integer((json_int_t)s->seq));
		json_object_set_new(o, "time_ns", json_integer(s->real_ns));
		json_object_set_new(o, "window_s", snapj_real_or_null(s->window_s));
	}
	json_object_set_new(o, "cgroup_layout", json_string(cgh_layout_name(s->layout)));
	for (unsigned i = 0; i < s->nr_nodes; i++)
		json_array_append_new(nodes, snap_node_to_json(s, i));
	json_object_set_new(o, "nodes", nodes);
	if (!(flags & SNAPJ_NO_GUESTS)) {
		json_t *guests = json_array();

		for (unsigned i = 0; i < s->nr_guests; i++)
			json_array_append_new(guests, snap_guest_to_json(s, &s->guests[i]));
		json_object_set_new(o, "guests", guests);
	}
	if (s->nr_warnings) {
		json_t *w = json_array();

		for (unsigned i = 0; i < s->nr_warnings; i++)
			json_array_append_new(w, json_string(s->warnings[i]));
		json_object_set_new(o, "warnings", w);
	}
	return o;
}
