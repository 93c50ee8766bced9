#include "orchestrator/actuator/apply.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/actuator/cgjournal.h"
#include "orchestrator/actuator/cgplan.h"
#include "orchestrator/actuator/cgwrite.h"
#include "orchestrator/base/clock.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/parse.h"
#include "orchestrator/model/policy.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/numamig.h"
#include "orchestrator/base/strtab.h"

struct applier {
	struct host_paths hp;
	struct cg_hier h;
	struct apply_opts opts;
	struct cgw *w;
	struct apply_vm_ops vm;
	bool have_vm;
	/* applier_begin_cycle: room to come may be counted (a mover waits for
	 * it), and what this cycle's moves so far will take off (+) and bring
	 * onto (−) each node, by node index of the cycle's snapshot. */
	bool room_to_come;
	int64_t *cyc_flow;
	unsigned cyc_n;
	/* Huge page bytes this cycle's moves so far take out of each node's
	 * pools: [index * SNAP_HP_MAX + pool]. */
	int64_t *cyc_huge;
};

static const char *const status_names[] = {
	[APPLY_DONE] = "moved",
	[APPLY_VANISHED] = "vanished",
	[APPLY_CHANGED] = "changed",
	[APPLY_NO_ROOM] = "no_room",
	[APPLY_FAILED] = "failed",
	[APPLY_FAILED_PARTIAL] = "failed_partial",
	[APPLY_NOT_APPLICABLE] = "not_applicable",
	[APPLY_REFUSED] = "refused",
};
STRTAB_NAME(apply_status_name, enum apply_status, status_names)

int applier_new(const struct host_paths *hp, const struct cg_hier *h,
		const struct apply_opts *opts, struct applier **out)
{
	struct applier *a;
	int r;

	if (!opts->read_meminfo)
		return -EINVAL;
	a = xcalloc(1, sizeof(*a));
	a->hp = *hp;
	a->h = *h;
	a->opts = *opts;
	/* The scopes live in the writer (its own copy), which enforces them. */
	a->opts.scopes = NULL;
	a->opts.nr_scopes = 0;
	r = cgw_new(h, hp->live, opts->nr_scopes, opts->scopes, &a->w);
	if (r < 0) {
		applier_free(a);
		return r;
	}
	*out = a;
	return 0;
}

void applier_free(struct applier *a)
{
	if (!a)
		return;
	cgw_free(a->w);
	free(a->cyc_flow);
	free(a->cyc_huge);
	free(a);
}

void applier_begin_cycle(struct applier *a, const struct snapshot *snap, bool room_to_come)
{
	free(a->cyc_flow);
	a->cyc_n = snap->nr_nodes;
	a->cyc_flow = xcalloc(a->cyc_n ? a->cyc_n : 1, sizeof(*a->cyc_flow));
	free(a->cyc_huge);
	a->cyc_huge = xcalloc((a->cyc_n ? a->cyc_n : 1) * SNAP_HP_MAX, sizeof(*a->cyc_huge));
	a->room_to_come = room_to_come;
}

/* A move of this cycle that will migrate: its memory off the target
 * leaves its nodes, and arrives where the mover puts it
 * (mover_pick_target), for the moves after it (recheck_room). */
static void cycle_flow_add(struct applier *a, const struct snapshot *snap, const struct plan_item *it)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];

	if (!a->cyc_flow || a->cyc_n != snap->nr_nodes || !g->mem_node)
		return;
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		uint64_t h;
		int to, t;

		if (!g->mem_node[n] || mask_test(&it->to_mems, snap->nodes[n].id))
			continue;
		to = it->first_bytes ? it->first_node : mover_pick_target(&it->to_mems, snap->nodes[n].id);
		t = to >= 0 ? snap_node_index(snap, to) : -1;
		/* Huge pages come out of the target's pool, not its free
		 * memory, and go back to their own node's pool. */
		h = g->huge_node ? g->huge_node[n] : 0;
		a->cyc_flow[n] += (int64_t)(g->mem_node[n] - h);
		if (t >= 0)
			a->cyc_flow[t] -= (int64_t)(g->mem_node[n] - h);
		if (h && t >= 0 && a->cyc_huge) {
			const struct snap_hpool *hp = snap_node_hpool(&snap->nodes[t], g->huge_page);

			if (hp)
				a->cyc_huge[(size_t)t * SNAP_HP_MAX + (size_t)(hp - snap->nodes[t].hpools)] += (int64_t)h;
		}
	}
}

void applier_set_vm_ops(struct applier *a, const struct apply_vm_ops *ops)
{
	if (ops) {
		a->vm = *ops;
		a->have_vm = true;
	} else {
		a->have_vm = false;
	}
}

unsigned long applier_write_count(const struct applier *a)
{
	return cgw_write_count(a->w);
}

static int read_file_value(const struct applier *a, enum cg_ctrl c, const char *rel,
			   const char *file, char **out)
{
	return cgh_read_value(&a->h, c, rel, file, out);
}

/* Pre-order list of REL and every cgroup below it in the cpuset tree;
 * DEPTHS (if not NULL) gets each one's depth below REL (cgplan.h). */
static int collect_subtree(const struct applier *a, const char *rel, unsigned *n, char ***out,
			   unsigned **depths, unsigned depth)
{
	char path[PATH_MAX];
	DIR *d;
	int r;

	if (depth > 32)
		return -ELOOP;
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	if (depths) {
		*depths = xrealloc(*depths, (*n + 1) * sizeof(unsigned));
		(*depths)[*n] = depth;
	}
	(*out)[(*n)++] = xstrdup(rel);
	r = cgh_path(&a->h, CGC_CPUSET, rel, NULL, path, sizeof(path));
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));) {
		char child[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(child, sizeof(child), "%s%s%s", strcmp(rel, "/") ? rel : "", "/",
			     de->d_name) >= (int)sizeof(child))
			continue;
		r = collect_subtree(a, child, n, out, depths, depth + 1);
		if (r < 0 && r != -ENOENT) {
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return 0;
}

static int freeze(struct applier *a, const char *rel, bool on)
{
	if (!cgh_has(&a->h, CGC_FREEZER))
		return -ENODEV;
	if (a->h.v2[CGC_FREEZER])
		return cgw_write(a->w, CGC_FREEZER, rel, "cgroup.freeze", on ? "1" : "0");
	return cgw_write(a->w, CGC_FREEZER, rel, "freezer.state", on ? "FROZEN" : "THAWED");
}

/* Move pages that sit outside TO onto TO, for every process of the
 * subtree. Used when the mems do not change, so the kernel would not
 * migrate anything by itself. */
static int migrate_processes(struct applier *a, const struct snapshot *snap, unsigned n,
			     char **sub, const nodemask_t *to, const nodemask_t *const *sub_to)
{
	int *from_ids = xcalloc(snap->nr_nodes, sizeof(int));
	int *to_ids = xcalloc(snap->nr_nodes, sizeof(int));
	unsigned nfrom = 0, nto = 0, moved = 0;
	int ret = 0;

	if (!a->hp.live)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		char *procs = NULL;
		/* A part's processes go to its own nodes (plan_part). */
		const nodemask_t *dest = sub_to && sub_to[i] ? sub_to[i] : to;

		nfrom = nto = 0;
		for (unsigned k = 0; k < snap->nr_nodes; k++) {
			int id = snap->nodes[k].id;

			if (mask_test(dest, id))
				to_ids[nto++] = id;
			else if (snap->nodes[k].mem_total)
				from_ids[nfrom++] = id;
		}
		if (!nfrom || !nto)
			continue;
		if (read_file_value(a, CGC_CPUSET, sub[i], "cgroup.procs", &procs) < 0)
			continue;
		for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t;
		     t = strtok_r(NULL, "\n", &save)) {
			uint64_t pid;
			int r;

			if (parse_u64(t, &pid) < 0)
				continue;
			r = numamig_pages((pid_t)pid, from_ids, nfrom, to_ids, nto);
			if (r == 0)
				moved++;
			else if (r != -ESRCH)
				ret = r;
		}
		free(procs);
	}
	log_debug("migrated pages of %u processes", moved);
	if (moved)
		ret = 0;
out:
	free(from_ids);
	free(to_ids);
	return ret;
}

void apply_result_set(struct apply_result *res, enum apply_status st, int err, const char *fmt, ...)
{
	va_list ap;

	res->status = st;
	res->err = err;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

/* The effective set: v1 cpuset.effective_WHAT, v2 cpuset.WHAT.effective,
 * or cpuset.WHAT on old kernels without effective files. */
static int read_effective(const struct applier *a, const char *rel, const char *what, char **out)
{
	char file[32];
	int r;

	if (a->h.v2[CGC_CPUSET])
		snprintf(file, sizeof(file), "cpuset.%s.effective", what);
	else
		snprintf(file, sizeof(file), "cpuset.effective_%s", what);
	r = read_file_value(a, CGC_CPUSET, rel, file, out);
	if (r != -ENOENT)
		return r;
	snprintf(file, sizeof(file), "cpuset.%s", what);
	return read_file_value(a, CGC_CPUSET, rel, file, out);
}

static bool is_gone(int r)
{
	return r == -ENOENT || r == -ENODEV || r == -ESRCH;
}

/* Room re-check with fresh meminfo: the memory that will move onto TO must
 * fit above the reserve on those nodes. A negligible migration is none
 * (plan_migration_negligible): refusing a guest whose memory is all but
 * there because its own node is full would hold it back a whole cycle
 * for nothing ("0 MiB must move"). A hugetlb guest's huge
 * pages must fit the free pages of their size on TO (less what this
 * cycle's moves before it take): where there are none the kernel would
 * make surplus pages out of free memory and change the pools. *HUGE_TIGHT
 * (may be NULL): it holds huge pages and TO will have no free page of
 * their size left once they are there — no place to bind it strictly. */
static int recheck_room(struct applier *a, const struct snapshot *snap, const struct plan_item *it,
			bool *wait, bool *huge_tight, char *why, size_t whysz)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	struct snap_node *nodes;
	uint64_t room = 0, hmig = 0, hroom = 0, omig;
	int64_t tocome = 0;
	nodemask_t hnone;
	int r;

	*wait = false;
	if (huge_tight)
		*huge_tight = false;
	mask_zero(&hnone);
	for (unsigned n = 0; g->huge_node && n < snap->nr_nodes; n++)
		if (!mask_test(&it->to_mems, snap->nodes[n].id))
			hmig += g->huge_node[n];
	if ((it->migrate_bytes == 0 || plan_migration_negligible(it->migrate_bytes, g->mem_total)) && !g->huge_total)
		return 0;
	nodes = xcalloc(snap->nr_nodes, sizeof(*nodes));
	memcpy(nodes, snap->nodes, snap->nr_nodes * sizeof(*nodes));
	r = a->opts.read_meminfo(&a->hp, nodes, snap->nr_nodes);
	if (r < 0) {
		free(nodes);
		snprintf(why, whysz, "cannot re-read node memory: %s", strerror(-r));
		return r;
	}
	for (unsigned i = 0; i < snap->nr_nodes; i++) {
		if (!mask_test(&it->to_mems, nodes[i].id))
			continue;
		uint64_t keep = policy_reserve(a->opts.min_free_bytes, a->opts.min_free_share, nodes[i].mem_total);
		const struct snap_hpool *hp = g->huge_total ? snap_node_hpool(&nodes[i], g->huge_page) : NULL;

		if (nodes[i].mem_free > keep)
			room += nodes[i].mem_free - keep;
		if (hp) {
			const struct snap_hpool *sp = snap_node_hpool(&snap->nodes[i], g->huge_page);
			int64_t taken = sp && a->cyc_huge && a->cyc_n == snap->nr_nodes ?
					a->cyc_huge[(size_t)i * SNAP_HP_MAX + (size_t)(sp - snap->nodes[i].hpools)] : 0;
			int64_t f = (int64_t)(hp->free * hp->page) - taken;

			if (f > 0)
				hroom += (uint64_t)f;
			else
				mask_set(&hnone, nodes[i].id);
		} else if (g->huge_total && nodes[i].mem_total) {
			mask_set(&hnone, nodes[i].id);
		}
		/* Room to come: other guests' pages that live jobs, and this
		 * cycle's moves before this one, take off the node, less what
		 * they bring onto it (snap_node.mem_leaving). */
		tocome += (int64_t)snap->nodes[i].mem_leaving - (int64_t)snap->nodes[i].mem_coming +
			  (a->cyc_flow && a->cyc_n == snap->nr_nodes ? a->cyc_flow[i] : 0);
	}
	free(nodes);
	if (huge_tight && g->huge_total && hroom < hmig + g->huge_page)
		*huge_tight = true;
	if (hmig && hroom < hmig) {
		char nl[48];

		if (mask_empty(&hnone) || mask_format(&hnone, nl, sizeof(nl)) < 0)
			snprintf(why, whysz, "target nodes have %llu MiB of free %llu kB huge pages, %llu MiB of its huge pages must move",
				 (unsigned long long)(hroom >> 20), (unsigned long long)(g->huge_page >> 10),
				 (unsigned long long)(hmig >> 20));
		else
			snprintf(why, whysz, "no free %llu kB huge pages on node %s (%llu MiB of free ones on the targets, %llu MiB of its huge pages must move)",
				 (unsigned long long)(g->huge_page >> 10), nl, (unsigned long long)(hroom >> 20),
				 (unsigned long long)(hmig >> 20));
		return -ENOSPC;
	}
	omig = it->migrate_bytes > hmig ? it->migrate_bytes - hmig : 0;
	if (omig == 0 || plan_migration_negligible(it->migrate_bytes, g->mem_total) || room >= omig)
		return 0;
	/* Enough only with the room to come: the mover's job waits, move
	 * call by move call, until it is there (mover_spec.wait_room).
	 * Refused, the guest would go onto a busier node next cycle while
	 * this one, emptying, stays idle. */
	if (a->room_to_come && tocome > 0 && room + (uint64_t)tocome >= omig) {
		*wait = true;
		snprintf(why, whysz, "room partly to come: %llu MiB free above the reserve, %llu MiB leaving, "
			 "%llu MiB must move", (unsigned long long)(room >> 20), (unsigned long long)(tocome >> 20),
			 (unsigned long long)(omig >> 20));
		return 0;
	}
	if (a->room_to_come && tocome > 0)
		snprintf(why, whysz, "target nodes have %llu MiB free above the reserve and %llu MiB to come, "
			 "%llu MiB must move", (unsigned long long)(room >> 20), (unsigned long long)(tocome >> 20),
			 (unsigned long long)(omig >> 20));
	else
		snprintf(why, whysz, "target nodes have %llu MiB free above the reserve, %llu MiB must move",
			 (unsigned long long)(room >> 20), (unsigned long long)(omig >> 20));
	return -ENOSPC;
}

/* Soft memory binding: once the memory has moved onto TO, widen the
 * guest's mems again to OLD ∪ TO. Its threads now run on TO's CPUs, so
 * the kernel's local allocation keeps new memory there, while a node that
 * fills up can still spill to the others instead of OOM-killing a guest
 * bound to it. Nothing migrates
 * back: for a destination set larger than the source, do_migrate_pages
 * skips source nodes that are in it. In v1 the guest widens before its
 * descendants. LOOSE gets the set written ("" if nothing was). Failures
 * leave the guest strictly bound, which is not a failed move. */
static int loosen_mems(struct applier *a, unsigned n, char **sub, const nodemask_t *old,
		       const nodemask_t *to, char *loose, size_t loosesz)
{
	nodemask_t wide;
	int r = 0;

	loose[0] = '\0';
	mask_or(&wide, old, to);
	if (mask_equal(&wide, to))
		return 0;
	if (mask_format(&wide, loose, loosesz) < 0) {
		loose[0] = '\0';
		return -ENOSPC;
	}
	for (unsigned i = 0; i < n && r == 0; i++) {
		r = cgw_write(a->w, CGC_CPUSET, sub[i], "cpuset.mems", loose);
		if (is_gone(r) && i > 0)
			r = 0;
	}
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "cgroup %s: could not widen cpuset.mems to %s after the move; "
			  "it stays bound to its new nodes", sub[0], loose);
		loose[0] = '\0';
	}
	return r;
}

/* Does any cgroup below REL (v2) set its own cpuset.mems outside WITHIN?
 * Such a cgroup keeps its own nodes once REL widens, and the kernel
 * would migrate its pages back there. */
static bool descendants_mems_outside(struct applier *a, const char *rel, const nodemask_t *within)
{
	unsigned n = 0;
	char **sub = NULL;
	bool any = false;

	if (collect_subtree(a, rel, &n, &sub, NULL, 0) < 0)
		any = n > 1; /* cannot tell: be strict */
	for (unsigned i = 0; i < n; i++) {
		nodemask_t m;
		char *v = NULL;

		if (i > 0 && !any && read_file_value(a, CGC_CPUSET, sub[i], "cpuset.mems", &v) == 0 && v[0])
			any = mask_parse(v, &m) < 0 || !mask_subset(&m, within);
		free(v);
		free(sub[i]);
	}
	free(sub);
	return any;
}

/* A move whose CPUs are in place and whose memory is still to move
 * (apply_cpus → apply_memory, or → apply_memory_widen + the mover +
 * apply_memory_settle). */
struct apply_pending {
	const struct snapshot *snap;       /* referenced */
	struct plan_item it;           /* a copy; it.to_cpus points at to_cpus */
	cpumask_t to_cpus;
	bool vm;                       /* the VM actuator does it all in phase 2 */
	bool vm_movable;               /* ... or widens, the mover moves, set_mems narrows */
	bool v2, soft, widen_only, mems_changed, wide;
	bool narrow_only;              /* phase 2 is the mems write alone (apply_pending_narrow_only) */
	bool own_mems_below;           /* v2: a descendant sets its own cpuset.mems ... */
	bool *own;                     /* ... these (find_own_mems), by index of SUB */
	bool room_wait;                /* its room is partly still to come (recheck_room) */
	bool huge_tight;               /* no free huge page of its size left on the target (recheck_room) */
	char room_note[200];
	int64_t t0;
	char *cur_cpus_s, *cur_mems_s, *new_cpus;
	char new_mems[NODELIST_BUFSZ], union_mems[NODELIST_BUFSZ], to_mems_s[NODELIST_BUFSZ];
	nodemask_t cur_mems, target_mems;
	struct cgj j;                  /* every write of the move, to undo on failure */
	unsigned nsub;
	char **sub;                    /* the guest's subtree, pre-order (cgplan.h) */
	unsigned *depth;               /* ... and each one's depth below the guest */
	/* The guest's parts with targets of their own (plan_item.parts, a
	 * copy): each one's values formatted, and by index of SUB the part
	 * each cgroup lies in (-1: none, the guest's values). */
	unsigned nparts;
	struct apply_part {
		struct plan_part pp;
		cpumask_t cpus;        /* to_cpus on its nodes */
		nodemask_t wide;       /* the guest's mems now ∪ its own */
		char cpus_s[CPULIST_BUFSZ], ucpus_s[CPULIST_BUFSZ];
		char mems_s[NODELIST_BUFSZ], wide_s[NODELIST_BUFSZ];
	} *parts;
	int *sub_part;
};

/* Which values of a part a subtree write gives it (set_subtree). */
enum part_vals {
	PV_NONE = 0,                   /* the guest's values everywhere */
	PV_CPUS,                       /* its cpus, widened through the guest's now ∪ its own */
	PV_NARROW,                     /* its mems, widened through the guest's mems now ∪ its own */
	PV_WIDE,                       /* the guest's mems now ∪ its own */
};

/* v2: which cgroups of P's subtree set their own cpuset.mems (a runtime's
 * container cgroups do): the move writes those too (cgplan_add_set_own). */
static void find_own_mems(struct applier *a, struct apply_pending *p)
{
	p->own = xcalloc(p->nsub ? p->nsub : 1, sizeof(*p->own));
	for (unsigned i = 1; p->v2 && i < p->nsub; i++) {
		char *v = NULL;

		if (read_file_value(a, CGC_CPUSET, p->sub[i], "cpuset.mems", &v) == 0 && v[0])
			p->own[i] = p->own_mems_below = true;
		free(v);
	}
}

void apply_pending_free(struct apply_pending *p)
{
	if (!p)
		return;
	cgj_clear(&p->j);
	for (unsigned i = 0; i < p->nsub; i++)
		free(p->sub[i]);
	free(p->sub);
	free(p->depth);
	free(p->own);
	free(p->parts);
	free(p->sub_part);
	free(p->it.parts);
	free(p->cur_cpus_s);
	free(p->cur_mems_s);
	free(p->new_cpus);
	snap_unref(p->snap);
	free(p);
}

const char *apply_pending_guest(const struct apply_pending *p)
{
	return p->it.guest_id;
}

const struct plan_item *apply_pending_item(const struct apply_pending *p)
{
	return &p->it;
}

const struct snapshot *apply_pending_snapshot(const struct apply_pending *p)
{
	return p->snap;
}

/* P's parts (plan_item.parts) laid on its subtree: each part's values
 * (its CPUs: the target's on its nodes; while moving, the guest's
 * current sets ∪ its own), and the part each cgroup of the subtree lies
 * in. A part given the whole target, or whose cgroup is not in the
 * subtree now, takes the guest's values. Its mems changing is a mems
 * change of the move (CUR_MEMS: the guest's now). */
static void parts_setup(struct apply_pending *p, const cpumask_t *cur_cpus, const nodemask_t *cur_mems)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];

	p->sub_part = xcalloc(p->nsub ? p->nsub : 1, sizeof(*p->sub_part));
	for (unsigned i = 0; i < p->nsub; i++)
		p->sub_part[i] = -1;
	if (!p->it.nr_parts || !p->it.to_cpus)
		return;
	p->parts = xcalloc(p->it.nr_parts, sizeof(*p->parts));
	for (unsigned j = 0; j < p->it.nr_parts; j++) {
		const struct plan_part *pp = &p->it.parts[j];
		struct apply_part *ap = &p->parts[p->nparts];
		const struct snap_part *sp;
		cpumask_t on, u;
		bool any = false;

		if (pp->part >= g->nr_parts || mask_equal(&pp->nodes, &p->it.to_nodes))
			continue;
		sp = &g->parts[pp->part];
		ap->pp = *pp;
		snap_nodes_to_cpus(p->snap, &pp->nodes, &on);
		mask_and(&ap->cpus, &on, p->it.to_cpus);
		mask_or(&u, cur_cpus, &ap->cpus);
		mask_or(&ap->wide, cur_mems, &pp->mems);
		if (mask_empty(&ap->cpus) || mask_empty(&pp->mems) ||
		    mask_format(&ap->cpus, ap->cpus_s, sizeof(ap->cpus_s)) < 0 ||
		    mask_format(&u, ap->ucpus_s, sizeof(ap->ucpus_s)) < 0 ||
		    mask_format(&pp->mems, ap->mems_s, sizeof(ap->mems_s)) < 0 ||
		    mask_format(&ap->wide, ap->wide_s, sizeof(ap->wide_s)) < 0)
			continue;
		for (unsigned i = 1; i < p->nsub; i++)
			if (snap_part_of(g, p->sub[i]) == (int)pp->part) {
				p->sub_part[i] = (int)p->nparts;
				any = true;
			}
		if (!any)
			continue;
		if (!mask_equal(&sp->mems, p->widen_only ? &ap->wide : &pp->mems))
			p->mems_changed = true;
		p->nparts++;
	}
	/* Its parts' mems are written with the guest's (set_subtree). */
	if (p->nparts)
		p->own_mems_below = true;
}

/* Has a part of P mems now (as the snapshot saw them) that miss the
 * nodes it is to widen to? */
static bool parts_narrower(const struct apply_pending *p)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];

	for (unsigned j = 0; j < p->nparts; j++)
		if (!mask_subset(&p->parts[j].wide, &g->parts[p->parts[j].pp.part].mems))
			return true;
	return false;
}

/* Roll back everything P wrote (CPUs included) after a failed step. */
static void pending_fail(struct applier *a, struct apply_pending *p, int r, const char *step,
			 const char *failed_rel, struct apply_result *res)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];
	unsigned w = 0;
	int rr = cgj_revert(&p->j, &a->h, a->w, p->sub, &w);

	res->writes += w;
	if (is_gone(r) && strcmp(failed_rel, g->cgroup) == 0)
		apply_result_set(res, APPLY_VANISHED, 0, "guest's cgroup %s went away during the move", g->cgroup);
	else if (rr < 0)
		apply_result_set(res, APPLY_FAILED_PARTIAL, r,
			"writing %s of %s: %s; restoring the old cpuset also failed: %s",
			step, failed_rel, strerror(-r), strerror(-rr));
	else
		apply_result_set(res, APPLY_FAILED, r, "writing %s of %s: %s; old cpuset restored",
			step, failed_rel, strerror(-r));
}

/* Carry out PLAN (cgplan.h) into P's journal and empty it; on failure
 * *STEP and *FAILED_REL name the write that failed. */
static int run_plan(struct applier *a, struct apply_pending *p, struct cgplan *plan, const char **step,
		    const char **failed_rel)
{
	unsigned f = 0;
	int r = cgj_run(&p->j, &a->h, a->w, p->sub, plan, &f);

	if (r < 0) {
		*step = plan->s[f].file;
		*failed_rel = p->sub[plan->s[f].sub];
	}
	cgplan_clear(plan);
	return r;
}

/* FILE = NEWV over P's subtree in the order the kernel accepts (widen to
 * UNIONV first in v1: cgplan_add_set). */
static int set_subtree(struct applier *a, struct apply_pending *p, const char *file, const char *unionv,
		       const char *newv, enum part_vals pv, const char **step, const char **failed_rel)
{
	struct cgplan plan = { 0 };
	/* Only the mems of a runtime's own container cgroups are written:
	 * their cpus follow the guest's in v2 (an empty intersection falls
	 * back to the parent's). A part with a target of its own is written
	 * its own values. */
	bool mems = strcmp(file, "cpuset.mems") == 0;
	const char **u = NULL, **n = NULL;
	int r;

	if (pv != PV_NONE && p->nparts) {
		u = xcalloc(p->nsub, sizeof(*u));
		n = xcalloc(p->nsub, sizeof(*n));
		for (unsigned i = 1; i < p->nsub; i++) {
			const struct apply_part *ap = p->sub_part[i] >= 0 ? &p->parts[p->sub_part[i]] : NULL;

			if (!ap)
				continue;
			u[i] = pv == PV_CPUS ? ap->ucpus_s : ap->wide_s;
			n[i] = pv == PV_CPUS ? ap->cpus_s : pv == PV_NARROW ? ap->mems_s : ap->wide_s;
		}
	}
	r = cgplan_add_set_each(&plan, p->v2, p->nsub, p->depth, mems ? p->own : NULL, file, unionv, newv, u, n);
	free(u);
	free(n);
	if (r < 0) {
		*step = file;
		*failed_rel = p->sub[0];
		return r;
	}
	return run_plan(a, p, &plan, step, failed_rel);
}

static void pending_done_time(const struct apply_pending *p, struct apply_result *res)
{
	res->duration_s = (double)(clock_mono_ns() - p->t0) / 1e9;
}

static int result_ret(const struct apply_result *res)
{
	return res->status == APPLY_FAILED || res->status == APPLY_FAILED_PARTIAL ||
	       res->status == APPLY_REFUSED ? res->err : 0;
}

static int move_container_memory(struct applier *a, struct apply_pending *p, struct apply_result *res);

/* Guards no plan may get past, then the facts the plan was made on,
 * re-read now. true: go on, with P's target and current sets formatted
 * (new_cpus, to_mems_s, cur_cpus_s, cur_mems_s) and *CUR_CPUS, *CUR_MEMS
 * read; false: RES says why not. */
static bool move_precheck(struct applier *a, struct apply_pending *p, struct apply_result *res,
			  cpumask_t *cur_cpus, nodemask_t *cur_mems)
{
	const struct plan_item *it = &p->it;
	const struct snap_guest *g = &p->snap->guests[it->guest_idx];
	char why[200];
	int r;

	if (!it->to_cpus || mask_empty(it->to_cpus) || mask_empty(&it->to_mems)) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: target cpuset is empty");
		return false;
	}
	if (!cgw_in_scope(a->w, g->cgroup)) {
		apply_result_set(res, APPLY_REFUSED, -EPERM, "refused: cgroup %s is outside the configured scope",
			g->cgroup);
		return false;
	}
	p->new_cpus = xmalloc(CPULIST_BUFSZ);
	if (mask_format(it->to_cpus, p->new_cpus, CPULIST_BUFSZ) < 0 ||
	    mask_format(&it->to_mems, p->to_mems_s, sizeof(p->to_mems_s)) < 0) {
		apply_result_set(res, APPLY_REFUSED, -ENOSPC, "refused: cannot format target cpuset");
		return false;
	}
	r = read_effective(a, g->cgroup, "cpus", &p->cur_cpus_s);
	if (r == 0)
		r = read_effective(a, g->cgroup, "mems", &p->cur_mems_s);
	if (is_gone(r)) {
		apply_result_set(res, APPLY_VANISHED, 0, "guest's cgroup %s is gone", g->cgroup);
		return false;
	}
	if (r < 0) {
		apply_result_set(res, APPLY_FAILED, r, "cannot read cpuset of %s: %s", g->cgroup, strerror(-r));
		return false;
	}
	if (mask_parse(p->cur_cpus_s, cur_cpus) < 0 || mask_parse(p->cur_mems_s, cur_mems) < 0) {
		apply_result_set(res, APPLY_FAILED, -EINVAL, "malformed cpuset of %s: cpus \"%s\" mems \"%s\"",
			g->cgroup, p->cur_cpus_s, p->cur_mems_s);
		return false;
	}
	if (!mask_equal(cur_cpus, g->cpus) || !mask_equal(cur_mems, &g->mems)) {
		apply_result_set(res, APPLY_CHANGED, 0, "cpuset of %s changed since the snapshot (now cpus %s mems %s); "
			"deciding again next cycle", g->cgroup, p->cur_cpus_s, p->cur_mems_s);
		return false;
	}
	r = recheck_room(a, p->snap, it, &p->room_wait, &p->huge_tight, why, sizeof(why));
	if (r == 0 && p->room_wait)
		snprintf(p->room_note, sizeof(p->room_note), "%s", why);
	if (r < 0) {
		apply_result_set(res, r == -ENOSPC ? APPLY_NO_ROOM : APPLY_FAILED, r, "not moved: %s", why);
		return false;
	}
	return true;
}

/* Soft binding (see loosen_mems): a move whose memory is already in
 * place only widens the mems; one that migrates narrows them for the
 * migration and widens them after. In v2 the descendants that set their
 * own cpuset.mems are narrowed and widened with the guest (set_subtree),
 * so none keeps nodes of its own that would pull its pages back. Sets
 * P's binding, the mems to write and the union sets (UNION_CPUS:
 * CPULIST_BUFSZ). false: RES refused it. */
static bool move_binding(struct applier *a, struct apply_pending *p, const cpumask_t *cur_cpus,
			 const nodemask_t *cur_mems, char *union_cpus, struct apply_result *res)
{
	const struct plan_item *it = &p->it;
	const struct snap_guest *g = &p->snap->guests[it->guest_idx];
	cpumask_t ucpus;
	nodemask_t umems;

	/* A start placement binds the mems until the engine releases them
	 * (plan_item.bind_start). */
	p->soft = !a->opts.strict_mems && g->policy.mode != GPOL_PINNED && !it->bind_start;
	/* Bound strictly to nodes without a free huge page of its size, a
	 * hugetlb guest could not grow (its next huge pages fail with ENOMEM
	 * while another node has free ones): it stays soft. */
	if (!p->soft && p->huge_tight) {
		p->soft = true;
		log_info("guest %s: bound soft, not strictly: its target nodes will have no free %llu kB huge page",
			 g->id, (unsigned long long)(g->huge_page >> 10));
	}
	p->cur_mems = *cur_mems;
	p->target_mems = it->to_mems;
	p->widen_only = p->soft && plan_migration_negligible(it->migrate_bytes, g->mem_total);
	if (p->widen_only)
		mask_or(&p->target_mems, cur_mems, &it->to_mems);
	mask_or(&ucpus, cur_cpus, it->to_cpus);
	mask_or(&umems, cur_mems, &p->target_mems);
	if (mask_format(&ucpus, union_cpus, CPULIST_BUFSZ) < 0 ||
	    mask_format(&umems, p->union_mems, sizeof(p->union_mems)) < 0 ||
	    mask_format(&p->target_mems, p->new_mems, sizeof(p->new_mems)) < 0) {
		apply_result_set(res, APPLY_REFUSED, -ENOSPC, "refused: cannot format cpuset");
		return false;
	}
	p->mems_changed = !mask_equal(cur_mems, &p->target_mems);
	return true;
}

/* Phase 1's writes: in v1 memory_migrate=1 first when the mems change
 * (pages follow a v1 mems change only then), then cpuset.cpus. */
static int move_write_cpus(struct applier *a, struct apply_pending *p, const char *union_cpus,
			   const char **step, const char **failed_rel)
{
	struct cgplan plan = { 0 };
	int r;

	if (!p->v2 && p->mems_changed)
		cgplan_add_memory_migrate(&plan, p->nsub);
	if (plan.n) {
		r = run_plan(a, p, &plan, step, failed_rel);
		if (r < 0)
			return r;
	}
	return set_subtree(a, p, "cpuset.cpus", union_cpus, p->new_cpus, PV_CPUS, step, failed_rel);
}

/* Soft binding and nothing to migrate: the memory is already on the
 * target; the mems only grow, or stay as wide as they were. The record
 * says so (mems_after), or it would claim mems it never wrote. Growing
 * migrates nothing (see loosen_mems). */
static int move_widen_only(struct applier *a, struct apply_pending *p, struct apply_result *res,
			   const char **step, const char **failed_rel)
{
	const struct plan_item *it = &p->it;
	int r;

	if (p->mems_changed) {
		r = set_subtree(a, p, "cpuset.mems", p->union_mems, p->new_mems, PV_WIDE, step, failed_rel);
		if (r < 0)
			return r;
	}
	if (!mask_equal(&p->target_mems, &it->to_mems)) {
		res->mems_loosened = true;
		res->mems_after = p->target_mems;
		if (p->mems_changed)
			apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, memory already on %s, mems %s -> %s",
				p->cur_cpus_s, p->new_cpus, p->to_mems_s, p->cur_mems_s, p->new_mems);
		else
			apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, memory already on %s, mems stay %s",
				p->cur_cpus_s, p->new_cpus, p->to_mems_s, p->cur_mems_s);
	} else {
		apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, mems %s -> %s", p->cur_cpus_s,
			p->new_cpus, p->cur_mems_s, p->new_mems);
	}
	return 0;
}

/* Phase 1 of a container's move: guards, re-checks, the binding, the
 * subtree, cpuset.cpus (and in v1 memory_migrate). Completes moves that
 * migrate nothing; else hands back P for the memory phase. */
static int move_container_cpus(struct applier *a, struct apply_pending *p, struct apply_result *res,
			       bool *complete)
{
	const struct plan_item *it = &p->it;
	const struct snap_guest *g = &p->snap->guests[it->guest_idx];
	const char *failed_rel = g->cgroup, *step = "cpuset.cpus";
	char *union_cpus;
	cpumask_t cur_cpus;
	nodemask_t cur_mems;
	int r;

	*complete = true;
	p->v2 = a->h.v2[CGC_CPUSET];
	if (!move_precheck(a, p, res, &cur_cpus, &cur_mems))
		return result_ret(res);
	union_cpus = xmalloc(CPULIST_BUFSZ);
	if (!move_binding(a, p, &cur_cpus, &cur_mems, union_cpus, res)) {
		free(union_cpus);
		return result_ret(res);
	}
	/* v2 needs the subtree only for its processes (the mover); v1 writes
	 * every cgroup of it. */
	r = collect_subtree(a, g->cgroup, &p->nsub, &p->sub, &p->depth, 0);
	if (r < 0) {
		free(union_cpus);
		if (is_gone(r))
			apply_result_set(res, APPLY_VANISHED, 0, "guest's cgroup %s is gone", g->cgroup);
		else
			apply_result_set(res, APPLY_FAILED, r, "cannot list cgroups under %s: %s", g->cgroup,
				strerror(-r));
		return result_ret(res);
	}
	find_own_mems(a, p);
	parts_setup(p, &cur_cpus, &cur_mems);
	r = move_write_cpus(a, p, union_cpus, &step, &failed_rel);
	free(union_cpus);
	if (r < 0) {
		pending_fail(a, p, r, step, failed_rel, res);
		return result_ret(res);
	}
	if (p->widen_only) {
		r = move_widen_only(a, p, res, &step, &failed_rel);
		if (r < 0)
			pending_fail(a, p, r, step, failed_rel, res);
		return result_ret(res);
	}
	if (it->migrate_bytes == 0 || plan_migration_negligible(it->migrate_bytes, g->mem_total)) {
		/* A start binding's narrowing migrates what the young guest
		 * touched since the snapshot, inside the write, which can take
		 * seconds while it is still touching. So phase 2,
		 * after every move's CPUs, and a mover job's where there is a
		 * mover (engine_jobs.c). */
		if (p->mems_changed && it->bind_start) {
			p->narrow_only = true;
			*complete = false;
			apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s; mems to bind to %s", p->cur_cpus_s,
				p->new_cpus, p->new_mems);
			return result_ret(res);
		}
		/* Strict binding with (almost) nothing to migrate: the mems are
		 * narrowed now, with the CPUs; nothing waits behind it. */
		if (p->mems_changed)
			move_container_memory(a, p, res);
		else
			apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, mems %s -> %s", p->cur_cpus_s,
				p->new_cpus, p->cur_mems_s, p->new_mems);
		return result_ret(res);
	}
	/* Memory to move: phase 2. */
	*complete = false;
	apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s; memory to move onto %s", p->cur_cpus_s, p->new_cpus,
		p->to_mems_s);
	return result_ret(res);
}

/* Phase 2 the kernel's way: write cpuset.mems (the kernel migrates the
 * pages inside the write), or move the pages of each process when the
 * mems do not change. */
static int move_container_memory(struct applier *a, struct apply_pending *p, struct apply_result *res)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];
	const char *failed_rel = g->cgroup, *step = "cpuset.mems";
	bool frozen = false;
	int r = 0;

	if (p->mems_changed) {
		if (a->opts.freeze_during_migration && p->it.migrate_bytes > 0)
			frozen = freeze(a, g->cgroup, true) == 0;
		r = set_subtree(a, p, "cpuset.mems", p->union_mems, p->new_mems, PV_NARROW, &step, &failed_rel);
		if (frozen && freeze(a, g->cgroup, false) < 0)
			log_error("could not thaw cgroup %s after migrating its memory", g->cgroup);
		if (r < 0) {
			pending_fail(a, p, r, step, failed_rel, res);
			return result_ret(res);
		}
	} else {
		const nodemask_t **sub_to = p->nparts ? xcalloc(p->nsub, sizeof(*sub_to)) : NULL;

		for (unsigned i = 0; sub_to && i < p->nsub; i++)
			sub_to[i] = p->sub_part[i] >= 0 ? &p->parts[p->sub_part[i]].pp.mems : NULL;
		r = migrate_processes(a, p->snap, p->nsub, p->sub, &p->it.to_mems, sub_to);
		free(sub_to);
		if (r < 0)
			log_errno(LOG_LEVEL_WARN, r, "guest %s: moving its pages onto nodes %s", g->id, p->new_mems);
	}
	if (p->mems_changed && p->soft) {
		char loose[NODELIST_BUFSZ];

		if (loosen_mems(a, p->nsub, p->sub, &p->cur_mems, &p->it.to_mems, loose, sizeof(loose)) == 0 &&
		    loose[0]) {
			res->mems_loosened = true;
			mask_or(&res->mems_after, &p->cur_mems, &p->it.to_mems);
			apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, memory moved to %s, mems %s -> %s",
				p->cur_cpus_s, p->new_cpus, p->new_mems, p->cur_mems_s, loose);
			return 0;
		}
	}
	apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, mems %s -> %s", p->cur_cpus_s, p->new_cpus,
		p->cur_mems_s, p->new_mems);
	return 0;
}

static void result_init(struct apply_result *res)
{
	memset(res, 0, sizeof(*res));
	res->locality_after = NAN;
}

int apply_cpus(struct applier *a, const struct snapshot *snap, const struct plan_item *it,
	       struct apply_result *res, struct apply_pending **pend)
{
	struct apply_pending *p;
	const struct snap_guest *g;
	bool complete = true;
	int r;

	*pend = NULL;
	result_init(res);
	if (it->kind != PLAN_MOVE || it->guest_idx >= snap->nr_guests ||
	    strcmp(snap->guests[it->guest_idx].id, it->guest_id) != 0) {
		apply_result_set(res, APPLY_REFUSED, -EINVAL, "refused: plan item does not match the snapshot");
		return -EINVAL;
	}
	p = xcalloc(1, sizeof(*p));
	p->t0 = clock_mono_ns();
	p->snap = snap_ref(snap); /* held, never changed */
	p->it = *it;
	/* The plan's parts may be gone before the move's memory phase ends. */
	if (it->nr_parts && it->parts) {
		p->it.parts = xcalloc(it->nr_parts, sizeof(*it->parts));
		memcpy(p->it.parts, it->parts, it->nr_parts * sizeof(*it->parts));
	} else {
		p->it.parts = NULL;
		p->it.nr_parts = 0;
	}
	if (it->to_cpus) {
		p->to_cpus = *it->to_cpus;
		p->it.to_cpus = &p->to_cpus;
	}
	g = &snap->guests[it->guest_idx];
	if (g->kind == GUEST_VM) {
		/* libvirt changes a VM's numatune (its memory) and its pins in one
		 * call: a VM with memory to move goes in phase 2. */
		if (!a->have_vm) {
			apply_result_set(res, APPLY_NOT_APPLICABLE, -EOPNOTSUPP, "no VM actuator (libvirt source disabled)");
			r = 0;
		} else if (it->migrate_bytes && !plan_migration_negligible(it->migrate_bytes, g->mem_total) &&
			   (r = recheck_room(a, snap, it, &p->room_wait, &p->huge_tight, p->room_note, sizeof(p->room_note))) < 0) {
			/* The room re-check a container's move has (move_precheck):
			 * libvirt's nodeset write, or the mover, puts a domain's
			 * pages onto the target as surely as a cpuset.mems write
			 * does. Nothing is written yet. */
			apply_result_set(res, r == -ENOSPC ? APPLY_NO_ROOM : APPLY_FAILED, r, "not moved: %s",
					 p->room_note);
			r = result_ret(res);
		} else if (it->migrate_bytes && !plan_migration_negligible(it->migrate_bytes, g->mem_total)) {
			/* With room partly to come (p->room_wait) only a mover
			 * job that waits for it may carry the memory (memory_phase). */
			p->vm = true;
			p->vm_movable = a->vm.set_mems != NULL && g->vm && g->vm->qemu_pid > 0;
			p->cur_mems = g->mems;
			if (mask_format(&it->to_mems, p->to_mems_s, sizeof(p->to_mems_s)) < 0)
				p->vm_movable = false;
			/* Its nodeset stays old ∪ new after the mover (no
			 * narrowing in apply_memory_settle) where the new nodes
			 * would keep no free huge page of its size, as for a
			 * container (move_binding). */
			p->soft = p->vm_movable && p->huge_tight;
			cycle_flow_add(a, snap, it);
			*pend = p;
			apply_result_set(res, APPLY_DONE, 0, "memory to move");
			return 0;
		} else {
			r = a->vm.move(a->vm.ctx, snap, g, it, res);
		}
	} else {
		r = move_container_cpus(a, p, res, &complete);
		if (!complete) {
			if (it->migrate_bytes && !plan_migration_negligible(it->migrate_bytes, g->mem_total))
				cycle_flow_add(a, snap, it);
			*pend = p;
			return 0;
		}
	}
	res->writes += p->j.n;
	pending_done_time(p, res);
	apply_pending_free(p);
	return r;
}

int apply_memory(struct applier *a, struct apply_pending *p, struct apply_result *res)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];
	int r;

	result_init(res);
	if (p->vm)
		r = a->vm.move(a->vm.ctx, p->snap, g, &p->it, res);
	else
		r = move_container_memory(a, p, res);
	res->writes += p->j.n;
	pending_done_time(p, res);
	return r;
}

bool apply_pending_movable(const struct apply_pending *p)
{
	/* A container's descendants with mems of their own are widened with
	 * it (set_subtree), so move_pages can reach their pages too. */
	return p->vm ? p->vm_movable : true;
}

bool apply_pending_room_wait(const struct apply_pending *p)
{
	return p->room_wait;
}

const char *apply_pending_room_note(const struct apply_pending *p)
{
	return p->room_note;
}

int apply_pending_no_room(struct applier *a, struct apply_pending *p, const char *why, struct apply_result *res)
{
	unsigned w = 0;
	int r = cgj_revert(&p->j, &a->h, a->w, p->sub, &w);

	result_init(res);
	res->writes += w;
	if (r < 0)
		apply_result_set(res, APPLY_FAILED_PARTIAL, r, "not moved: %s (%s); restoring the old cpuset failed: %s",
				 p->room_note, why, strerror(-r));
	else if (p->vm)
		/* a domain's move writes nothing before its phase 2 */
		apply_result_set(res, APPLY_NO_ROOM, -ENOSPC, "not moved: %s, but %s; nothing was changed",
				 p->room_note, why);
	else
		apply_result_set(res, APPLY_NO_ROOM, -ENOSPC, "not moved: %s, but %s; old cpuset restored",
				 p->room_note, why);
	pending_done_time(p, res);
	return r;
}

double apply_pending_age_s(const struct apply_pending *p)
{
	return (double)(clock_mono_ns() - p->t0) / 1e9;
}

bool apply_pending_narrow_only(const struct apply_pending *p)
{
	return p->narrow_only;
}

bool apply_pending_writes_mems(const struct apply_pending *p)
{
	return !p->vm && p->mems_changed;
}

bool apply_pending_soft(const struct apply_pending *p)
{
	return p->soft;
}

int apply_memory_widen(struct applier *a, struct apply_pending *p, const char *why, struct apply_result *res)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];
	const char *failed_rel = g->cgroup;
	char wide_s[NODELIST_BUFSZ];
	nodemask_t wide;
	int r = 0;

	result_init(res);
	mask_or(&wide, &p->cur_mems, &p->it.to_mems);
	if (mask_format(&wide, wide_s, sizeof(wide_s)) < 0) {
		apply_result_set(res, APPLY_REFUSED, -ENOSPC, "refused: cannot format cpuset");
		return result_ret(res);
	}
	if (p->vm) {
		/* Through libvirt: nodeset old ∪ new and the pins, in one move.
		 * Where libvirt refuses the nodeset (strict mode, <memnode>) the
		 * move says NOT_APPLICABLE as it always did. */
		struct plan_item wit = p->it;
		size_t n;

		wit.to_mems = wide;
		r = a->vm.move(a->vm.ctx, p->snap, g, &wit, res);
		pending_done_time(p, res);
		if (res->status != APPLY_DONE)
			return r;
		p->wide = true;
		res->mems_loosened = true;
		res->mems_after = wide;
		n = strlen(res->msg);
		snprintf(res->msg + n, sizeof(res->msg) - n, "; memory %s", why);
		return 0;
	}
	/* Growing the mems migrates nothing (see loosen_mems); in v1 the guest
	 * grows before its descendants. A part whose own mems lack its target
	 * grows too, the guest's unchanged. */
	if (!mask_equal(&wide, &p->cur_mems) || parts_narrower(p)) {
		const char *step = "cpuset.mems";

		r = set_subtree(a, p, "cpuset.mems", wide_s, wide_s, PV_WIDE, &step, &failed_rel);
		if (r < 0) {
			pending_fail(a, p, r, step, failed_rel, res);
			res->writes += p->j.n;
			pending_done_time(p, res);
			return result_ret(res);
		}
	}
	p->wide = true;
	res->mems_loosened = true;
	res->mems_after = wide;
	apply_result_set(res, APPLY_DONE, 0, "cpus %s -> %s, mems %s -> %s; memory %s", p->cur_cpus_s, p->new_cpus,
		p->cur_mems_s, wide_s, why);
	res->writes += p->j.n;
	pending_done_time(p, res);
	return 0;
}

unsigned apply_pending_pids(struct applier *a, const struct apply_pending *p, pid_t **out)
{
	unsigned n = 0, cap = 0;
	pid_t *v = NULL;

	if (p->vm) {
		/* One QEMU process: its threads share the memory. */
		const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];

		if (!g->vm || g->vm->qemu_pid <= 0) {
			*out = NULL;
			return 0;
		}
		v = xcalloc(1, sizeof(*v));
		v[0] = g->vm->qemu_pid;
		*out = v;
		return 1;
	}
	for (unsigned i = 0; i < p->nsub; i++) {
		char *procs = NULL;

		if (read_file_value(a, CGC_CPUSET, p->sub[i], "cgroup.procs", &procs) < 0)
			continue;
		for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
			uint64_t pid;

			if (parse_u64(t, &pid) < 0 || pid == 0 || pid > INT32_MAX)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[n++] = (pid_t)pid;
		}
		free(procs);
	}
	*out = v;
	return n;
}

nodemask_t *apply_pending_pid_targets(struct applier *a, const struct apply_pending *p, const pid_t *pids,
				      unsigned npids)
{
	nodemask_t *to;

	if (!p->nparts || !npids)
		return NULL;
	to = xcalloc(npids, sizeof(*to));
	for (unsigned k = 0; k < npids; k++)
		to[k] = p->it.to_mems;
	for (unsigned i = 1; i < p->nsub; i++) {
		char *procs = NULL;

		if (p->sub_part[i] < 0 || read_file_value(a, CGC_CPUSET, p->sub[i], "cgroup.procs", &procs) < 0)
			continue;
		for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
			uint64_t pid;

			if (parse_u64(t, &pid) < 0)
				continue;
			for (unsigned k = 0; k < npids; k++)
				if ((uint64_t)pids[k] == pid)
					to[k] = p->parts[p->sub_part[i]].pp.mems;
		}
		free(procs);
	}
	return to;
}

int apply_memory_settle(struct applier *a, struct apply_pending *p, struct apply_result *res)
{
	const struct snap_guest *g = &p->snap->guests[p->it.guest_idx];
	const char *failed_rel = g->cgroup;
	char wide_s[NODELIST_BUFSZ];
	nodemask_t wide;
	int r;

	if (p->soft || !p->wide)
		return 0;
	if (p->vm) {
		char err[256] = "";

		/* libvirt narrows the cgroup (and migrates what the mover left)
		 * and its live numatune says where the memory now belongs. */
		r = a->vm.set_mems(a->vm.ctx, g, &p->it.to_mems, err, sizeof(err));
		res->writes++;
		if (r < 0) {
			/* why, for the record (engine_settle_jobs) */
			snprintf(res->msg, sizeof(res->msg), "%s", err);
			if (!is_gone(r))
				log_warn("domain %s: libvirt refused nodeset %s after its memory moved (%s); it stays "
					 "on the nodes of both", g->name, p->to_mems_s, err);
			/* The record says where it stays bound, not the target. */
			res->mems_loosened = true;
			mask_or(&res->mems_after, &p->cur_mems, &p->it.to_mems);
			return r;
		}
		p->wide = false;
		res->mems_loosened = false;
		res->mems_after = p->it.to_mems;
		return 0;
	}
	/* Strict binding: narrow to the target now that the pages are there
	 * (the kernel migrates only what was left behind). A guest gone in
	 * the meantime is not an error. */
	mask_or(&wide, &p->cur_mems, &p->it.to_mems);
	if (mask_format(&wide, wide_s, sizeof(wide_s)) < 0)
		return -ENOSPC;
	/* v2: one write, not journaled (nothing after it to undo it for),
	 * unless descendants have mems of their own to narrow with it. */
	if (p->v2 && !p->own_mems_below) {
		r = cgw_write(a->w, CGC_CPUSET, g->cgroup, "cpuset.mems", p->to_mems_s);
	} else {
		const char *step = "cpuset.mems";

		r = set_subtree(a, p, "cpuset.mems", wide_s, p->to_mems_s, PV_NARROW, &step, &failed_rel);
	}
	res->writes++;
	if (r < 0 && !is_gone(r)) {
		log_errno(LOG_LEVEL_WARN, r, "cgroup %s: could not narrow cpuset.mems to %s after its memory moved; "
			  "it stays on %s", failed_rel, p->to_mems_s, wide_s);
		res->mems_loosened = true;
		res->mems_after = wide;
		return r;
	}
	if (r < 0) {
		/* Gone since its job ended: no error, but the record must not
		 * say the mems were narrowed (mems_after stays old ∪ new, the
		 * last the agent wrote). */
		snprintf(res->msg, sizeof(res->msg), "cgroup %s is gone", failed_rel);
		res->mems_loosened = true;
		res->mems_after = wide;
		return r;
	}
	p->wide = false;
	res->mems_loosened = false;
	res->mems_after = p->it.to_mems;
	return 0;
}

int apply_release_mems_cgroup(struct applier *a, const char *cgroup, const nodemask_t *bound,
			      const nodemask_t *wide, struct apply_result *res)
{
	char *cur = NULL, loose[NODELIST_BUFSZ];
	nodemask_t cur_mems;
	unsigned n = 0;
	char **sub = NULL;
	int r;

	result_init(res);
	if (!cgw_in_scope(a->w, cgroup)) {
		apply_result_set(res, APPLY_REFUSED, -EPERM, "refused: cgroup %s is outside the configured scope",
			cgroup);
		return -EPERM;
	}
	r = read_effective(a, cgroup, "mems", &cur);
	if (is_gone(r)) {
		free(cur);
		apply_result_set(res, APPLY_VANISHED, 0, "guest's cgroup %s is gone", cgroup);
		return 0;
	}
	if (r < 0 || mask_parse(cur, &cur_mems) < 0 || !mask_equal(&cur_mems, bound)) {
		apply_result_set(res, APPLY_CHANGED, r < 0 ? r : 0, "mems of %s are not the bound ones (now %s)",
			cgroup, cur ? cur : "unreadable");
		free(cur);
		return 0;
	}
	free(cur);
	/* v2: a descendant with mems of its own beyond the binding would get
	 * its pages migrated back once the guest widens: it stays bound. */
	if (a->h.v2[CGC_CPUSET] && descendants_mems_outside(a, cgroup, bound)) {
		apply_result_set(res, APPLY_NOT_APPLICABLE, 0, "a cgroup below %s sets mems of its own beyond its "
			"binding: stays bound", cgroup);
		return 0;
	}
	r = collect_subtree(a, cgroup, &n, &sub, NULL, 0);
	if (r == 0)
		r = loosen_mems(a, n, sub, wide, bound, loose, sizeof(loose));
	for (unsigned i = 0; i < n; i++)
		free(sub[i]);
	free(sub);
	if (r < 0) {
		apply_result_set(res, is_gone(r) ? APPLY_VANISHED : APPLY_FAILED, is_gone(r) ? 0 : r,
			"could not widen the mems of %s: %s", cgroup, strerror(-r));
		return is_gone(r) ? 0 : r;
	}
	mask_or(&res->mems_after, bound, wide);
	res->mems_loosened = true;
	{
		char was[NODELIST_BUFSZ], now[NODELIST_BUFSZ];

		if (mask_format(bound, was, sizeof(was)) < 0)
			snprintf(was, sizeof(was), "?");
		if (mask_format(&res->mems_after, now, sizeof(now)) < 0)
			snprintf(now, sizeof(now), "?");
		apply_result_set(res, APPLY_DONE, 0, "mems %s -> %s: bound since its start placement, released",
			was, now);
	}
	return 0;
}

int apply_move(struct applier *a, const struct snapshot *snap, const struct plan_item *it,
	       struct apply_result *res)
{
	struct apply_pending *p;
	int r = apply_cpus(a, snap, it, res, &p);

	if (!p)
		return r;
	r = apply_memory(a, p, res);
	apply_pending_free(p);
	return r;
}
