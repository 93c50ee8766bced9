/* advise.c — policy_advise(): where a guest about to start should go.
 *
 * The same fit checks and scoring as policy_decide() (guards.c) for a
 * guest with no current nodes and no memory yet. CPU demand is the
 * request's figure with the min_cpu floor but no headroom (a VM cannot
 * use more than its vCPUs); memory demand adds mem_headroom.
 * Reservations (room promised to other starting guests) count as load
 * before anything is chosen: their CPUs are added to the busy CPUs of
 * their CPU nodes in proportion to each node's CPUs, their memory is
 * taken from the free memory of their memory nodes, evenly (from the
 * nearest memory node if they name only memory-less nodes).
 * Its devices weigh as a running guest's do (devpref.h): under prefer a
 * set holding a device's node scores better among the fewest nodes; under require
 * only such sets are advised, and none fitting is "nothing fits", saying
 * so.
 * With its busy threads named (advice_request.busy_threads) the advice
 * counts as policy_decide does on a host with SMT siblings: a set fits
 * only where a core is free for each of them beside the busy threads
 * there (guards.c, pctx.by_cores), and where a node has several
 * last-level caches one that holds them all scores better (W_LLC). Where
 * that finds no set, the advice is the one counted by CPUs alone, as
 * without them; the detail says which counted.
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
#include "../orchestrator/base/xalloc.h"

static void detailf(struct advice *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* (vsnprintf: the detail is cut where it must be, as every detail is) */
static void detailf(struct advice *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->detail, sizeof(a->detail), fmt, ap);
	va_end(ap);
}

/* The best set of the fewest nodes for V (not crowded) into *BEST, as
 * X counts: false when none fits. */
static bool advise_pick(struct pctx *x, const struct advice_request *req, const struct gview *v, const bool *usable,
			struct pcand *best)
{
	const struct pcand *b = NULL;
	bool allowed_block;
	unsigned kmin;

	kmin = dev_cands_for(x, req->devices, &req->dev_nodes, v, usable,
			     pcands_generate(x, v, usable, &allowed_block));
	for (unsigned i = 0; i < x->nr_cands; i++)
		if (x->cands[i].k == kmin && !x->cands[i].crowded && (!b || pcand_better(&x->cands[i], b)))
			b = &x->cands[i];
	if (b)
		*best = *b;
	return b != NULL;
}

/* The detail's clause on how THR busy threads were counted (before the
 * devices' note). COUNTED: a set fitted so, BEST; BY_CPUS is the set
 * counted by CPUs alone (NULL: none fits so), evaluated as BEST was, so
 * its flags say whether cores or caches set BEST apart. */
static void threads_note(const struct pctx *x, unsigned thr, bool counted, const struct pcand *best,
			 const struct pcand *by_cpus, char *buf, size_t sz)
{
	char cn[48] = "";
	const char *th = thr == 1 ? "" : "s";

	buf[0] = '\0';
	if (!counted) {
		if (x->smt)
			snprintf(buf, sz, "; no set has a free core for each of its %u busy thread%s: counted by CPUs",
				 thr, th);
		return;
	}
	if (by_cpus)
		fmt_nodes(&by_cpus->nodes, cn, sizeof(cn));
	if (by_cpus && mask_equal(&best->nodes, &by_cpus->nodes)) {
		if (best->llc_split)
			snprintf(buf, sz, "; no last-level cache with a free core for each of its %u busy thread%s",
				 thr, th);
		else if (x->smt)
			snprintf(buf, sz, "; a free core for each of its %u busy thread%s", thr, th);
	} else if (by_cpus && by_cpus->cores_short) {
		snprintf(buf, sz, "; by free cores: one for each of its %u busy thread%s (by CPUs: nodes %s, short of cores)",
			 thr, th, cn);
	} else if (by_cpus && by_cpus->llc_split) {
		snprintf(buf, sz, "; its %u busy thread%s in one last-level cache (by CPUs: nodes %s, no cache with the cores)",
			 thr, th, cn);
	} else {
		snprintf(buf, sz, "; counted by its %u busy thread%s (by CPUs: %s%s)", thr, th,
			 by_cpus ? "nodes " : "nothing fits", cn);
	}
}

int policy_advise(const struct policy_config *cfg, const struct snapshot *snap,
		  const struct advice_request *req, struct advice *out)
{
	struct pctx x;
	struct gview v;
	bool *usable;
	struct pcand pick, by_cpus;
	const struct pcand *best = NULL;
	bool cpus_fit, counted = false, weigh;
	char buf[48], tnote[160];

	if (!cfg || !snap || !req || !out || policy_config_validate(cfg, NULL) < 0)
		return -EINVAL;
	if (isnan(req->cpus) || req->cpus < 0 || isinf(req->cpus) ||
	    (req->nr_reservations && !req->reservations) || req->mem_bytes > (1ULL << 50))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->load_after = NAN;

	pctx_init(&x, cfg, snap);
	for (unsigned i = 0; i < req->nr_reservations; i++)
		pctx_reserve(&x, &req->reservations[i]);
	usable = xcalloc(x.nn ? x.nn : 1, sizeof(*usable));
	memset(&v, 0, sizeof(v));
	v.mem_major = -1;
	v.cpu_demand = fmax(cfg->min_cpu, req->cpus);
	v.mem_demand = (uint64_t)((double)req->mem_bytes * (1.0 + cfg->mem_headroom));
	for (unsigned n = 0; n < x.nn; n++) {
		x.acpus[n] = snap->nodes[n].nr_cpus;
		x.memok[n] = true;
		usable[n] = snap->nodes[n].nr_cpus > 0;
	}
	v.acpus = x.acpus;
	v.memok = x.memok;

	/* By CPUs, as without its busy threads; then, named where cores or
	 * caches show, counted as policy_decide counts a running guest's. */
	cpus_fit = advise_pick(&x, req, &v, usable, &by_cpus);
	if (cpus_fit)
		best = &by_cpus;
	weigh = req->busy_threads && (x.smt || x.llc);
	if (weigh) {
		x.cores = coreload_new(snap);
		x.by_cores = x.smt;
		x.by_llc = x.llc && x.cores;
		v.busy_thr = req->busy_threads;
		counted = advise_pick(&x, req, &v, usable, &pick);
		if (counted) {
			best = &pick;
			/* The set by CPUs weighed the same way, for the note. */
			if (cpus_fit)
				pset_eval_mask(&x, &v, &by_cpus.nodes, NULL, &by_cpus);
		}
		x.by_cores = x.by_llc = false;
		coreload_free(x.cores);
		x.cores = NULL;
	}
	if (!best) {
		double slack = 0.0;
		uint64_t room = 0;
		char dn[48] = "";

		for (unsigned n = 0; n < x.nn; n++) {
			double sl = cfg->max_util * snap->nodes[n].nr_cpus - x.busy[n];

			if (usable[n] && sl > 0)
				slack += sl;
			if (snap->nodes[n].mem_total)
				room += pctx_room(&x, n);
		}
		if (req->devices == GPOL_DEV_REQUIRE && MASK_ANY(&req->dev_nodes))
			fmt_nodes(&req->dev_nodes, dn, sizeof(dn));
		detailf(out, "nothing fits%s%s%s: needs %.1f CPUs and %llu MiB; the host has %.1f CPUs below %.0f %% util and %llu MiB room",
			 dn[0] ? " holding its device's node " : "", dn, dn[0] ? " (devices = require)" : "",
			 v.cpu_demand, (unsigned long long)(v.mem_demand / MIB), slack, 100.0 * cfg->max_util,
			 (unsigned long long)(room / MIB));
	} else {
		int64_t fr = 0;
		char note[96];
		size_t l;

		mask_foreach(id, &best->mems)
			fr += x.free[x.idx_of_id[id]];
		fr -= (int64_t)req->mem_bytes;
		out->ok = true;
		out->nodes = best->nodes;
		out->mems = best->mems;
		out->load_after = best->util_after;
		out->mem_free_after = fr > 0 ? (uint64_t)fr : 0;
		fmt_nodes(&best->nodes, buf, sizeof(buf));
		dev_note_for(req->devices, &req->dev_nodes, req->nr_devices, &best->nodes, note, sizeof(note));
		tnote[0] = '\0';
		if (weigh)
			threads_note(&x, req->busy_threads, counted, best, cpus_fit ? &by_cpus : NULL, tnote,
				     sizeof(tnote));
		snprintf(out->detail, sizeof(out->detail),
			 "%u node%s %s: util %.0f %% after (≤ %.0f %%), %llu MiB free after%s",
			 best->k, best->k > 1 ? "s" : "", buf, 100.0 * best->util_after, 100.0 * cfg->max_util,
			 (unsigned long long)(out->mem_free_after / MIB),
			 best->busy_nan ? " (some node busy not measured, taken as idle)" : "");
		l = strlen(out->detail);
		if (l < sizeof(out->detail) - 1)
			snprintf(out->detail + l, sizeof(out->detail) - l, "%s%s", tnote, note);
	}
	free(usable);
	pctx_fini(&x);
	return 0;
}
