/* consolidate.c — policy_decide(): each guest on the fewest, least-busy
 * nodes that fit it, memory local, moving only toward less-busy nodes.
 *
 * Node load: each node's busy CPUs (snapshot), less the guest's own share
 * when it is the one deciding: measured per node from its threads when
 * acquire could (snap_guest.cpu_node), else its use spread evenly over its
 * CPUs. Floaters (struct gview: free to run on every node, able to leave
 * one) count as free room for the others until they are placed this
 * cycle (pctx_float), since where their threads happen to run is chance
 * — unless the host as a whole is busier than max_util.
 *
 * Per guest (AUTO):
 *   demand     cpu = max(min_cpu, cpu_use × (1 + cpu_headroom)),
 *              mem = mem_total × (1 + mem_headroom);
 *   candidates the fitting sets from pcands_generate() (guards.c);
 *              k = the smallest size among them; on a host with SMT
 *              siblings counted by cores first (auto_cands), by CPUs
 *              where no set with free cores fits;
 *   locality   the snapshot's: where its threads run, by CPU time (not
 *              its memory inside C's nodes: a one-thread guest on two
 *              nodes with its memory on the other is 0, not 1);
 *   threads    candidates grow for CPU only until their CPUs hold its
 *              busy threads (gview.busy_thr); one grown further for memory
 *              is dropped while a set holding its threads fits its memory
 *              (guards.c), and C itself is no candidate when it is more
 *              nodes than its threads fill;
 *   crowded    when no set fits with headroom, the sets that hold its
 *              busy threads and fit its memory (its footprint will do:
 *              pcand.bare_mem) but not its CPU demand are
 *              the candidates instead, under the same rules (less-busy,
 *              stability, cool-down): it goes local on the least loaded of
 *              them, or stays where it is when none is less busy;
 *   settled    locality ≥ target, |C| ≤ k, C fits (or is crowded when
 *              nothing fits), and not a load case;
 *   local fit  a set already holding its memory (beside the kernel's
 *              balancing, the larger part of it) fits without CPU headroom
 *              when its use, a CPU per busy thread, fits the CPUs left
 *              (pcand.local_fit); moving it off such a set, or off any
 *              fitting set holding all its memory (holds_memory), for
 *              load must score lower with the migration counted;
 *   in set     a guest on the |C| ≥ 2 nodes it needs with all its memory
 *              on them but under target where its threads run, and no
 *              better option: settled when the kernel's NUMA balancing is
 *              on (it places pages inside the set); when it is off, its
 *              memory goes onto the nodes of C that carry its threads if
 *              they have room (follow_threads), else SKIP_IN_SET;
 *   load case  util_now(C) ≥ rebalance_util and some relocation of size
 *              k passes the less-busy rule;
 *   reason     CONSOLIDATE if |C| > k, else LOCALITY if locality is under
 *              target, else LOAD (busy, or C does not fit it any more).
 *   options    a relocation (T ⊄ C) of size k with
 *                  util_after(T) × (1 + less_busy_margin) < util_now(C);
 *              a shrink (T ⊊ C), any size: it only needs to fit;
 *              T = C when locality is under target and memory must move;
 *              a relocation onto a set that fits and holds all its huge
 *              pages, any load, when its huge pages cannot come to C
 *              (too few free pages of their size on mems(C)).
 *              An option that would be a load case itself once the guest
 *              is there (util_after ≥ rebalance_util while the least busy
 *              size-k set is less busy than it by the margin) is dropped:
 *              the guest would only be moved again next cycle.
 *              The smallest option wins, then the best score (guards.h).
 *              None → SKIP_NOT_LESS_BUSY with the best size-k set's numbers.
 *   cool-down  checked last, so the skip names the move it holds back;
 *              a shrink onto the nodes where its busy threads already run
 *              (narrows_onto_threads) is not held: no thread moves; nor
 *              a move onto nodes idle but for it from nodes with more
 *              busy threads than CPUs (relieves_overload).
 * After a relocation the reverse move cannot pass the less-busy rule
 * (the old nodes were busier by the margin), so guests converge.
 *
 * Pinned guests (GPOL_PINNED, nodes P): target the CPU nodes of P it may
 * use, memory on P's memory nodes; settled when it already runs there,
 * its mems are those and ≥ locality_target of its memory is on them.
 * Only memory room is enforced (SKIP_NO_ROOM_PINNED): CPU load on pinned
 * nodes is the operator's choice. Cool-down applies while it runs on at
 * least one pinned node; a guest entirely outside P moves at once, as
 * the pin is an explicit order, and so does one whose pin was set since
 * its last move (pin_set_since). Nor does it hold the first pull of its
 * memory onto the pinned node its threads run on after a move
 * (pin_follow): the move is what put the threads there. Usage is not
 * needed (unknown counts as 0).
 *
 * Memory not measured (snap_guest.mem_unknown: no memory.numa_stat, e.g.
 * a cgroup in the cpuset hierarchy only): SKIP_MEM_UNKNOWN, whatever its
 * policy; neither its CPUs nor its memory are moved, since neither its
 * locality nor the migration a move would cost is known. Its CPU use and
 * memory still count in the nodes' busy and free figures.
 *
 * Budgets: all wanted moves are ranked by gain (below), best first, and
 * taken greedily against a working copy of node load and free memory
 * that every accepted move updates (pctx_commit). A guest whose ranking
 * was computed before the last accepted move is re-evaluated when it
 * comes up (lazy greedy), so two guests never both take the last room on
 * a node. Beyond max_moves: SKIP_MAX_MOVES; a move whose migration would
 * pass max_migrate_bytes: SKIP_MAX_MIGRATE (a smaller one may still fit).
 * Both as policy_resolve sizes them when auto (from the workers and the
 * mover's measured rate the engine tells), and each skip says so.
 *
 * gain = GiB of memory made local × max(cpu_use, min_cpu)
 *      + nodes freed (|C| − |T| when positive)
 *      + 4 × load relieved (util_now(C) − util_after(T) when positive);
 * pinned moves get +1000 so operator pins go first. Ties: guest id.
 *
 * Plan items: accepted moves first — those with nothing worth migrating
 * (plan_migration_negligible), then the migrating ones, each group in the
 * order accepted (best first); the engine applies them in this order —
 * then skips and settled guests by guest id. An item the cycle's facts
 * hold back (a guest just placed, a start binding's write or a mover job
 * still running) is marked so and keeps what was decided
 * (plan_mark_holds).
 *
 * Next state: prev's entries for guests still present, nothing more. A
 * cool-down is a record of what happened: the engine notes one for each
 * move it carried out (plan_item_note_cooldown), a move that then fails
 * to apply included (damping: don't retry a failing move every cycle),
 * as long as the move's item says (plan_item.cooldown_ns: under
 * cooldown = auto sized by its cost, policy_move_cooldown).
 */
#include "policies.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cores.h"
#include "devpref.h"
#include "guards.h"
#include "parts.h"
#include "../orchestrator/model/kflow.h"
#include "../orchestrator/base/xalloc.h"

#define PIN_GAIN 1000.0

/* What auto_move's sentence says beyond the item's own fields, kept
 * until the move is accepted (move_detail_due): most wanted moves are
 * skipped for the cycle's budget, which writes its own sentence, or
 * decided again, and the formatting (a dozen floats) would be thrown
 * away. */
struct mdefer {
	bool due;               /* the sentence is still to be written */
	bool pull;              /* its CPUs stay: memory pulled to them */
	bool more;              /* pcand_more_than_threads of the target */
	bool crowded, cool, cool_narrows, nan;
	const char *fit_note;   /* crowded / local-fit / cores words, or NULL */
	/* Where it is (adec.cc), as travel_detail reads it. */
	double cc_travel;
	uint64_t cc_migrate;
	unsigned cc_travel_far;
	bool cc_same;           /* the target's nodes are where it is */
	/* Its device against where its memory is, beside the kernel
	 * (dev_flow_note): the target won over DEV_OVER, or the kernel's
	 * flow toward node KFILL (KFILL_BYTES of it there) kept it away. */
	bool dev_won, dev_kept;
	nodemask_t dev_over;
	int kfill;
	uint64_t kfill_bytes;
};

struct gdec {
	struct plan_item it;
	struct pcand target;    /* moves: the chosen set */
	bool want;              /* a move waiting for the budget */
	unsigned version;       /* working-copy version it was decided on */
	struct mdefer md;
};

static void set_detail(struct plan_item *it, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_detail(struct plan_item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

static void add_detail(struct plan_item *it, const char *s)
{
	size_t l = strlen(it->detail);

	if (l < sizeof(it->detail) - 1)
		snprintf(it->detail + l, sizeof(it->detail) - l, "%s", s);
}

static unsigned long long mib(uint64_t b)
{
	return (unsigned long long)((b + MIB / 2) / MIB);
}

/* The record's words on G's devices for target NODES; NULL: no set
 * fits (under require, none holding a device's node). */
static void dev_detail(const struct snap_guest *g, const nodemask_t *nodes, struct plan_item *it)
{
	char note[96], was[sizeof(it->detail)];

	if (!nodes) {
		if (g->policy.devices != GPOL_DEV_REQUIRE || !dev_weighs(g))
			return;
		fmt_nodes(&g->dev_nodes, note, sizeof(note));
		memcpy(was, it->detail, sizeof(was));
		set_detail(it, "devices = require, only node sets with its device's node %s: %s", note, was);
		return;
	}
	if (it->kind == PLAN_MOVE && dev_refused(g, &it->from_nodes)) {
		char from[48], to[48];

		/* Moved for its device alone: say that, not a load or
		 * locality case. */
		fmt_nodes(&it->from_nodes, from, sizeof(from));
		fmt_nodes(nodes, to, sizeof(to));
		fmt_nodes(&g->dev_nodes, note, sizeof(note));
		set_detail(it, "devices = require: nodes %s → %s, its device's node %s: util %.2f→%.2f, %llu MiB to migrate, locality %.2f",
			   from, to, note, it->load_before, it->load_after, mib(it->migrate_bytes),
			   it->locality_before);
		return;
	}
	dev_note(g, nodes, note, sizeof(note));
	if (note[0])
		add_detail(it, note);
}

static double mem_demand_of(const struct policy_config *cfg, uint64_t total)
{
	return (double)total * (1.0 + cfg->mem_headroom);
}

/* The use that tells how many threads need a CPU of their own: a VM's
 * vCPUs', when each was measured (a vCPU's rate is at most 1 CPU), not
 * its QEMU process's, whose emulator, RCU and I/O threads add a share
 * that rides on the vCPUs' CPUs and is counted in its demand, but is no
 * thread the guest's memory must be local to. Counted as a third busy
 * thread, it would give a 2-vCPU domain two nodes and one vCPU none of
 * its memory (test_vm_emulator_use_is_no_busy_vcpu).
 * Anything else: USE. */
static double thread_use(const struct snap_guest *g, double use)
{
	double sum = 0.0;

	if (g->kind != GUEST_VM || !g->vm || !g->vm->vcpu_use || !g->vm->nr_vcpus || !g->busy_measured)
		return use;
	for (unsigned i = 0; i < g->vm->nr_vcpus; i++) {
		if (isnan(g->vm->vcpu_use[i]))
			return use;
		sum += g->vm->vcpu_use[i];
	}
	return fmin(use, sum);
}

/* Is the kernel measured bringing G's memory to where its threads run,
 * fast enough (kflow FOLLOWS within X->follow_s) and with no more left
 * to bring than it brought already? */
static bool kernel_brings(const struct pctx *x, const struct snap_guest *g)
{
	struct kflow_judgement j;

	kflow_judge(x->s, g, x->follow_s, &j);
	return j.verdict == KFLOW_FOLLOWS && j.remote_bytes <= g->mem_total - j.remote_bytes;
}

/* The guest view: its own share of each node's busy CPUs, the CPUs it may
 * be given per node, the nodes allowed for its memory. USABLE[n]: a CPU
 * node it may run on. Empty allowed masks mean "unrestricted" (acquire
 * could not read the parent's cpuset). */
static unsigned gview_build(struct pctx *x, const struct snap_guest *g, struct gview *v,
			    bool *usable)
{
	const struct snapshot *s = x->s;
	const struct policy_config *cfg = x->cfg;
	bool any_acpu = MASK_ANY(g->allowed_cpus);
	bool any_amem = MASK_ANY(&g->allowed_mems);
	unsigned total = 0, nusable = 0, sum_acpus = 0, max_acpus = 0;
	/* Free to run on every node it may use (struct gview says why that
	 * matters); the CPUs it may use, and those beyond its largest node. */
	bool unrestricted = true;

	memset(v, 0, sizeof(*v));
	v->cpu_use = isnan(g->cpu_use) || g->cpu_use < 0 ? 0.0 : g->cpu_use;
	v->cpu_demand = fmax(cfg->min_cpu, v->cpu_use * (1.0 + cfg->cpu_headroom));
	/* Headroom beyond what its threads can use is no demand: a 1-thread
	 * guest never needs more than one CPU. */
	if (g->nr_threads && v->cpu_demand > (double)g->nr_threads)
		v->cpu_demand = fmax(cfg->min_cpu, (double)g->nr_threads);
	/* Busy threads: as measured, at least as many as its use needs CPUs
	 * (not its demand: headroom would make a 2-thread guest using 2 CPUs
	 * count 3 and spread it over two nodes); never more than it has. They
	 * bound the nodes it may be given for CPU (guards.h). Its use may pass
	 * its busy threads by the slack a local fit allows: an idle thread's
	 * few ticks are accounting jitter, not a second busy thread that fits
	 * no node beside another guest and sends the guest off its memory's
	 * node (test_jitter_is_no_second_busy_thread). */
	v->busy_thr = (unsigned)fmax(1.0, ceil(thread_use(g, v->cpu_use) / (1.0 + LOCAL_FIT_SLACK) - 0.05));
	if (g->busy_measured && g->busy_threads > v->busy_thr)
		v->busy_thr = g->busy_threads;
	if (g->nr_threads && v->busy_thr > g->nr_threads)
		v->busy_thr = g->nr_threads;
	v->mem_total = g->mem_total;
	v->mem_demand = (uint64_t)mem_demand_of(cfg, g->mem_total);
	v->mem_node = g->mem_node;
	v->huge_node = g->huge_total ? g->huge_node : NULL;
	v->huge_total = v->huge_node ? g->huge_total : 0;
	v->huge_page = v->huge_node ? g->huge_page : 0;
	v->cur_nodes = g->cpu_nodes;
	v->cpus = g->cpus;
	for (unsigned n = 0; n < x->nn; n++) {
		const struct snap_node *nd = &s->nodes[n];
		unsigned on = 0, al = nd->nr_cpus;

		if (mask_test(&g->cpu_nodes, nd->id) || any_acpu) {
			unsigned c = 0, a = 0;

			for (unsigned w = x->wlo[n]; w < x->whi[n]; w++) {
				c += pop64(g->cpus->w[w] & nd->cpus.w[w]);
				a += pop64(g->allowed_cpus->w[w] & nd->cpus.w[w]);
			}
			on = c;
			if (any_acpu)
				al = a;
		}
		x->own[n] = on;   /* CPU count for now; a share below */
		x->acpus[n] = nd->nr_cpus ? al : 0;
		x->memok[n] = !any_amem || mask_test(&g->allowed_mems, nd->id);
		usable[n] = nd->nr_cpus > 0 && x->acpus[n] > 0;
		nusable += usable[n];
		total += on;
		if (usable[n]) {
			unrestricted = unrestricted && on > 0;
			sum_acpus += x->acpus[n];
			max_acpus = x->acpus[n] > max_acpus ? x->acpus[n] : max_acpus;
		}
	}
	unrestricted = unrestricted && nusable > 1;
	/* A floater: unrestricted, placed automatically, busy, and able to
	 * leave at least one node by its CPU demand (so it will be given
	 * fewer nodes; memory is checked when it is). */
	v->floater = unrestricted && g->policy.mode == GPOL_AUTO && !isnan(g->cpu_use) && v->cpu_use > 0.0 &&
		     v->cpu_demand <= cfg->max_util * (sum_acpus - max_acpus) + UTIL_EPS;
	/* Its share of each node's busy CPUs: where its threads ran, when
	 * acquire measured that (cpu_node), else its use spread evenly over
	 * its CPUs. An unrestricted guest that stays unrestricted is the
	 * exception: where its threads happened to be says nothing about
	 * where the scheduler will run them next, and over time that is
	 * evenly anywhere. */
	for (unsigned n = 0; n < x->nn; n++)
		x->own[n] = g->cpu_node && v->cpu_use > 0.0 && (!unrestricted || v->floater) ? g->cpu_node[n]
			  : total ? v->cpu_use * x->own[n] / total : 0.0;
	v->own = x->own;
	v->acpus = x->acpus;
	v->memok = x->memok;
	v->mem_major = -1;
	if (x->shift && v->floater && g->mem_node && g->mem_total > 0 && !g->mem_unknown)
		for (unsigned n = 0; n < x->nn; n++)
			if (x->s->nodes[n].nr_cpus && g->mem_node[n] > g->mem_total - g->mem_node[n])
				v->mem_major = (int)n;
	/* With the kernel's balancing on, the pages of a busy guest may be
	 * on their way to the node of the thread that touches them: moving
	 * its CPUs to the rest would send what arrived back, and the guest
	 * would be local later than with the kernel alone. Only measured:
	 * the kernel seen bringing them fast enough (kflow_judge) and past
	 * half of them there — else moving the CPUs to the larger part moves
	 * fewer bytes, and the kernel's balancing brings the smaller part
	 * back on fault (test_table: "beside the kernel's balancing: ..."). */
	mask_zero(&v->follow_nodes);
	if (g->cpu_node && v->cpu_use >= SNAP_BUSY_THREAD_CPU && kernel_brings(x, g))
		for (unsigned n = 0; n < x->nn; n++)
			if (g->cpu_node[n] >= SNAP_BUSY_THREAD_CPU) {
				mask_set(&v->follow_nodes, s->nodes[n].id);
				v->follow_any = true;
			}
	return nusable;
}

static double util_now(const struct pctx *x, const nodemask_t *nodes, bool *nan)
{
	double b = 0.0;
	unsigned c = 0;

	mask_foreach(id, nodes) {
		int n = x->idx_of_id[id];

		if (n < 0)
			continue;
		b += x->busy[n];
		c += x->s->nodes[n].nr_cpus;
		if (isnan(x->s->nodes[n].busy) && x->s->nodes[n].nr_cpus)
			*nan = true;
	}
	return c ? b / c : 0.0;
}

/* The exact CPUs of a move of G onto NODES: the nodes' CPUs it is
 * allowed, narrowed by core and cache where the host shows them
 * (cores.h; FROM: the CPUs its load was counted on), with a clause in
 * IT's detail when cores shaped them. */
static void cpumask_for(const struct pctx *x, const struct snap_guest *g, const nodemask_t *nodes,
			const cpumask_t *from, cpumask_t *out, struct plan_item *it)
{
	char why[96];

	snap_nodes_to_cpus(x->s, nodes, out);
	if (MASK_ANY(g->allowed_cpus))
		mask_and(out, out, g->allowed_cpus);
	cores_choose(x->cores, x->s, g, nodes, from, x->cfg->whole_cores, x->cfg->container_cores, out, why,
		     sizeof(why));
	if (why[0]) {
		add_detail(it, "; ");
		add_detail(it, why);
	}
}

static bool in_cooldown(const struct policy_config *cfg, const struct snapshot *s,
			const struct pstate_entry *pe, int64_t *ago)
{
	if (!pe)
		return false;
	*ago = s->mono_ns - pe->last_move_ns;
	return *ago < policy_guest_cooldown(cfg, pe->cooldown_ns);
}

/* Cool-down exception: PICK is fewer of G's current nodes and its busy
 * threads already run there (≥ 90 % of its CPU time): no thread moves, its
 * memory joins them, and nothing can pull it back out but a move that the
 * cool-down does hold. Held, a guest given two nodes while one of them
 * was still full of other guests' outgoing pages, whose threads then
 * settled on that one, would stay partly remote for the whole cool-down
 * (test_shrink_onto_threads_inside_cooldown). */
static bool narrows_onto_threads(const struct pctx *x, const struct snap_guest *g, const struct pcand *pick)
{
	double in = 0.0, all = 0.0;

	if (!g->cpu_node || !mask_subset(&pick->nodes, &g->cpu_nodes) || mask_equal(&pick->nodes, &g->cpu_nodes))
		return false;
	for (unsigned n = 0; n < x->nn; n++) {
		double u = g->cpu_node[n];

		if (!(u > 0.0))
			continue;
		all += u;
		if (mask_test(&pick->nodes, x->s->nodes[n].id))
			in += u;
	}
	return all > 0.0 && in >= 0.9 * all;
}

/* A node is idle for relieves_overload when what runs there, besides the
 * guest deciding, is under this many CPUs (a thread is busy from 0.25). */
#define IDLE_NODE_CPU 0.2

/* Cool-down exception: PICK's nodes are idle but for G, and G's own nodes
 * hold more busy threads than CPUs (counted over the guests that run only
 * there). Moving G gives its threads and those it leaves behind whole
 * CPUs; held, every guest of an oversubscribed node would wait out its
 * cool-down while an idle node stands by (test_idle_node_passes_cooldown).
 * It converges: once one guest is there (this
 * cycle's working copy, then the next sample) the node is no longer idle,
 * and the node a guest left is no longer over its CPUs. */
static bool relieves_overload(const struct pctx *x, const struct snap_guest *g, const struct gview *v,
			      const struct pcand *pick)
{
	unsigned threads = 0, cpus = 0;

	if (!v->busy_thr || v->busy_thr > pick->nr_to_cpus || mask_intersects(&pick->nodes, &g->cpu_nodes))
		return false;
	mask_foreach(id, &pick->nodes) {
		int n = x->idx_of_id[id];

		if (n < 0 || pctx_other_busy(x, v, (unsigned)n) > IDLE_NODE_CPU)
			return false;
	}
	for (unsigned n = 0; n < x->nn; n++)
		if (mask_test(&g->cpu_nodes, x->s->nodes[n].id))
			cpus += x->s->nodes[n].nr_cpus;
	for (unsigned i = 0; i < x->s->nr_guests; i++) {
		const struct snap_guest *h = &x->s->guests[i];

		if (h->busy_measured && MASK_ANY(&h->cpu_nodes) && mask_subset(&h->cpu_nodes, &g->cpu_nodes))
			threads += h->busy_threads;
	}
	return threads > cpus;
}

static void fill_target(struct plan_item *it, const struct pcand *c)
{
	it->crowded = c->crowded;
	it->local_fit = c->local_fit;
	it->to_nodes = c->nodes;
	it->to_mems = c->mems;
	it->load_after = c->util_after;
	it->migrate_bytes = c->migrate;
}

static void skip_cooldown(struct plan_item *it, const struct policy_config *cfg, const struct pstate_entry *pe,
			  int64_t ago)
{
	bool sized = cfg->cooldown_auto && pe->cooldown_ns > 0;
	char to[48];

	it->kind = PLAN_SKIP;
	it->skip = SKIP_COOLDOWN;
	fmt_nodes(&it->to_nodes, to, sizeof(to));
	set_detail(it, "cool-down: moved %llds ago (< %llds%s); would go to nodes %s, %llu MiB to migrate",
		   (long long)(ago / 1000000000LL),
		   (long long)(policy_guest_cooldown(cfg, pe->cooldown_ns) / 1000000000LL),
		   sized ? ", auto: sized by its last move's cost" : cfg->cooldown_auto ? ", auto's most" : "", to,
		   mib(it->migrate_bytes));
}

static void move_detail(struct plan_item *it, const struct policy_config *cfg, bool pull)
{
	char from[48], to[48], mems[48];

	fmt_nodes(&it->from_nodes, from, sizeof(from));
	fmt_nodes(&it->to_nodes, to, sizeof(to));
	fmt_nodes(&it->to_mems, mems, sizeof(mems));
	switch (it->reason) {
	case REASON_CONSOLIDATE:
		set_detail(it, "consolidate %u→%u nodes: node%s %s util %.2f→%.2f (≤%.2f), %llu MiB to migrate, locality %.2f",
			   mask_count(&it->from_nodes), mask_count(&it->to_nodes),
			   mask_count(&it->to_nodes) > 1 ? "s" : "", to, it->load_before, it->load_after,
			   cfg->max_util, mib(it->migrate_bytes), it->locality_before);
		break;
	case REASON_LOCALITY:
		if (pull && mask_count(&it->to_mems) > 1)
			/* Memory inside the threads' nodes is not memory on each
			 * thread's own node: no 1.00 is promised for a set (a VM
			 * whose vCPUs fit no one node). */
			set_detail(it, "pull memory to nodes %s: locality %.2f→at most 1.00 (over %u nodes, each thread "
				   "local to what lands on its own), %llu MiB to migrate, util %.2f→%.2f (≤%.2f)",
				   mems, it->locality_before, mask_count(&it->to_mems), mib(it->migrate_bytes),
				   it->load_before, it->load_after, cfg->max_util);
		else if (pull)
			set_detail(it, "pull memory to nodes %s: locality %.2f→1.00, %llu MiB to migrate, util %.2f→%.2f (≤%.2f)",
				   mems, it->locality_before, mib(it->migrate_bytes), it->load_before,
				   it->load_after, cfg->max_util);
		else
			set_detail(it, "locality %.2f: move nodes %s→%s (mems %s), util %.2f→%.2f (margin %.2f), %llu MiB to migrate",
				   it->locality_before, from, to, mems, it->load_before, it->load_after,
				   cfg->less_busy_margin, mib(it->migrate_bytes));
		break;
	case REASON_PINNED:
		set_detail(it, "pinned: nodes %s→%s (mems %s), util %.2f→%.2f, %llu MiB to migrate, locality %.2f",
			   from, to, mems, it->load_before, it->load_after, mib(it->migrate_bytes),
			   it->locality_before);
		break;
	default:
		set_detail(it, "relieve load: nodes %s util %.2f → nodes %s util %.2f (margin %.2f), %llu MiB to migrate, locality %.2f",
			   from, it->load_before, to, it->load_after, cfg->less_busy_margin,
			   mib(it->migrate_bytes), it->locality_before);
		break;
	}
}

static double gain_of(const struct gview *v, const struct policy_config *cfg, uint64_t local_before,
		      unsigned cur_k, const struct pcand *t, double load_before)
{
	double made_local = v->mem_total > local_before ? (double)(v->mem_total - local_before) : 0.0;
	double g = made_local / (1024.0 * MIB) * fmax(v->cpu_use, cfg->min_cpu);

	if (cur_k > t->k)
		g += cur_k - t->k;
	if (load_before > t->util_after)
		g += 4.0 * (load_before - t->util_after);
	return g;
}

/* A node of its set carries its threads when it ran at least this share
 * of its CPU time there (cpu_node). */
#define FOLLOW_MIN_SHARE 0.1

/* Where huge pages kept C from fitting: "; no free 2048 kB huge pages on
 * node 1" (the nodes of mems(C) without a free page of the guest's size;
 * or too few there). */
static void huge_detail(const struct pctx *x, const struct gview *v, const struct pcand *c,
			struct plan_item *it)
{
	nodemask_t none;
	char nodes[48], buf[128];

	if (!v->huge_total || c->huge_ok)
		return;
	mask_zero(&none);
	mask_foreach(id, &c->mems)
		if (!pctx_hroom(x, (unsigned)x->idx_of_id[id], v->huge_page))
			mask_set(&none, id);
	if (MASK_ANY(&none)) {
		fmt_nodes(&none, nodes, sizeof(nodes));
		if (snprintf(buf, sizeof(buf), "; no free %llu kB huge pages on node %s (%llu MiB of its huge pages must move)",
			     (unsigned long long)(v->huge_page >> 10), nodes, mib(c->huge_migrate)) < 0)
			return;
	} else {
		fmt_nodes(&c->mems, nodes, sizeof(nodes));
		if (snprintf(buf, sizeof(buf), "; %llu MiB of free %llu kB huge pages on node %s, %llu MiB of its huge pages must move",
			     mib(c->huge_room), (unsigned long long)(v->huge_page >> 10), nodes, mib(c->huge_migrate)) < 0)
			return;
	}
	add_detail(it, buf);
}

/* Spread over nodes C it needs, with the kernel's NUMA balancing off:
 * memory on nodes of C where none of its busy threads ran is remote for
 * all of them. Its memory follows its threads inside C — onto the nodes
 * of C that carry them (measured, cpu_node), CPUs unchanged — when those
 * nodes have room for it and more than a negligible part must move.
 * OUT: the evaluation of C with those memory nodes. */
static bool follow_threads(const struct pctx *x, const struct snap_guest *g, const struct gview *v,
			   struct pcand *out)
{
	nodemask_t tn;

	if (!g->cpu_node || g->locality_source != LOC_THREADS || !(v->cpu_use > 0.0) || !v->mem_total)
		return false;
	mask_zero(&tn);
	for (unsigned n = 0; n < x->nn; n++)
		if (mask_test(&g->cpu_nodes, x->s->nodes[n].id) && g->cpu_node[n] >= FOLLOW_MIN_SHARE * v->cpu_use)
			mask_set(&tn, x->s->nodes[n].id);
	if (!MASK_ANY(&tn) || mask_equal(&tn, &g->cpu_nodes))
		return false;
	pset_eval_mask(x, v, &g->cpu_nodes, &tn, out);
	return out->allowed_ok && out->mem_ok && out->room + out->already >= v->mem_demand &&
	       !plan_migration_negligible(out->migrate, v->mem_total);
}

/* Split (plan_item.split): hysteresis. The threads' node it is on stays
 * chosen unless another could hold this share of its memory more; on it,
 * it is settled while the node holds all but this share of what it could
 * (room on a node the guest fills comes and goes with the others). */
#define SPLIT_SLACK 0.05

/* Its memory fits no one node (room and its own memory there, or all of
 * it there already): the precondition of a split. */
static bool fits_no_node(const struct pctx *x, const struct gview *v)
{
	for (unsigned n = 0; n < x->nn; n++) {
		uint64_t own = v->mem_node ? v->mem_node[n] : 0;

		/* Any node with memory: a CPU-less one may hold it for a CPU
		 * node near it (guards.c, nearest_mem). */
		if (!x->s->nodes[n].mem_total || !v->memok[n])
			continue;
		if (pctx_room(x, n) + own >= v->mem_demand || own >= v->mem_total)
			return false;
	}
	return true;
}

/* What PICK's memory journey costs (guards.h, pcand.travel), if it has
 * one: said in IT's detail. */
static bool travel_cost_detail(struct plan_item *it, const struct pcand *pick)
{
	char buf[96];

	if (pick->travel <= 0.0)
		return false;
	snprintf(buf, sizeof(buf), "; cost %.1f GiB×distance/20, farthest %u", pick->travel / (1024.0 * MIB),
		 pick->travel_far);
	add_detail(it, buf);
	return true;
}

/* The next memory node of a split onto node index N (INSET: the nodes
 * already in it), or -1: the nearest to N of those that can hold some of
 * it (its own memory there plus room), nodes with CPUs before memory-only
 * ones (a CXL expander's, a tier's: slower, and often the one with the
 * most room), then the one that holds the most, then the lowest index.
 * By room first, a guest one node cannot hold got the memory-only node,
 * or a node in the other socket, while a sibling of N had room.
 * *CAP: what it can hold. */
static int span_next(const struct pctx *x, const struct gview *v, unsigned n, uint64_t *cap)
{
	const struct snapshot *s = x->s;
	const unsigned *row = &s->distance[n * x->nn];
	int best = -1;

	*cap = 0;
	for (unsigned m = 0; m < x->nn; m++) {
		uint64_t c;
		bool mo, bmo;

		if (x->inset[m] || !s->nodes[m].mem_total || !v->memok[m])
			continue;
		c = pctx_room(x, m) + (v->mem_node ? v->mem_node[m] : 0);
		if (!c)
			continue;
		mo = !s->nodes[m].nr_cpus;
		bmo = best >= 0 && !s->nodes[best].nr_cpus;
		if (best < 0 || mo < bmo || (mo == bmo && (row[m] < row[best] || (row[m] == row[best] && c > *cap)))) {
			best = (int)m;
			*cap = c;
		}
	}
	return best;
}

/* The split onto node index N: N's CPUs hold its busy threads, a whole
 * CPU each, beside the other load (as a local fit: no headroom, ≤ 1 +
 * LOCAL_FIT_SLACK); its memory on N and then on the nearest nodes that
 * can hold some of it (span_next) until they hold its demand. OUT: that set, its migration
 * the larger of what must leave the other nodes and *FIRST — what N
 * takes more, up to its room, from wherever it is (mover_spec.first).
 * *ON_FIRST: what N will hold. */
static bool split_eval(struct pctx *x, const struct gview *v, const bool *usable, unsigned n,
		       struct pcand *out, uint64_t *first, uint64_t *on_first)
{
	const struct snapshot *s = x->s;
	double use = fmax(fmax(v->cpu_use, x->cfg->min_cpu), (double)v->busy_thr);
	uint64_t cap, own_n = v->mem_node ? v->mem_node[n] : 0, off_n, room;
	nodemask_t cpun, mems;
	double u;

	/* Its use may pass its busy threads a little (the idle threads'
	 * ticks, rounding): the same slack as for the node's load. */
	if (!usable[n] || !s->nodes[n].mem_total || !v->memok[n] || !s->nodes[n].nr_cpus ||
	    v->acpus[n] < v->busy_thr || use > v->acpus[n] * (1.0 + LOCAL_FIT_SLACK))
		return false;
	u = (pctx_other_busy(x, v, n) + use) / s->nodes[n].nr_cpus;
	if (u > 1.0 + LOCAL_FIT_SLACK)
		return false;
	mask_zero(&cpun);
	mask_set(&cpun, s->nodes[n].id);
	mems = cpun;
	for (unsigned i = 0; i < x->nn; i++)
		x->inset[i] = i == n;
	cap = pctx_room(x, n) + own_n;
	while (cap < v->mem_demand) {
		uint64_t bcap;
		int best = span_next(x, v, n, &bcap);

		if (best < 0)
			return false;
		x->inset[best] = true;
		mask_set(&mems, s->nodes[best].id);
		cap += bcap;
	}
	pset_eval_mask(x, v, &cpun, &mems, out);
	if (!out->allowed_ok || !out->mem_ok)
		return false;
	off_n = v->mem_total > own_n ? v->mem_total - own_n : 0;
	/* A 1/16 of the room kept back: the mover counts a page it moves as
	 * one, where the kernel may move the whole huge page it is part of,
	 * so more can arrive than was planned and the node would dip into
	 * min_free. */
	room = pctx_room(x, n) - pctx_room(x, n) / 16;
	*first = room < off_n ? room : off_n;
	*on_first = own_n + *first;
	out->cpu_ok = true;
	out->crowded = false;
	out->local_fit = false;
	out->util_after = u;
	if (*first > out->migrate)
		out->migrate = *first;
	return true;
}

/* A guest whose memory fits no one node but whose busy threads fit one
 * node's CPUs: spread over two nodes, each of its threads is local to the
 * half of its memory on its own node — 50 %, however the memory lies
 * (test_bigguest_split). With all its threads on one
 * node N, it is as local as N's share of its memory. So its CPUs go to
 * the node that holds, or can be made to hold, the most of its memory,
 * its memory onto N up to N's room (min_free kept) and the rest onto the
 * fewest nodes that hold it. Taken when that beats where its threads run
 * now; settled once it is there. Returns false to leave the guest to the
 * general rules. */
static bool decide_split(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			 const struct gview *v, const bool *usable, struct gdec *d)
{
	const struct policy_config *cfg = x->cfg;
	struct plan_item *it = &d->it;
	struct pcand c, best;
	uint64_t first = 0, on = 0, bfirst = 0, bon = 0, beff = 0, slack, local_before;
	unsigned bn = 0, cur_k = mask_count(&g->cpu_nodes);
	nodemask_t none;
	int cur = -1;

	/* A split's room is free memory; huge pages need their pool. */
	if (v->huge_total)
		return false;
	bool found = false;
	double gain;
	int64_t ago = 0;
	char mems[48], from[48], note[96];

	if (!v->mem_total || !v->busy_thr || v->cpu_use < SNAP_BUSY_THREAD_CPU || !fits_no_node(x, v))
		return false;
	if (cur_k == 1)
		cur = x->idx_of_id[mask_first(g->cpu_nodes.w, MASK_BITS(&g->cpu_nodes))];
	slack = (uint64_t)(SPLIT_SLACK * (double)v->mem_total);
	mask_zero(&none);
	for (unsigned n = 0; n < x->nn; n++) {
		uint64_t eff;

		if (!split_eval(x, v, usable, n, &c, &first, &on) || dev_refused(g, &c.nodes))
			continue;
		/* Its threads' node holding its device counts as W_DEVICE
		 * more of its memory there (devices = prefer). */
		eff = on + (uint64_t)(dev_leave_cost(g, &c.nodes, &none) * (double)v->mem_total);
		/* More on the threads' node; the one it is on by the slack;
		 * then less to migrate (pcand_better). */
		if (!found || ((int)n == cur ? eff + slack > beff : ((int)bn == cur ? eff > beff + slack : eff > beff)) ||
		    (eff == beff && (int)bn != cur && pcand_better(&c, &best))) {
			found = true;
			best = c;
			bn = n;
			bfirst = first;
			bon = on;
			beff = eff;
		}
	}
	local_before = (uint64_t)(g->locality * (double)v->mem_total);
	if (!found)
		return false;
	fmt_nodes(&best.mems, mems, sizeof(mems));
	fill_target(it, &best);
	it->split = true;
	it->first_node = x->s->nodes[bn].id;
	it->first_bytes = bfirst;
	if ((int)bn == cur) {
		uint64_t outside = 0;

		for (unsigned n = 0; n < x->nn; n++)
			if (v->mem_node && !mask_test(&best.mems, x->s->nodes[n].id))
				outside += v->mem_node[n];
		if (plan_migration_negligible(outside, v->mem_total) &&
		    (bfirst <= slack || plan_migration_negligible(bfirst, v->mem_total))) {
			it->kind = PLAN_SETTLED;
			it->reason = REASON_NONE;
			it->first_bytes = 0;
			it->migrate_bytes = 0;
			set_detail(it, "settled split: its %llu MiB fit no one node; its %u busy threads on node %d with %llu MiB (%.0f%%), the rest on nodes %s; locality %.2f",
				   mib(v->mem_total), v->busy_thr, it->first_node, mib(bon),
				   100.0 * (double)bon / (double)v->mem_total, mems, g->locality);
			dev_note(g, &best.nodes, note, sizeof(note));
			add_detail(it, note);
			return true;
		}
	} else if (beff <= local_before + slack +
				  (uint64_t)(dev_leave_cost(g, &g->cpu_nodes, &none) * (double)v->mem_total) &&
		   !dev_refused(g, &g->cpu_nodes)) {
		/* No better than where its threads run now. */
		return false;
	}
	it->reason = cur_k > 1 ? REASON_CONSOLIDATE : REASON_LOCALITY;
	gain = (bon > local_before ? (double)(bon - local_before) : 0.0) / (1024.0 * MIB) *
	       fmax(v->cpu_use, cfg->min_cpu);
	if (cur_k > 1)
		gain += cur_k - 1;
	if (it->load_before > best.util_after)
		gain += 4.0 * (it->load_before - best.util_after);
	it->gain = gain;
	if (in_cooldown(cfg, x->s, pe, &ago)) {
		skip_cooldown(it, cfg, pe, ago);
		add_detail(it, "; split");
		return true;
	}
	it->kind = PLAN_MOVE;
	d->target = best;
	d->want = true;
	fmt_nodes(&g->cpu_nodes, from, sizeof(from));
	set_detail(it, "split: its %llu MiB fit no one node; its %u busy threads nodes %s→%d, %llu MiB onto it (→%.0f%%), mems %s, %llu MiB to migrate, locality %.2f",
		   mib(v->mem_total), v->busy_thr, from, it->first_node, mib(bfirst),
		   100.0 * (double)bon / (double)v->mem_total, mems, mib(best.migrate), g->locality);
	travel_cost_detail(it, &best);
	dev_note(g, &best.nodes, note, sizeof(note));
	add_detail(it, note);
	return true;
}

/* A guest pinned to CPU nodes CPUN (evaluated as C) whose busy threads
 * run (nearly) all on one of them, N (all but FOLLOW_MIN_SHARE of its CPU
 * time, measured): its memory on the other pinned nodes is remote for all
 * of them. *FN (node id), *FB: N and what N can take of the rest, up to
 * its room; true when that is worth moving and raises its locality by
 * more than SPLIT_SLACK. Threads spread over several pinned nodes are
 * left alone: no one node is theirs. */
static bool pin_follow(const struct pctx *x, const struct snap_guest *g, const struct gview *v,
		       const nodemask_t *cpun, const struct pcand *c, int *fn, uint64_t *fb)
{
	int best = -1;
	uint64_t off, room;

	if (!g->cpu_node || g->locality_source != LOC_THREADS || !(v->cpu_use > 0.0) || !v->mem_total ||
	    !v->mem_node)
		return false;
	for (unsigned n = 0; n < x->nn; n++)
		if (mask_test(cpun, x->s->nodes[n].id) && (best < 0 || g->cpu_node[n] > g->cpu_node[best]))
			best = (int)n;
	if (best < 0 || g->cpu_node[best] < (1.0 - FOLLOW_MIN_SHARE) * v->cpu_use ||
	    !mask_test(&c->mems, x->s->nodes[best].id))
		return false;
	off = v->mem_total > v->mem_node[best] ? v->mem_total - v->mem_node[best] : 0;
	room = pctx_room(x, (unsigned)best);
	room -= room / 16; /* huge pages, as in split_eval */
	*fb = room < off ? room : off;
	*fn = x->s->nodes[best].id;
	return !plan_migration_negligible(*fb, v->mem_total) &&
	       (double)(v->mem_node[best] + *fb) / (double)v->mem_total > g->locality + SPLIT_SLACK;
}

/* Whether G's pin was set (through the API, or in its domain's
 * metadata) since its last move PE. The API's store keeps whole seconds,
 * so the set time is taken as the second after: never before it was set
 * (a pin set within a second before a move may earn one more move, not a
 * pin held for the cool-down). */
static bool pin_set_since(const struct snapshot *s, const struct snap_guest *g, const struct pstate_entry *pe)
{
	int64_t set_mono;

	if (!pe || !g->policy.set_real_ns || !s->real_ns)
		return false;
	set_mono = g->policy.set_real_ns + 1000000000LL - (s->real_ns - s->mono_ns);
	return set_mono > pe->last_move_ns;
}

static void decide_pinned(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			  const struct gview *v, const bool *usable, struct gdec *d)
{
	const struct policy_config *cfg = x->cfg;
	struct plan_item *it = &d->it;
	nodemask_t cpun;
	struct pcand c;
	double pin_local;
	char pn[48];
	int64_t ago = 0;

	mask_zero(&cpun);
	for (unsigned n = 0; n < x->nn; n++)
		if (usable[n] && mask_test(&g->policy.nodes, x->s->nodes[n].id))
			mask_set(&cpun, x->s->nodes[n].id);
	it->reason = REASON_PINNED;
	fmt_nodes(&g->policy.nodes, pn, sizeof(pn));
	if (!MASK_ANY(&cpun)) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_OUTSIDE_ALLOWED;
		set_detail(it, "pinned to nodes %s, none of which has CPUs it may use", pn);
		return;
	}
	if (dev_refused(g, &cpun)) {
		char dn[48];

		/* The pin and the device are both the operator's orders: they
		 * disagree, and neither is overridden. */
		fmt_nodes(&g->dev_nodes, dn, sizeof(dn));
		it->kind = PLAN_SKIP;
		it->skip = SKIP_NO_FIT;
		set_detail(it, "pinned to nodes %s, none holding its device's node %s (devices = require): left as it is",
			   pn, dn);
		return;
	}
	pset_eval_mask(x, v, &cpun, &g->policy.nodes, &c);
	fill_target(it, &c);
	pin_local = v->mem_total ? (double)c.already / (double)v->mem_total : 1.0;
	if (mask_equal(&g->cpu_nodes, &cpun) && mask_equal(&g->mems, &c.mems) &&
	    pin_local >= cfg->locality_target) {
		int fn;
		uint64_t fb;

		/* Inside a multi-node pin its threads run where the scheduler
		 * puts them, and its memory may sit on another pinned node. A
		 * cpuset write cannot fix that (the pin is the cpuset), but the
		 * mover can, the cpuset unchanged: with the kernel's balancing
		 * off, memory goes onto the pinned node that runs (nearly) all
		 * of its CPU time (mover_spec.first). Settled afterwards: the
		 * cpuset is as pinned and the memory already there. */
		if (g->locality < cfg->locality_target && mask_count(&cpun) >= 2 && x->s->numa_balancing == 0 &&
		    pin_follow(x, g, v, &cpun, &c, &fn, &fb)) {
			it->reason = REASON_PINNED;
			it->first_node = fn;
			it->first_bytes = fb;
			it->migrate_bytes = fb;
			it->gain = PIN_GAIN + (double)fb / (1024.0 * MIB) * fmax(v->cpu_use, cfg->min_cpu);
			/* The cool-down does not hold the first pull after a
			 * move: the move that spread it (the operator's pin,
			 * the agent's spread) is what put its threads away from
			 * its memory, and its threads' node is known only
			 * cycles later (ENGINE_SPREAD_CYCLES); held for the
			 * whole cool-down, the guest would run remote that
			 * long (test_pinned_follow_after_a_move). A second pull
			 * inside the cool-down
			 * is held: threads the scheduler keeps moving between
			 * pinned nodes do not drag their memory after them. */
			if (in_cooldown(cfg, x->s, pe, &ago) && pe->last_follow) {
				skip_cooldown(it, cfg, pe, ago);
				return;
			}
			it->kind = PLAN_MOVE;
			it->follow = true;
			d->target = c;
			d->target.migrate = fb;
			d->want = true;
			set_detail(it, "pinned to nodes %s: memory follows its threads inside the pin, %llu MiB onto node %d where they run (kernel NUMA balancing off), locality %.2f",
				   pn, mib(fb), fn, g->locality);
			return;
		}
		it->kind = PLAN_SETTLED;
		it->reason = REASON_NONE;
		/* On several pinned nodes the memory on them may still be off
		 * its threads' nodes: the record says both. */
		set_detail(it, "settled on pinned nodes %s: %.2f of memory there, locality %.2f where its threads run",
			   pn, pin_local, g->locality);
		return;
	}
	if (!c.allowed_ok) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_OUTSIDE_ALLOWED;
		set_detail(it, "pinned to nodes %s, but none of their memory is in its allowed mems", pn);
		return;
	}
	if (!c.mem_ok) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_NO_ROOM_PINNED;
		set_detail(it, "pinned nodes %s have %llu MiB room (+%llu MiB of its own there) for %llu MiB needed",
			   pn, mib(c.room), mib(c.already), mib(v->mem_demand));
		return;
	}
	it->gain = PIN_GAIN + gain_of(v, cfg, (uint64_t)(g->locality * (double)g->mem_total), mask_count(&g->cpu_nodes), &c,
				      it->load_before);
	/* A pin set since its last move is an order, not a target that
	 * flaps: the cool-down does not hold it, or an operator widening a
	 * pin from the node the agent had just put it on would wait out the
	 * cool-down (test_table: "pinned since the last move: not held"). */
	if (mask_intersects(&g->cpu_nodes, &cpun) && in_cooldown(cfg, x->s, pe, &ago) &&
	    !pin_set_since(x->s, g, pe)) {
		skip_cooldown(it, cfg, pe, ago);
		return;
	}
	it->kind = PLAN_MOVE;
	d->target = c;
	d->want = true;
	move_detail(it, cfg, false);
}

/* C holds all of the guest's memory (but a negligible part) and fits
 * it, with headroom or as a local fit. Such a set is not left for load
 * unless the score, the migration counted, says so; so a guest placed
 * there is not moved off again next cycle, and the stability rule
 * (a target that would be a load case itself) does not hold it back.
 * A fit with headroom counts as well as the local fit: dropped as "hot"
 * above rebalance_util, the node that holds the guest's memory and fits
 * it would lose it to an idle node, all of its memory migrated
 * (test_low_node_load_window). */
static bool holds_memory(const struct gview *v, const struct pcand *c)
{
	return c->local_fit || (pcand_fits(c) && v->mem_total && plan_migration_negligible(c->migrate, v->mem_total));
}

/* What decide_auto weighs for one guest, step by step. */
struct adec {
	unsigned cur_k, kmin;     /* its CPU nodes now; the fewest a fitting set needs */
	bool cur_ok;              /* where it is fits it (or as well as anything, crowded) */
	bool crowded, allowed_block, load_case, locality_bad, nan;
	struct pcand cc;          /* where it is, evaluated as a candidate */
	uint64_t local_before;
	uint64_t tier;            /* its memory in the kernel's tier (tier_local), or 0 */
	double unow, locality;
	const struct pcand *best, *pick, *coolest, *hot;
	/* Beside the kernel's balancing, under devices = prefer (DEV_K): the
	 * node (id) the kernel is measured filling with its memory
	 * (kflow_filling, -1: none measured) and its memory there; the best
	 * option where its memory is (kernel_anchor) holding no device's
	 * node, and the best holding one, for the record (dev_flow_note). */
	bool dev_k;
	int kfill;
	uint64_t kfill_bytes;
	const struct pcand *anchor_opt, *dev_opt;
};

/* With the kernel tiering memory (snap_memory_tiering), G's memory on
 * nodes with memory and no CPUs is the kernel's tier (guards.c keeps it
 * where it is), not remote memory a placement could fix: a guest local
 * but for it is local. Its bytes there when that makes it reach the
 * locality target (A->locality_bad cleared), else 0. Without this such a
 * guest was "not less busy" every cycle, a skip for memory nothing here
 * will move. Its huge pages are no tier (hugetlb is not demoted). */
static uint64_t tier_local(const struct pctx *x, const struct gview *v, struct adec *a)
{
	uint64_t tier = 0;

	if (!a->locality_bad || !a->cur_k || !v->mem_node || !v->mem_total || !snap_memory_tiering(x->s))
		return 0;
	for (unsigned n = 0; n < x->nn; n++) {
		uint64_t h = v->huge_node ? v->huge_node[n] : 0;

		if (!x->s->nodes[n].nr_cpus && x->s->nodes[n].mem_total && v->mem_node[n] > h)
			tier += v->mem_node[n] - h;
	}
	if (!tier || (double)(a->local_before + tier) < x->cfg->locality_target * (double)v->mem_total)
		return 0;
	a->locality_bad = false;
	return tier;
}

/* Where it is now, weighed as a candidate (A->cc), and its locality. */
static void auto_current(struct pctx *x, const struct snap_guest *g, const struct gview *v, const bool *usable,
			 struct plan_item *it, struct adec *a)
{
	const struct policy_config *cfg = x->cfg;

	memset(&a->cc, 0, sizeof(a->cc));
	mask_foreach(id, &g->cpu_nodes) {
		int n = x->idx_of_id[id];

		if (n < 0 || !usable[n])
			a->cur_ok = false;
	}
	if (a->cur_k)
		pset_eval_mask(x, v, &g->cpu_nodes, NULL, &a->cc);
	/* Spread over more nodes than its busy threads fill, it does not fit
	 * them: some of its threads' nodes hold none of its memory. */
	a->cur_ok = a->cur_ok && !pcand_more_than_threads(x, v, &a->cc) &&
		    (pcand_fits(&a->cc) || (a->crowded && a->cc.mem_ok && a->cc.allowed_ok));
	/* Where its threads run (snap_guest.locality), not its memory
	 * inside the cpuset: a one-thread guest on two nodes with its memory
	 * on the other one is not local. */
	a->locality = a->cur_k && v->mem_total ? g->locality : (v->mem_total ? 0.0 : 1.0);
	a->local_before = (uint64_t)(a->locality * (double)v->mem_total);
	a->locality_bad = a->locality < cfg->locality_target;
	if (a->cur_k) {
		it->to_nodes = a->cc.nodes;
		it->to_mems = a->cc.mems;
		it->load_after = a->cc.util_after;
		it->migrate_bytes = a->cc.migrate;
	}
}

/* No node set fits it: a skip, with what all its usable nodes would give. */
static void auto_no_fit(struct pctx *x, const struct gview *v, const bool *usable, struct plan_item *it,
			const struct adec *a)
{
	const struct policy_config *cfg = x->cfg;
	struct pcand all;
	unsigned k = 0;
	char to[48];

	for (unsigned n = 0; n < x->nn; n++)
		if (usable[n])
			x->set[k++] = n;
	pset_eval(x, v, x->set, k, NULL, &all);
	it->kind = PLAN_SKIP;
	it->reason = a->locality_bad && a->cur_ok ? REASON_LOCALITY : REASON_LOAD;
	it->skip = a->allowed_block ? SKIP_OUTSIDE_ALLOWED : SKIP_NO_FIT;
	mask_zero(&it->to_nodes);
	mask_zero(&it->to_mems);
	it->load_after = all.util_after;
	it->migrate_bytes = all.migrate;
	fmt_nodes(&all.nodes, to, sizeof(to));
	if (a->allowed_block)
		set_detail(it, "only node sets whose memory is outside its allowed mems would fit");
	else
		set_detail(it, "no node set fits: needs %.1f CPUs and %llu MiB; nodes %s together reach util %.2f (≤%.2f) with %llu MiB room",
			   v->cpu_demand, mib(v->mem_demand), to, all.util_after, cfg->max_util,
			   mib(all.room + all.already));
	huge_detail(x, v, a->cur_k && !a->cc.huge_ok ? &a->cc : &all, it);
	if (all.busy_nan || a->nan)
		add_detail(it, " (some node busy not measured, taken as idle)");
}

/* CPUs to memory: under target where it runs, C fits it with headroom
 * and needs less of its memory moved, by the distance it travels, than
 * pulling it to where it runs (A->cc), scores better for it, and is no
 * busier than where it runs — or the bytes of that pull alone
 * (W_TRAVEL's term) cost more than a whole node's utilisation, which no
 * load difference can pay for: a guest doing next to nothing with many
 * GiB. The cheap way to locality needs no less-busy margin: that rule
 * keeps load moves from flapping, and a guest whose threads join its
 * memory is local there, settled unless that set becomes a load case.
 * Without it, a nearly idle guest with its threads on one node and many
 * GiB on a sibling no less busy by the margin would have all of them
 * moved to the least busy node of the other socket
 * (test_two_sockets_distance_cost). */
static bool to_memory(const struct pctx *x, const struct gview *v, const struct adec *a, const struct pcand *c)
{
	double bytes_cost;

	if (!a->cur_k || !a->locality_bad || c->crowded || !pcand_fits(c) || !v->mem_total ||
	    !(c->travel < a->cc.travel) || !(c->score < a->cc.score - UTIL_EPS))
		return false;
	bytes_cost = W_TRAVEL * a->cc.travel / (1024.0 * MIB) / fmax(v->cpu_use, x->cfg->min_cpu);
	return c->util_after <= a->unow + UTIL_EPS || bytes_cost >= 1.0;
}

/* Under devices = prefer, a guest that is not local where it runs moves
 * anyway: a set holding its device's node, where it is on none, is an
 * option as the cheap way to locality is (no less-busy margin), and the
 * score (W_DEVICE_PLACE against the migration) chooses among them. A
 * local guest is not moved for its device: that is require's. */
static bool to_device(const struct snap_guest *g, const struct adec *a, const struct pcand *c)
{
	return a->cur_k && a->locality_bad && !c->crowded && pcand_fits(c) && dev_weighs(g) &&
	       g->policy.devices == GPOL_DEV_PREFER && mask_intersects(&c->nodes, &g->dev_nodes) &&
	       !mask_intersects(&g->cpu_nodes, &g->dev_nodes);
}

/* Beside the kernel's NUMA balancing (it migrates on fault), is C where
 * G's memory is or is going anyway: it holds the larger part of it (its
 * threads there, the kernel brings the rest back on fault), or it keeps
 * its threads where the kernel is measured bringing it
 * (gview.follow_nodes)? A set that is neither sends the pages the kernel
 * already carried toward the threads across a second time, and moves
 * more than the CPUs going to the memory would. */
static bool kernel_anchor(const struct pctx *x, const struct gview *v, const struct pcand *c)
{
	if (!kernel_migrates_on_fault(x->s) || !v->mem_total)
		return false;
	return kernel_brings_back(x->s, c->migrate, v->mem_total) ||
	       (v->follow_any && mask_subset(&v->follow_nodes, &c->nodes));
}

/* Options as good as equal for pick_better: scores within this (a
 * percent of a node's utilisation), migrations within a percent of the
 * guest's memory. */
#define PICK_TIE 0.01

/* Other guests' memory on C's memory nodes (pctx_others). */
static uint64_t others_memory(const struct pctx *x, const struct gview *v, const struct pcand *c)
{
	uint64_t sum = 0;

	mask_foreach(id, &c->mems) {
		int n = x->idx_of_id[id];

		if (n >= 0)
			sum += pctx_others(x, v, (unsigned)n);
	}
	return sum;
}

/* Beside the kernel's balancing, under devices = prefer, does option C
 * hold G's device's node and rank with the sets where its memory is
 * (kernel_anchor), competing with them by score? The kernel migrates
 * toward the threads on fault, so with the CPUs on the device's node it
 * brings the memory there too, and only what it already carried
 * elsewhere is lost (it crosses again): C does, unless the kernel is
 * measured carrying the memory toward a node outside C that holds more
 * than DEV_FLOW_CARRIED of C's migration. Without this, beside the
 * kernel a guest moving anyway went where its memory was and never to
 * its device (test_device_beside_kernel_flow). */
static bool dev_anchor(const struct snap_guest *g, const struct adec *a, const struct pcand *c)
{
	if (!a->dev_k || !mask_intersects(&c->nodes, &g->dev_nodes))
		return false;
	return a->kfill < 0 || mask_test(&c->nodes, a->kfill) ||
	       (double)a->kfill_bytes <= DEV_FLOW_CARRIED * (double)c->migrate;
}

/* Is option C a better pick than P of the same size? Beside the kernel's
 * balancing a set holding the larger part of the memory (or where the
 * kernel brings it) comes first: the CPUs go to the memory, and memory
 * moves only where they cannot go. By the score alone, once the kernel
 * had carried part of a one-thread guest toward the node its thread
 * happened to run on, an idle node with all of its memory to move beat
 * sharing its memory's node with one other guest, and what the kernel
 * had carried crossed a second time
 * (test_misplaced_beside_kernel_later); so does a set holding its
 * device's node (dev_anchor). Then sets as good as equal
 * (PICK_TIE) go by the others' memory, then the score (pcand_better). */
static bool pick_better(const struct pctx *x, const struct snap_guest *g, const struct gview *v,
			const struct adec *a, const struct pcand *c, const struct pcand *p)
{
	bool ca = kernel_anchor(x, v, c) || dev_anchor(g, a, c), pa = kernel_anchor(x, v, p) || dev_anchor(g, a, p);

	if (ca != pa)
		return ca;
	/* As good as equal: the set holding less of the floaters' memory.
	 * Their CPUs go to their memory (a floater's load counts as free
	 * room until it is placed, so nothing else here says where they
	 * will run), and a guest taking their node pushes them off it: a
	 * pod interleaved over every node took, by a sliver more of its
	 * memory there, the node holding two small guests' memory, and
	 * theirs was moved off
	 * (test_big_pod_leaves_small_guests_memory_node). */
	if (fabs(c->score - p->score) < PICK_TIE &&
	    (double)(c->migrate > p->migrate ? c->migrate - p->migrate : p->migrate - c->migrate) <=
		    0.01 * (double)v->mem_total) {
		uint64_t co = others_memory(x, v, c), po = others_memory(x, v, p);

		if (co != po)
			return co < po;
	}
	return pcand_better(c, p);
}

/* The candidates of the fewest nodes: the best and the coolest of them
 * (A->best, A->coolest), and the one to go to (A->pick), if any: fewer
 * nodes, more local, or less busy by the margin, and not a set it would
 * leave again (A->hot). */
static void auto_pick(const struct pctx *x, const struct snap_guest *g, const struct gview *v, struct adec *a)
{
	const struct policy_config *cfg = x->cfg;
	/* Its devices, asked once: each question scans its 1024-bit device
	 * mask, and the answers are the same for every candidate. */
	bool cur_refused = dev_refused(g, &g->cpu_nodes), dev_w = dev_weighs(g);

	a->dev_k = dev_w && g->policy.devices == GPOL_DEV_PREFER && kernel_migrates_on_fault(x->s) && v->mem_total;
	a->kfill = a->dev_k ? kflow_filling(x->s, g) : -1;
	if (a->kfill >= 0 && x->idx_of_id[a->kfill] >= 0 && g->mem_node)
		a->kfill_bytes = g->mem_node[x->idx_of_id[a->kfill]];

	for (unsigned i = 0; i < x->nr_cands; i++) {
		const struct pcand *c = &x->cands[i];

		if (c->k != a->kmin || c->crowded != a->crowded)
			continue;
		if (!a->best || pcand_better(c, a->best))
			a->best = c;
		if (!a->coolest || c->util_after < a->coolest->util_after)
			a->coolest = c;
	}
	for (unsigned i = 0; i < x->nr_cands; i++) {
		const struct pcand *c = &x->cands[i];
		bool sub = a->cur_k && mask_subset(&c->nodes, &g->cpu_nodes);
		bool opt;

		if (c->crowded != a->crowded)
			continue;
		if (!sub) {
			/* Its huge pages cannot come where it runs (too few free
			 * pages of their size there): its CPUs go to them
			 * instead, onto a set that fits and holds them all. */
			opt = c->k == a->kmin &&
			      (!a->cur_k || cur_refused ||
			       c->util_after * (1.0 + cfg->less_busy_margin) +
					       (dev_w ? dev_leave_cost(g, &g->cpu_nodes, &c->nodes) : 0.0) <
				       a->unow ||
			       (a->locality_bad && !a->cc.huge_ok && pcand_fits(c) && v->huge_total && !c->huge_migrate) ||
			       to_memory(x, v, a, c) || to_device(g, a, c));
			/* Local where it is and its threads fit its CPUs
			 * (local fit): less load elsewhere must pay for moving
			 * its memory there (the score counts W_MIGRATE for it),
			 * else two one-thread guests sharing the 2-CPU node that
			 * holds their memory would be split at once. */
			if (opt && a->cur_k && !a->locality_bad && holds_memory(v, &a->cc) && a->cur_ok &&
			    c->score >= a->cc.score - UTIL_EPS)
				opt = false;
			if (opt && a->cur_k)
				a->load_case = true;
		} else if (c->k < a->cur_k) {
			opt = true;
		} else {
			opt = a->locality_bad && c->migrate > 0;
		}
		/* Stability: a target that would itself be a load case next
		 * cycle (at or over rebalance_util with a set less busy by the
		 * margin) would be left again: don't go there. */
		if (opt && !holds_memory(v, c) && c->util_after >= cfg->rebalance_util - UTIL_EPS &&
		    !mask_subset(&a->coolest->nodes, &c->nodes) &&
		    a->coolest->util_after * (1.0 + cfg->less_busy_margin) < c->util_after) {
			a->hot = c;
			opt = false;
		}
		if (opt && a->dev_k) {
			if (mask_intersects(&c->nodes, &g->dev_nodes)) {
				if (!a->dev_opt || pcand_better(c, a->dev_opt))
					a->dev_opt = c;
			} else if (kernel_anchor(x, v, c) && (!a->anchor_opt || pcand_better(c, a->anchor_opt)))
				a->anchor_opt = c;
		}
		if (opt && (!a->pick || c->k < a->pick->k || (c->k == a->pick->k && pick_better(x, g, v, a, c, a->pick))))
			a->pick = c;
	}
	a->load_case = a->load_case && a->unow >= cfg->rebalance_util - UTIL_EPS;
}

/* A guest with parts (pod containers with their own cpusets) on the
 * nodes it needs, its memory inside them, and a part whose threads run
 * off its memory: each part gets its own node of the set (parts.h), as
 * a move of the guest onto the same set (REASON_LOCALITY). true: IT
 * says so (a move, or its cool-down's skip). */
static bool resplit(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
		    const struct gview *v, struct gdec *d, const struct adec *a)
{
	struct plan_item *it = &d->it;
	struct plan_part *pp;
	nodemask_t mems = a->cc.mems;
	uint64_t mig = 0;
	int64_t ago = 0;
	bool bad;

	if (!g->nr_parts || mask_count(&g->cpu_nodes) < 2 || !a->cur_k)
		return false;
	/* Each part may take the memory of its own node of the set. */
	for (unsigned n = 0; n < x->nn; n++)
		if (x->s->nodes[n].mem_total && mask_test(&a->cc.nodes, x->s->nodes[n].id))
			mask_set(&mems, x->s->nodes[n].id);
	pp = xcalloc(g->nr_parts, sizeof(*pp));
	bad = parts_split(x->s, g, &a->cc.nodes, &mems, g->cpus, pp, &mig) &&
	      parts_misplaced(x->s, g, pp, g->nr_parts, x->cfg->locality_target);
	free(pp);
	if (!bad)
		return false;
	fill_target(it, &a->cc);
	it->to_mems = mems;
	it->migrate_bytes = mig;
	it->reason = REASON_LOCALITY;
	it->gain = gain_of(v, x->cfg, a->local_before, a->cur_k, &a->cc, a->unow);
	if (in_cooldown(x->cfg, x->s, pe, &ago)) {
		skip_cooldown(it, x->cfg, pe, ago);
		return true;
	}
	it->kind = PLAN_MOVE;
	d->target = a->cc;
	d->target.mems = mems;
	d->target.migrate = mig;
	d->want = true;
	set_detail(it, "its containers each onto their own node of the set it has: %llu MiB to move, locality %.2f",
		   mib(mig), a->locality);
	return true;
}

/* Spread over the nodes it must have (its busy threads or memory need
 * them), all its memory inside them, but not where its threads run: a
 * cpuset cannot place pages inside the set. The kernel's NUMA balancing
 * moves them toward the threads touching them; when it is on, that is its
 * job and the guest is settled. When it is off, its memory on nodes of
 * the set where none of its threads runs goes to the nodes that carry
 * them, if they have room (follow_threads); else nothing here can do
 * better: say so rather than move it. A pod whose containers sit off
 * their memory is re-split first (resplit). */
static void auto_in_set(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			const struct gview *v, struct gdec *d, const struct adec *a)
{
	const struct policy_config *cfg = x->cfg;
	struct plan_item *it = &d->it;
	struct pcand fc;
	int64_t ago = 0;
	char from[48];

	fmt_nodes(&g->cpu_nodes, from, sizeof(from));
	if (resplit(x, pe, g, v, d, a))
		return;
	if (x->s->numa_balancing == 0 && follow_threads(x, g, v, &fc)) {
		char tn[48];

		fill_target(it, &fc);
		it->reason = REASON_LOCALITY;
		it->gain = gain_of(v, cfg, a->local_before, a->cur_k, &fc, a->unow);
		if (in_cooldown(cfg, x->s, pe, &ago)) {
			skip_cooldown(it, cfg, pe, ago);
			return;
		}
		it->kind = PLAN_MOVE;
		d->target = fc;
		d->want = true;
		fmt_nodes(&fc.mems, tn, sizeof(tn));
		set_detail(it, "memory follows its threads inside nodes %s: %llu MiB onto nodes %s, where its busy threads run (kernel NUMA balancing off), locality %.2f",
			   from, mib(fc.migrate), tn, a->locality);
		return;
	}
	if (x->s->numa_balancing > 0) {
		it->kind = PLAN_SETTLED;
		it->reason = REASON_NONE;
		set_detail(it, "settled on nodes %s, which it needs: locality %.2f; memory inside them follows its threads by the kernel's NUMA balancing (on)",
			   from, a->locality);
	} else {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_IN_SET;
		set_detail(it, "on nodes %s, which it needs: locality %.2f with all its memory on them; kernel NUMA balancing is %s, and a cpuset cannot place memory by thread",
			   from, a->locality, x->s->numa_balancing == 0 ? "off" : "unknown");
	}
}

/* Nowhere to go that is better: a skip, with the best set and why not. */
static void auto_not_less_busy(struct pctx *x, const struct gview *v, struct plan_item *it, const struct adec *a)
{
	const struct policy_config *cfg = x->cfg;
	const struct pcand *best = a->best;
	char to[48], from[48];

	fill_target(it, best);
	it->kind = PLAN_SKIP;
	it->skip = SKIP_NOT_LESS_BUSY;
	it->gain = gain_of(v, cfg, a->local_before, a->cur_k, best, a->unow);
	fmt_nodes(&best->nodes, to, sizeof(to));
	if (a->hot) {
		char cool[48];

		fmt_nodes(&a->hot->nodes, from, sizeof(from));
		fmt_nodes(&a->coolest->nodes, cool, sizeof(cool));
		set_detail(it, "not less busy: nodes %s would be util %.2f (≥%.2f), to be left for nodes %s (util %.2f), which are not less busy than util %.2f now",
			   from, a->hot->util_after, cfg->rebalance_util, cool, a->coolest->util_after, a->unow);
	} else {
		set_detail(it, "not less busy: nodes %s would be util %.2f, ×%.2f ≥ util %.2f now; %llu MiB to migrate, locality %.2f",
			   to, best->util_after, 1.0 + cfg->less_busy_margin, a->unow,
			   mib(best->migrate), it->locality_before);
	}
	if (a->nan || best->busy_nan)
		add_detail(it, " (some node busy not measured, taken as idle)");
	if (a->cur_k)
		huge_detail(x, v, &a->cc, it);
}

/* What its memory's journey costs (travel_cost_detail), or what going to
 * its memory saved against pulling it where it runs (MD). */
static void travel_detail(struct plan_item *it, const struct pcand *pick, const struct mdefer *md)
{
	char buf[96];

	if (travel_cost_detail(it, pick) || !(md->cc_travel > 0.0 && !md->cc_same))
		return;
	snprintf(buf, sizeof(buf), "; CPUs to its memory, not %llu MiB over distance %u", mib(md->cc_migrate),
		 md->cc_travel_far);
	add_detail(it, buf);
}

/* The move to A->pick, unless its cool-down holds it. */
static void auto_move(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
		      const struct gview *v, struct gdec *d, const struct adec *a)
{
	const struct policy_config *cfg = x->cfg;
	const struct pcand *pick = a->pick;
	struct plan_item *it = &d->it;
	int64_t ago = 0;

	fill_target(it, pick);
	it->gain = gain_of(v, cfg, a->local_before, a->cur_k, pick, a->unow);
	if (in_cooldown(cfg, x->s, pe, &ago) && !(a->locality_bad && narrows_onto_threads(x, g, pick)) &&
	    !relieves_overload(x, g, v, pick)) {
		skip_cooldown(it, cfg, pe, ago);
		return;
	}
	it->kind = PLAN_MOVE;
	d->target = *pick;
	d->want = true;
	/* The sentence is written once the move is accepted
	 * (move_detail_due); what it needs of this moment is kept. */
	d->md = (struct mdefer){
		.due = true,
		.pull = mask_equal(&pick->nodes, &g->cpu_nodes),
		.more = pcand_more_than_threads(x, v, pick),
		.cool = in_cooldown(cfg, x->s, pe, &ago),
		.cool_narrows = mask_intersects(&pick->nodes, &g->cpu_nodes),
		.nan = a->nan || pick->busy_nan,
		.cc_travel = a->cc.travel,
		.cc_migrate = a->cc.migrate,
		.cc_travel_far = a->cc.travel_far,
		.cc_same = mask_equal(&pick->nodes, &a->cc.nodes),
	};
	if (a->anchor_opt && mask_intersects(&pick->nodes, &g->dev_nodes) && !kernel_anchor(x, v, pick)) {
		d->md.dev_won = true;
		d->md.dev_over = a->anchor_opt->nodes;
	} else if (a->dev_opt && a->kfill >= 0 && !mask_intersects(&pick->nodes, &g->dev_nodes) &&
		   kernel_anchor(x, v, pick) && !dev_anchor(g, a, a->dev_opt)) {
		d->md.dev_kept = true;
	}
	d->md.kfill = a->kfill;
	d->md.kfill_bytes = a->kfill_bytes;
	/* Short: these must survive the detail's length limit. */
	if (a->crowded)
		d->md.fit_note = pick->bare_mem ? "; nothing fits with headroom: least loaded, no memory headroom"
			   : "; nothing fits with headroom: least loaded";
	else if (pick->local_fit)
		d->md.fit_note = plan_migration_negligible(pick->migrate, v->mem_total)
			   ? "; fits without headroom: its memory is there"
			   : "; fits without headroom: most of its memory is there, the kernel brings the rest";
	else if (a->cc.cores_short)
		d->md.fit_note = "; no free core for each busy thread where it is";
}

/* Why its device won or lost against where its memory is, beside the
 * kernel (MD): after dev_detail's "near/away from its device on node N". */
static void dev_flow_note(struct plan_item *it, const struct mdefer *md)
{
	char buf[192], over[48];

	if (md->dev_won) {
		fmt_nodes(&md->dev_over, over, sizeof(over));
		if (md->kfill < 0)
			snprintf(buf, sizeof(buf), ", preferred over node %s where its memory is: the kernel not measured moving it",
				 over);
		else
			snprintf(buf, sizeof(buf), ", preferred over node %s where its memory is: the kernel carried only %llu MiB toward node %d",
				 over, mib(md->kfill_bytes), md->kfill);
	} else if (md->dev_kept) {
		snprintf(buf, sizeof(buf), ", kept by the kernel's flow toward node %d (%llu MiB there)", md->kfill,
			 mib(md->kfill_bytes));
	} else {
		return;
	}
	add_detail(it, buf);
}

/* auto_move's sentence for D, guest G of the snapshot, when it is still
 * to be written: as auto_move would have written it (the item's fields
 * and D's target are what they were then). */
static void move_detail_due(struct gdec *d, const struct snap_guest *g, const struct policy_config *cfg)
{
	const struct mdefer *md = &d->md;
	struct plan_item *it = &d->it;

	if (!md->due)
		return;
	d->md.due = false;
	move_detail(it, cfg, md->pull);
	travel_detail(it, &d->target, md);
	if (md->more)
		add_detail(it, "; memory does not fit fewer nodes");
	if (md->fit_note)
		add_detail(it, md->fit_note);
	if (md->cool)
		add_detail(it, md->cool_narrows ? "; in cool-down: narrows onto its threads"
				: "; in cool-down: onto an idle node, its own over its CPUs");
	if (md->nan)
		add_detail(it, " (some node busy not measured, taken as idle)");
	dev_detail(g, &d->target.nodes, it);
	dev_flow_note(it, md);
}

/* The candidate sets of G (A->kmin, A->crowded, A->allowed_block),
 * counted by cores when X->by_cores is set (on a host with SMT siblings:
 * its busy threads and those already there no more than a set's cores),
 * and by CPUs as before where no set with free cores fits it: an
 * oversubscribed host still places every guest. A set grown for memory
 * onto a node with free cores is no candidate while one node holding its
 * threads and its memory is (crowded, short of cores): drop_spread, so a
 * guest is not spread for cores. X->by_cores stays as chosen for the
 * rest of G's decision, so where it is now is weighed as the candidates
 * were. */
static void auto_cands(struct pctx *x, const struct snap_guest *g, const struct gview *v, const bool *usable,
		       struct adec *a)
{
	a->kmin = dev_cands(x, g, v, usable, pcands_generate(x, v, usable, &a->allowed_block));
	if (x->by_cores && !a->kmin) {
		x->by_cores = false;
		a->kmin = dev_cands(x, g, v, usable, pcands_generate(x, v, usable, &a->allowed_block));
	}
	/* Nothing fits with headroom: the least-loaded sets that hold its
	 * busy threads, its memory local there, by the same rules. */
	if (!a->kmin) {
		a->kmin = pcands_crowded_min(x);
		a->crowded = a->kmin > 0;
	}
}

/* A guest the policy places by itself (not pinned, not a start): split
 * when its memory fits no node; else where it is now against the
 * candidate sets of the fewest nodes, and settled, skipped or moved.
 * BY_CORES: its sets counted by cores (auto_cands). true: so counted,
 * where it is has no free core for each busy thread and it goes nowhere
 * (no set with free cores is less busy, or it is held): decided again
 * by CPUs, as before (decide_auto). */
static bool decide_auto_in(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			   const struct gview *v, const bool *usable, unsigned nusable, bool nan,
			   bool by_cores, struct gdec *d)
{
	const struct policy_config *cfg = x->cfg;
	struct plan_item *it = &d->it;
	struct adec a = { .cur_k = mask_count(&g->cpu_nodes), .unow = it->load_before, .nan = nan };
	char from[48];

	a.cur_ok = a.cur_k > 0;
	if (!nusable) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_OUTSIDE_ALLOWED;
		it->reason = REASON_NONE;
		set_detail(it, "no CPU node it may use: allowed cpus hold no online CPU");
		return false;
	}
	if (decide_split(x, pe, g, v, usable, d))
		return false;
	x->by_cores = by_cores && x->smt;
	auto_cands(x, g, v, usable, &a);
	auto_current(x, g, v, usable, it, &a);
	a.tier = tier_local(x, v, &a);
	/* Where it is, weighed as the candidates are for its devices. */
	a.cur_ok = a.cur_ok && !dev_refused(g, &g->cpu_nodes);
	if (a.cur_k && dev_weighs(g) && !mask_intersects(&g->cpu_nodes, &g->dev_nodes))
		a.cc.score += W_DEVICE_PLACE;
	if (!a.kmin) {
		auto_no_fit(x, v, usable, it, &a);
		dev_detail(g, NULL, it);
		return false;
	}
	auto_pick(x, g, v, &a);
	if (x->by_cores && a.cc.cores_short && !a.pick)
		return true;
	a.nan = a.nan || a.cc.busy_nan;

	if (!a.locality_bad && a.cur_k <= a.kmin && a.cur_ok && !a.load_case) {
		it->kind = PLAN_SETTLED;
		it->reason = REASON_NONE;
		if (x->terse)
			return false;
		fmt_nodes(&g->cpu_nodes, from, sizeof(from));
		if (a.tier)
			set_detail(it, "settled on nodes %s: local but for %llu MiB in the kernel's memory tier (nodes without CPUs, tiering on), left to it: locality %.2f, util %.2f (≤%.2f)",
				   from, mib(a.tier), a.locality, a.cc.util_after, cfg->max_util);
		else
			set_detail(it, "settled on nodes %s: locality %.2f (≥%.2f), util %.2f (≤%.2f)", from,
				   a.locality, cfg->locality_target, a.cc.util_after, cfg->max_util);
		if (a.crowded)
			add_detail(it, "; nothing fits with headroom, none less loaded");
		else if (a.cc.local_fit)
			add_detail(it, "; fits without headroom: its memory is here, its threads fit the CPUs");
		dev_detail(g, &g->cpu_nodes, it);
		return false;
	}
	if (!a.cur_k)
		it->reason = REASON_PLACE;
	else if (a.cur_k > a.kmin)
		it->reason = REASON_CONSOLIDATE;
	else if (a.locality_bad)
		it->reason = REASON_LOCALITY;
	else
		it->reason = REASON_LOAD;
	if (!a.pick && a.locality_bad && a.cur_ok && a.cur_k >= 2 && a.cur_k <= a.kmin && !a.load_case &&
	    a.cc.migrate == 0)
		auto_in_set(x, pe, g, v, d, &a);
	else if (!a.pick)
		auto_not_less_busy(x, v, it, &a);
	else
		auto_move(x, pe, g, v, d, &a);
	return false;
}

static void decide_auto(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			const struct gview *v, const bool *usable, unsigned nusable, bool nan,
			struct gdec *d)
{
	struct gdec before = *d;

	if (decide_auto_in(x, pe, g, v, usable, nusable, nan, true, d)) {
		*d = before;
		decide_auto_in(x, pe, g, v, usable, nusable, nan, false, d);
	}
	/* Every other evaluation counts CPUs (pinned guests, splits, advice). */
	x->by_cores = false;
}

/* gview_build for the guest as the policy decides on it (*USED): SNAP's
 * G, or its start-placement stand-in (*TMP). The stand-in's assumed use
 * runs nowhere yet (no share of any node's busy CPUs is its own), and it
 * needs room for PLACE_START_MAX_BYTES on its target. */
static unsigned view_of(struct pctx *x, const struct snap_guest *g, bool as_start, struct gview *v, bool *usable,
			struct snap_guest *tmp, const struct snap_guest **used)
{
	/* AS_START: decided (or being decided) as a start placement; a guest
	 * first seen with its young process's average use that was not is
	 * decided, and committed, on that use. */
	bool start = as_start && x->cfg->start_place && place_start_placeable(g, tmp);
	unsigned n = gview_build(x, start ? tmp : g, v, usable);

	if (start) {
		for (unsigned i = 0; i < x->nn; i++)
			x->own[i] = 0.0;
		v->mem_demand = PLACE_START_MAX_BYTES;
	}
	if (used)
		*used = start ? tmp : g;
	return n;
}

/* A container's start placement (place.c: place_start_placeable says
 * which, place_start_item what its move is): decided here, on its
 * stand-in, against the working copy like any guest, so that the moves
 * of the same cycle count for and against it. */
static void evaluate_start(struct pctx *x, const struct pstate_entry *pe, const struct snap_guest *g,
			   struct gdec *d, struct gview *v, bool *usable, bool nan)
{
	struct plan_item *it = &d->it;
	struct snap_guest tmp;
	const struct snap_guest *sg;
	unsigned nusable = view_of(x, g, true, v, usable, &tmp, &sg);

	it->cpu_demand = v->cpu_demand;
	decide_auto(x, pe, sg, v, usable, nusable, nan, d);
	/* The start's words wrap the move's sentence, said of the stand-in:
	 * written now, not on acceptance. */
	move_detail_due(d, sg, x->cfg);
	if (it->kind == PLAN_MOVE)
		place_start_item(x->cfg, x->s, g, it);
}

/* Decide for guest GI against the current working copy. Leaves the
 * guest's view in X's scratch (pctx_commit needs it). */
static void evaluate(struct pctx *x, const struct pstate *prev, unsigned gi, struct gdec *d,
		     struct gview *v, bool *usable)
{
	const struct snapshot *s = x->s;
	const struct policy_config *cfg = x->cfg;
	const struct snap_guest *g = &s->guests[gi];
	const struct pstate_entry *pe = prev ? pstate_find(prev, g->id) : NULL;
	struct plan_item *it = &d->it;
	bool nan = false;
	unsigned nusable;

	memset(d, 0, sizeof(*d));
	d->version = x->version;
	plan_item_init(it, s, gi, PLAN_MOVE);
	it->load_before = util_now(x, &g->cpu_nodes, &nan);
	it->mem_demand = (uint64_t)mem_demand_of(cfg, g->mem_total);
	it->cpu_demand = isnan(g->cpu_use) ? NAN
		       : fmax(cfg->min_cpu, fmax(0.0, g->cpu_use) * (1.0 + cfg->cpu_headroom));

	if (g->owner[0]) {
		/* Another placer's decision: fighting it would undo its
		 * guarantee and be undone on its next pass. */
		it->kind = PLAN_SKIP;
		it->skip = SKIP_OWNED;
		set_detail(it, "placed by the %s, never moved: %s", g->owner, g->owner_reason);
		return;
	}
	if (g->policy.mode == GPOL_IGNORE) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_IGNORED;
		set_detail(it, "per-guest policy is ignore: never moved");
		return;
	}
	/* Its memory per node unknown: no locality to judge and no migration
	 * to size, so it stays as it is, pinned or not (zeros read as "all
	 * local" would have let it be moved with its memory unsized). */
	if (g->mem_unknown) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_MEM_UNKNOWN;
		set_detail(it, "memory per node not measured (no memory.numa_stat): left where it is");
		return;
	}
	if (g->policy.mode != GPOL_PINNED && (isnan(g->cpu_use) || g->first_sight)) {
		struct snap_guest sg;

		if (cfg->start_place && place_start_placeable(g, &sg)) {
			struct gdec before = *d;

			evaluate_start(x, pe, g, d, v, usable, nan);
			if (it->kind == PLAN_MOVE)
				return;
			*d = before;
		}
	}
	if (g->policy.mode != GPOL_PINNED && isnan(g->cpu_use)) {
		it->kind = PLAN_SKIP;
		it->skip = SKIP_NO_USAGE;
		set_detail(it, "CPU use not measured yet (first sight); decided next cycle");
		return;
	}
	nusable = gview_build(x, g, v, usable);
	it->cpu_demand = v->cpu_demand;
	if (g->policy.mode == GPOL_PINNED) {
		decide_pinned(x, pe, g, v, usable, d);
		if (it->kind != PLAN_SKIP) {
			char note[96];

			dev_note(g, &g->policy.nodes, note, sizeof(note));
			add_detail(it, note);
		}
	} else {
		decide_auto(x, pe, g, v, usable, nusable, nan, d);
	}
}

/* Max-heap of guest indices by (gain desc, index asc). */
struct heap {
	unsigned n;
	unsigned *a;
	const struct gdec *d;
};

static bool heap_before(const struct heap *h, unsigned a, unsigned b)
{
	double ga = h->d[a].it.gain, gb = h->d[b].it.gain;

	if (ga != gb)
		return ga > gb;
	return a < b;
}

static void heap_push(struct heap *h, unsigned gi)
{
	unsigned i = h->n++;

	h->a[i] = gi;
	while (i > 0) {
		unsigned p = (i - 1) / 2;

		if (!heap_before(h, h->a[i], h->a[p]))
			break;
		unsigned t = h->a[i];
		h->a[i] = h->a[p];
		h->a[p] = t;
		i = p;
	}
}

static unsigned heap_pop(struct heap *h)
{
	unsigned top = h->a[0], i = 0;

	h->a[0] = h->a[--h->n];
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i;

		if (l < h->n && heap_before(h, h->a[l], h->a[m]))
			m = l;
		if (r < h->n && heap_before(h, h->a[r], h->a[m]))
			m = r;
		if (m == i)
			break;
		unsigned t = h->a[i];
		h->a[i] = h->a[m];
		h->a[m] = t;
		i = m;
	}
	return top;
}

/* Does GD's move migrate memory (a mover job)? max_moves counts those:
 * a move of CPUs alone is one cpuset write, and an oversubscribed host
 * would otherwise wait a cycle (and a cool-down) per handful of them. */
static bool migrating(const struct snapshot *snap, const struct gdec *gd)
{
	return !plan_migration_negligible(gd->it.migrate_bytes, snap->guests[gd->it.guest_idx].mem_total);
}

static uint64_t budget_left(const struct policy_config *cfg, uint64_t used)
{
	return used >= cfg->max_migrate_bytes ? 0 : cfg->max_migrate_bytes - used;
}

static void budget_skip(struct gdec *d, enum skip_reason why, const struct policy_config *cfg,
			uint64_t used)
{
	struct plan_item *it = &d->it;
	char to[48], fig[128];

	it->kind = PLAN_SKIP;
	it->skip = why;
	d->want = false;
	d->md.due = false;   /* this sentence instead of the move's */
	fmt_nodes(&it->to_nodes, to, sizeof(to));
	if (why == SKIP_MAX_MOVES) {
		policy_moves_why(cfg, fig, sizeof(fig));
		set_detail(it, "move budget of %s migrating moves per cycle spent; wanted nodes %s, %llu MiB to "
			   "migrate (gain %.2f)", fig, to, mib(it->migrate_bytes), it->gain);
	} else {
		policy_migrate_why(cfg, fig, sizeof(fig));
		set_detail(it, "%llu MiB to migrate exceeds the %llu MiB left of this cycle's %s; wanted nodes %s",
			   mib(it->migrate_bytes), mib(budget_left(cfg, used)), fig, to);
	}
}

static void one_node(const struct snapshot *s, bool verbose, struct plan *p)
{
	if (!verbose)
		return;
	p->items = xcalloc(s->nr_guests ? s->nr_guests : 1, sizeof(*p->items));
	for (unsigned gi = 0; gi < s->nr_guests; gi++) {
		const struct snap_guest *g = &s->guests[gi];
		struct plan_item *it = &p->items[p->nr_items++];

		plan_item_init(it, s, gi, PLAN_SKIP);
		it->skip = SKIP_ONE_NODE;
		it->to_nodes = g->cpu_nodes;
		it->to_mems = g->mems;
		snprintf(it->detail, sizeof(it->detail), "host has one CPU node: nothing to choose");
	}
}

static struct pstate *next_state(const struct snapshot *s, const struct pstate *prev)
{
	struct pstate *ns = pstate_new();
	unsigned cap = 0;

	for (unsigned gi = 0; gi < s->nr_guests; gi++) {
		const struct pstate_entry *pe = prev ? pstate_find(prev, s->guests[gi].id) : NULL;

		if (!pe)
			continue;
		if (ns->n == cap) {
			cap = cap ? cap * 2 : 16;
			ns->e = xrealloc(ns->e, cap * sizeof(*ns->e));
		}
		ns->e[ns->n++] = *pe;
	}
	/* Guests are sorted by id after snap_finalize, so ns is sorted. */
	return ns;
}

/* The working copy with the reservations and every accepted move but
 * order[SKIP]'s. */
static void replay(struct pctx *x, const struct snapshot *snap, const struct advice_reservation *res,
		   unsigned nres, const struct gdec *d, const unsigned *order, unsigned nord, unsigned skip,
		   struct gview *v, bool *usable)
{
	pctx_reset(x);
	for (unsigned i = 0; i < nres; i++)
		pctx_reserve(x, &res[i]);
	for (unsigned oi = 0; oi < nord; oi++) {
		if (oi == skip)
			continue;
		struct snap_guest tmp;

		view_of(x, &snap->guests[order[oi]], d[order[oi]].it.start, v, usable, &tmp, NULL);
		pctx_commit(x, v, &d[order[oi]].target);
	}
}

/* Second look at the accepted moves onto more than one node. A guest is
 * decided against the loads of the moment, and early in a cycle every
 * node still carries the guests that are about to leave it: on a host
 * where everything starts spread out, the first guests find no single
 * node free enough and get two or more — and once the others have gone,
 * a node may stand empty while the guest's one busy thread runs on the
 * half of its set that holds none of its memory, and the cool-down
 * then keeps it there (test_spread_start_one_node_each). So each such
 * move is decided again as if it came last, against every other move of
 * the cycle, and the new target is taken if it has fewer nodes and the
 * migration budget allows it. The other moves were decided without this
 * guest on its new nodes, but it now fits there with all of them. */
static void refine(struct pctx *x, const struct pstate *prev, const struct snapshot *snap,
		   const struct advice_reservation *res, unsigned nres, struct gdec *d,
		   const unsigned *order, unsigned nord, uint64_t *migrated, unsigned *nmig, struct gview *v,
		   bool *usable)
{
	const struct policy_config *cfg = x->cfg;

	for (unsigned oi = 0; oi < nord; oi++) {
		unsigned gi = order[oi];
		const struct snap_guest *g = &snap->guests[gi];
		struct gdec *gd = &d[gi], alt;
		uint64_t others = *migrated - gd->it.migrate_bytes;
		/* Weighed by caches, its load goes back to its cpuset, where its
		 * view counts it (gview.cpus), while it is decided again. */
		struct coreload *back = x->by_llc ? x->cores : NULL;

		if (gd->target.k <= 1 || g->policy.mode == GPOL_PINNED)
			continue;
		replay(x, snap, res, nres, d, order, nord, oi, v, usable);
		coreload_move(back, gd->it.to_cpus, g->cpus, g->cpu_use);
		evaluate(x, prev, gi, &alt, v, usable);
		if (!alt.want || alt.target.k >= gd->target.k ||
		    alt.it.migrate_bytes > budget_left(cfg, others) ||
		    (migrating(snap, &alt) && !migrating(snap, gd) && *nmig >= cfg->max_moves)) {
			coreload_move(back, g->cpus, gd->it.to_cpus, g->cpu_use);
			continue;
		}
		*nmig += (unsigned)migrating(snap, &alt) - (unsigned)migrating(snap, gd);
		{
			cpumask_t *was = gd->it.to_cpus;

			*gd = alt;
			gd->want = false;
			move_detail_due(gd, &snap->guests[gi], cfg);
			gd->it.to_cpus = xmalloc(sizeof(cpumask_t));
			cpumask_for(x, g, &gd->target.nodes, back ? g->cpus : was, gd->it.to_cpus, &gd->it);
			free(was);
		}
		*migrated = others + gd->it.migrate_bytes;
	}
}

int policy_decide(const struct policy_config *cfg, const struct snapshot *snap,
		  const struct pstate *prev, bool verbose,
		  struct plan **plan, struct pstate **next)
{
	return policy_decide_reserved(cfg, snap, prev, verbose, NULL, 0, NULL, plan, next);
}

/* The working copy before any move: the nodes' load as the sum of what
 * the guests' moves will take off them, the reservations taken, and the
 * floaters' load where there is room to float to. */
static void decide_setup(struct pctx *x, const struct snapshot *snap, const struct advice_reservation *res,
			 unsigned nres, struct gview *v, bool *usable)
{
	const struct policy_config *cfg = x->cfg;
	unsigned nn1 = x->nn ? x->nn : 1;
	/* owned: every guest's share; floated: the floaters' alone, summed
	 * in guest order from 0 as pctx_float would add them one by one
	 * (a guest's view depends on the snapshot alone, not on the working
	 * copy, so one pass builds each view once for both). */
	double *owned = xcalloc(2 * nn1, sizeof(*owned)), *floated = owned + nn1;
	double busy = 0.0;
	unsigned cpus = 0;
	bool any_floater = false;

	for (unsigned gi = 0; gi < snap->nr_guests; gi++) {
		gview_build(x, &snap->guests[gi], v, usable);
		for (unsigned n = 0; n < x->nn; n++)
			owned[n] += v->own[n];
		pctx_float_memory(x, v);
		if (v->floater && v->own) {
			any_floater = true;
			for (unsigned n = 0; n < x->nn; n++)
				floated[n] += v->own[n];
		}
	}
	pctx_settle(x, owned);
	for (unsigned i = 0; i < nres; i++)
		pctx_reserve(x, &res[i]);
	/* Floaters float only where there is room to float to: on a host
	 * busier than max_util as a whole their load stays where it is, or
	 * every guest would be placed as if the others were gone
	 * (test_oversubscribed_local_least_loaded). */
	for (unsigned n = 0; n < x->nn; n++) {
		busy += x->busy[n];
		cpus += snap->nodes[n].nr_cpus;
	}
	if (any_floater && busy <= cfg->max_util * cpus + UTIL_EPS)
		pctx_float_sum(x, floated);
	/* Where the guests' load is expected, for counting by cores: once
	 * it is known whether the floaters' load floats. */
	if (x->shift)
		for (unsigned gi = 0; gi < snap->nr_guests; gi++) {
			gview_build(x, &snap->guests[gi], v, usable);
			pctx_expect(x, v);
		}
	free(owned);
}

/* Every guest decided, the best first: each accepted move (ORDER[*NORD],
 * in acceptance order) changes the working copy the later ones are
 * decided against, within the cycle's move and migration budgets. */
static void decide_accept(struct pctx *x, const struct snapshot *snap, const struct pstate *prev, struct gdec *d,
			  struct gview *v, bool *usable, struct plan *p, unsigned *order, unsigned *nord,
			  unsigned *nmig, uint64_t *migrated)
{
	const struct policy_config *cfg = x->cfg;
	struct heap h = { .n = 0, .d = d };

	h.a = xcalloc(snap->nr_guests ? snap->nr_guests : 1, sizeof(*h.a));
	for (unsigned gi = 0; gi < snap->nr_guests; gi++) {
		evaluate(x, prev, gi, &d[gi], v, usable);
		if (d[gi].want)
			heap_push(&h, gi);
	}
	while (h.n) {
		unsigned gi = heap_pop(&h);
		struct gdec *gd = &d[gi];

		if (migrating(snap, gd) && *nmig >= cfg->max_moves) {
			budget_skip(gd, SKIP_MAX_MOVES, cfg, *migrated);
			continue;
		}
		if (gd->version != x->version) {
			/* Ranked before the last accepted move: look again. */
			evaluate(x, prev, gi, gd, v, usable);
			if (!gd->want)
				continue;
			if (h.n && heap_before(&h, h.a[0], gi)) {
				heap_push(&h, gi);
				continue;
			}
			if (migrating(snap, gd) && *nmig >= cfg->max_moves) {
				budget_skip(gd, SKIP_MAX_MOVES, cfg, *migrated);
				continue;
			}
		}
		/* A guest bigger than the whole budget would never move: it may
		 * go alone, as the cycle's first migrating move. A budget of 0
		 * forbids migration (moves that need none still happen). */
		if (gd->it.migrate_bytes > budget_left(cfg, *migrated) &&
		    !(*migrated == 0 && cfg->max_migrate_bytes > 0 &&
		      gd->it.migrate_bytes > cfg->max_migrate_bytes)) {
			budget_skip(gd, SKIP_MAX_MIGRATE, cfg, *migrated);
			continue;
		}
		/* Accept: rebuild this guest's view and update the working copy. */
		{
			struct snap_guest tmp;

			view_of(x, &snap->guests[gi], gd->it.start, v, usable, &tmp, NULL);
		}
		pctx_commit(x, v, &gd->target);
		move_detail_due(gd, &snap->guests[gi], cfg);
		gd->it.to_cpus = xmalloc(sizeof(cpumask_t));
		cpumask_for(x, &snap->guests[gi], &gd->target.nodes, snap->guests[gi].cpus, gd->it.to_cpus,
			    &gd->it);
		gd->want = false;
		p->nr_moves++;
		*nmig += migrating(snap, gd);
		*migrated += gd->it.migrate_bytes;
		order[(*nord)++] = gi;
	}
	free(h.a);
}

/* The plan's items from the decisions D (which they take over: D is
 * gone after): moves with nothing (worth) migrating first, as they take
 * milliseconds while one migration can take seconds per GiB, and the
 * engine applies the plan in order — a guest that only needs its cpus
 * changed should not wait behind another's migration. Each group keeps
 * the acceptance order.
 * Then skips (and settled guests when VERBOSE) by guest id.
 *
 * The items are made in D's own memory: D grows with the guests, and a
 * new array beside it would be the daemon's peak (two snapshots, the
 * published plan, D and the new plan at once). An item is
 * smaller than a gdec, so item k (k <= gi) never overwrites a gdec not
 * yet read; the moves (at most max_moves, in acceptance order, those
 * with nothing worth migrating first) are copied aside, then put in
 * front. */
static void plan_items(const struct snapshot *snap, bool verbose, struct gdec *d, const unsigned *order,
		       unsigned nord, struct plan *p)
{
	struct plan_item *items = (struct plan_item *)(void *)d, *moves;
	unsigned nmoves = 0, nkept = 0;

	_Static_assert(sizeof(struct plan_item) <= sizeof(struct gdec), "items fit in place");
	moves = xcalloc(nord ? nord : 1, sizeof(*moves));
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < nord; i++) {
			const struct plan_item *it = &d[order[i]].it;

			if (plan_migration_negligible(it->migrate_bytes, snap->guests[order[i]].mem_total) ==
			    (pass == 0))
				moves[nmoves++] = *it;
		}
	for (unsigned gi = 0; gi < snap->nr_guests; gi++) {
		const struct plan_item *it = &d[gi].it;

		if (it->kind == PLAN_MOVE || (it->kind == PLAN_SETTLED && !verbose))
			continue;
		memmove(&items[nkept++], it, sizeof(*it));
	}
	memmove(&items[nmoves], items, nkept * sizeof(*items));
	memcpy(items, moves, nmoves * sizeof(*items));
	free(moves);
	p->nr_items = nmoves + nkept;
	p->items = xrealloc(d, (p->nr_items ? p->nr_items : 1) * sizeof(*items));
}

/* The VMs HOLDS says just started, placed first (place_starts) into
 * *STARTS[*NST]; what the rest of the decision then sees: the
 * reservations they took gone from *RES[*NRES] (*LEFT: the caller frees),
 * and, in a cycle that carries its plan out, their moves' cool-downs
 * noted in *PV (the caller frees): the rest leaves them where their
 * start placement puts them. */
static void decide_starts(const struct policy_config *cfg, const struct snapshot *snap, const struct pstate *prev,
			  const struct plan_holds *holds, const struct advice_reservation **res, unsigned *nres,
			  struct advice_reservation **left, struct pstate **pv, struct plan_item **starts,
			  unsigned *nst)
{
	bool *used = xcalloc(*nres ? *nres : 1, sizeof(*used));
	unsigned k = 0;

	place_starts(cfg, snap, holds, *res, *nres, used, starts, nst);
	*left = xcalloc(*nres ? *nres : 1, sizeof(**left));
	for (unsigned i = 0; i < *nres; i++)
		if (!used[i])
			(*left)[k++] = (*res)[i];
	*res = *left;
	*nres = k;
	free(used);
	*pv = NULL;
	if (!holds->applying)
		return;
	*pv = pstate_clone(prev);
	for (unsigned i = 0; i < *nst; i++)
		if ((*starts)[i].kind == PLAN_MOVE) {
			pstate_note_move(*pv, (*starts)[i].guest_id, snap->mono_ns);
			pstate_note_cooldown(*pv, (*starts)[i].guest_id,
					     policy_move_cooldown(cfg, (*starts)[i].migrate_bytes, NULL, 0));
		}
}

/* Each move's cool-down, sized by its cost (policy_move_cooldown). */
static void note_cooldowns(const struct policy_config *cfg, struct plan *p)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (p->items[i].kind == PLAN_MOVE)
			p->items[i].cooldown_ns = policy_move_cooldown(cfg, p->items[i].migrate_bytes, NULL, 0);
}

int policy_decide_reserved(const struct policy_config *cfg, const struct snapshot *snap,
			   const struct pstate *prev, bool verbose,
			   const struct advice_reservation *res, unsigned nres,
			   const struct plan_holds *holds,
			   struct plan **plan, struct pstate **next)
{
	struct advice_reservation *left = NULL;
	struct plan_item *starts = NULL;
	struct pstate *pv = NULL;
	const struct pstate *real = prev;
	unsigned nst = 0;

	struct policy_config eff;
	struct plan *p;
	struct pctx x;
	struct gdec *d;
	struct gview v;
	bool *usable;
	unsigned *order, nord = 0, nmig = 0;
	uint64_t migrated = 0;

	if (!cfg || !snap || !plan || !next || (nres && !res) || policy_config_validate(cfg, NULL) < 0)
		return -EINVAL;
	/* auto budgets sized from what the engine told of the mover */
	policy_resolve(cfg, &eff);
	cfg = &eff;
	p = xcalloc(1, sizeof(*p));
	p->seq = snap->seq;
	p->mono_ns = snap->mono_ns;
	if (snap_nr_cpu_nodes(snap) <= 1) {
		one_node(snap, verbose, p);
		plan_mark_holds(p, snap, holds);
		plan_mark_kernel_holds(p, snap, holds ? holds->kernel_follow_s : 0);
		*next = next_state(snap, prev);
		*plan = p;
		return 0;
	}

	if (holds && holds->nstarting) {
		decide_starts(cfg, snap, prev, holds, &res, &nres, &left, &pv, &starts, &nst);
		if (pv)
			prev = pv;
	}
	pctx_init(&x, cfg, snap);
	x.terse = !verbose;
	if (holds && holds->follow_bound_s > 0)
		x.follow_s = holds->follow_bound_s;
	x.cores = coreload_new(snap);
	x.by_llc = x.llc && x.cores;
	d = xcalloc(snap->nr_guests ? snap->nr_guests : 1, sizeof(*d));
	usable = xcalloc(x.nn ? x.nn : 1, sizeof(*usable));
	order = xcalloc(snap->nr_guests ? snap->nr_guests : 1, sizeof(*order));
	decide_setup(&x, snap, res, nres, &v, usable);
	decide_accept(&x, snap, prev, d, &v, usable, p, order, &nord, &nmig, &migrated);
	refine(&x, prev, snap, res, nres, d, order, nord, &migrated, &nmig, &v, usable);
	plan_items(snap, verbose, d, order, nord, p);
	p->migrate_bytes = migrated;
	parts_plan(snap, p, cfg->max_migrate_bytes);
	plan_mark_holds(p, snap, holds);
	plan_mark_kernel_holds(p, snap, holds ? holds->kernel_follow_s : 0);
	place_starts_splice(p, starts, nst);
	note_cooldowns(cfg, p);
	*next = next_state(snap, real);
	*plan = p;

	free(starts);
	free(left);
	pstate_free(pv);
	free(order);
	free(usable);
	coreload_free(x.cores);
	pctx_fini(&x);
	return 0;
}
