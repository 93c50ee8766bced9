/* snapjson.h — snapshot to JSON (jansson), for golden tests, --dry-run
 * output and the REST API. Callers own the returned json_t (json_decref).
 */
#ifndef NUMAORCH_SNAPJSON_H
#define NUMAORCH_SNAPJSON_H

#include <jansson.h>

#include "orchestrator/model/snapshot.h"

enum {
	/* Leave out what changes from run to run (seq, clocks, window), so
	 * fixture snapshots compare equal to golden files. */
	SNAPJ_STABLE = 1u << 0,
	/* Leave out guests (topology only). */
	SNAPJ_NO_GUESTS = 1u << 1,
};

json_t *snap_to_json(const struct snapshot *s, unsigned flags);
json_t *snap_node_to_json(const struct snapshot *s, unsigned idx);
json_t *snap_guest_to_json(const struct snapshot *s, const struct snap_guest *g);
/* {"mode", "source"[, "nodes"]} of a per-guest policy. */
json_t *gpol_to_json(const struct guest_policy *p);
/* A number, or null for NAN; rounded to 4 decimals for stable output. */
json_t *snapj_real_or_null(double v);
/* "0-3,8" strings for masks. */
json_t *snapj_cpumask(const cpumask_t *m);
json_t *snapj_nodemask(const nodemask_t *m);

#endif
