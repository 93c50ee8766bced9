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
 */
#include "policies.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int policy_advise(const struct policy_config *cfg, const struct snapshot *snap,
		  const struct advice_request *req, struct advice *out)
{
	struct pctx x;
	struct gview v;
	bool *usable, allowed_block;
	const struct pcand *best = NULL;
	unsigned kmin;
	char buf[48];

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

	kmin = dev_cands_for(&x, req->devices, &req->dev_nodes, &v, usable,
			     pcands_generate(&x, &v, usable, &allowed_block));
	for (unsigned i = 0; i < x.nr_cands; i++)
		if (x.cands[i].k == kmin && !x.cands[i].crowded && (!best || pcand_better(&x.cands[i], best)))
			best = &x.cands[i];
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
		snprintf(out->detail, sizeof(out->detail),
			 "%u node%s %s: util %.0f %% after (≤ %.0f %%), %llu MiB free after%s",
			 best->k, best->k > 1 ? "s" : "", buf, 100.0 * best->util_after, 100.0 * cfg->max_util,
			 (unsigned long long)(out->mem_free_after / MIB),
			 best->busy_nan ? " (some node busy not measured, taken as idle)" : "");
		l = strlen(out->detail);
		if (l < sizeof(out->detail) - 1)
			snprintf(out->detail + l, sizeof(out->detail) - l, "%s", note);
	}
	free(usable);
	pctx_fini(&x);
	return 0;
}
