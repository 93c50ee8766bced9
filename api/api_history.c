/* api_history.c — GET /v1/guests/{id}/history: a copy of the guest's
 * samples from the engine's history (orchestrator/store/history.h), oldest
 * first. Never waits for the engine.
 */
#include "api_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/store/declog.h"
#include "../orchestrator/store/history.h"

static json_t *num_or_null(double v, double scale)
{
	return isnan(v) ? json_null() : json_real(round(v * scale) / scale);
}

/* The node ids whose flag F is set, as a kernel list ("0-1,3"). */
static json_t *node_list(const struct history_series *hs, const struct history_point *pt, unsigned f)
{
	nodemask_t m;
	char buf[NODELIST_BUFSZ];

	mask_zero(&m);
	for (unsigned n = 0; n < hs->nr_nodes; n++)
		if (pt->flags[n] & f)
			mask_set(&m, hs->node_ids[n]);
	mask_format(&m, buf, sizeof(buf));
	return json_string(buf);
}

void h_guest_history(struct rq *r)
{
	struct engine_view *v = need_view(r);
	struct history_series *hs;
	json_t *o, *arr, *nodes;
	char t[40], node[16];

	if (!v)
		return;
	if (history_get(engine_history(r->a->e), r->id, &hs) < 0) {
		problem(r, 404, "not-found", "id", "no history of guest %s: not on this host (as of cycle %llu)",
			r->id, (unsigned long long)v->snap->seq);
		return;
	}
	o = json_object();
	json_object_set_new(o, "guest", json_string(r->id));
	json_object_set_new(o, "spacing_s", json_real(hs->spacing_s));
	json_object_set_new(o, "capacity", json_integer(hs->capacity));
	json_object_set_new(o, "count", json_integer(hs->n));
	nodes = json_array();
	for (unsigned n = 0; n < hs->nr_nodes; n++)
		json_array_append_new(nodes, json_integer(hs->node_ids[n]));
	json_object_set_new(o, "nodes", nodes);
	arr = json_array();
	for (unsigned i = 0; i < hs->n; i++) {
		const struct history_point *pt = &hs->p[i];
		json_t *s = json_object(), *mem = json_object();

		declog_time(pt->real_ms * 1000000, t, sizeof(t));
		json_object_set_new(s, "time", json_string(t));
		json_object_set_new(s, "locality", num_or_null(pt->locality, 1e4));
		json_object_set_new(s, "cpu_use", num_or_null(pt->cpu_use, 1e2));
		json_object_set_new(s, "cpu_nodes", node_list(hs, pt, HIST_CPU_NODE));
		json_object_set_new(s, "mems", node_list(hs, pt, HIST_MEM_NODE));
		for (unsigned n = 0; n < hs->nr_nodes; n++) {
			snprintf(node, sizeof(node), "%d", hs->node_ids[n]);
			json_object_set_new(mem, node, json_integer((json_int_t)pt->mem[n]));
		}
		json_object_set_new(s, "mem_bytes_by_node", mem);
		json_array_append_new(arr, s);
	}
	json_object_set_new(o, "samples", arr);
	free(hs);
	api_reply_json(r, 200, o);
}
