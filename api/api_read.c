/* api_read.c — GET handlers. They answer from the engine's published view
 * (immutable; held by reference for the request), the decision log's ring
 * and the per-guest policy store; none waits for the engine.
 */
#include "api_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../orchestrator/store/declog.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/model/kbal.h"
#include "../orchestrator/model/snapjson.h"
#include "../orchestrator/base/utf8.h"
#include "../orchestrator/model/plan.h"
#include "jsonw.h"
#include "nrt.h"

#define MIB (1024.0 * 1024.0)

void h_health(struct rq *r)
{
	struct engine_view *v = engine_view_get(r->a->e);
	bool ready = v && v->snap;
	int64_t hb = engine_heartbeat_ns(r->a->e);
	double age = hb ? (double)(clock_mono_ns() - hb) / 1e9 : 0;

	engine_view_unref(v);
	/* The engine's loop turns at least every second; one that has not
	 * for this long is wedged (a read that never returns, a deadlock),
	 * and an agent whose API still answers is not ready for all that. */
	if (hb && age > API_ENGINE_STALL_S) {
		r->resp->retry_after = 5;
		problem(r, 503, "engine-stalled", NULL,
			"the engine thread has not run for %.0f s (it turns at least every %.0f s): the agent "
			"is wedged; its state is stale and changes are not applied", age,
			ENGINE_HEARTBEAT_MS / 1000.0);
		return;
	}
	api_reply_json(r, 200, json_pack("{s:s, s:b, s:f}", "status", "ok", "ready", ready,
				     "engine_heartbeat_age_s", round(age * 1000) / 1000));
}

/* The policy the next cycle applies: an API override wins (the snapshot
 * shows it only from the cycle after it was set, and keeps showing it
 * until the cycle after it was deleted: then its base applies). */
static void effective_policy(struct api *a, const struct snap_guest *g, struct guest_policy *out)
{
	struct gpol_record rec;

	if (gpolstore_get(a->gs, g->id, &rec))
		*out = rec.pol;
	else
		*out = g->base_policy;
}

void h_status(struct rq *r)
{
	struct engine_view *v = need_view(r);
	const struct snapshot *s;
	struct api_policy pol;
	unsigned vms = 0, moves = 0, skips = 0;
	json_t *o, *warn;
	char t[40];

	if (!v)
		return;
	s = v->snap;
	for (unsigned i = 0; i < s->nr_guests; i++)
		vms += s->guests[i].kind == GUEST_VM;
	for (unsigned i = 0; v->plan && i < v->plan->nr_items; i++) {
		moves += v->plan->items[i].kind == PLAN_MOVE;
		skips += v->plan->items[i].kind == PLAN_SKIP;
	}
	api_current_policy(r->a, v, &pol);
	o = json_object();
	json_object_set_new(o, "version", json_string(r->a->version));
	declog_time(r->a->start_real_ns, t, sizeof(t));
	json_object_set_new(o, "started", json_string(t));
	json_object_set_new(o, "uptime_s",
			    json_real(round((double)(clock_mono_ns() - r->a->start_mono_ns) / 1e6) / 1e3));
	/* mode and interval in force now (a schedule window may change them);
	 * "configured" is what the configuration and PUT /v1/policy say. */
	json_object_set_new(o, "mode", json_string(agent_mode_name(v->mode)));
	json_object_set_new(o, "dry_run", json_boolean(v->dry_run));
	json_object_set_new(o, "interval_s", json_real(v->interval_s));
	json_object_set_new(o, "configured", json_pack("{s:s, s:f}", "mode", agent_mode_name(pol.mode),
						       "interval_s", pol.interval_s));
	{
		json_t *w = json_array();

		for (unsigned i = 0; i < v->schedule.n; i++)
			json_array_append_new(w, json_pack("{s:s, s:b}", "window", v->schedule.e[i].text,
							   "active", i < 64 && (v->schedule_active >> i & 1)));
		json_object_set_new(o, "schedule", w);
		char nmoves[96], mig[160], cool[32];
		json_t *inf;

		/* auto: where each figure came from (the last cycle's) */
		policy_moves_why(&v->policy, nmoves, sizeof(nmoves));
		policy_migrate_why(&v->policy, mig, sizeof(mig));
		snprintf(cool, sizeof(cool), "%s", v->policy.cooldown_auto ? "auto" : "fixed");
		inf = json_pack("{s:s, s:f, s:i, s:I, s:f, s:f, s:o, s:{s:s, s:s, s:s}}", "mode", agent_mode_name(v->mode),
				"interval_s", v->interval_s, "max_moves", (int)v->policy.max_moves,
				"max_migrate_mib", (json_int_t)(v->policy.max_migrate_bytes >> 20),
				"cooldown_s", (double)v->policy.cooldown_ns / 1e9, "rate_mib", v->rate_mib,
				"mover_rate_mibs", v->mover_rate_mibs > 0 ? json_real(v->mover_rate_mibs) : json_null(),
				"sized", "max_moves", nmoves, "max_migrate_mib", mig, "cooldown", cool);
		json_object_set_new(o, "in_force", inf);
	}
	json_object_set_new(o, "host", json_pack("{s:i, s:i, s:s}", "nodes", (int)s->nr_nodes,
						 "cpu_nodes", (int)v->stats.cpu_nodes,
						 "cgroup_layout", cgh_layout_name(s->layout)));
	json_object_set_new(o, "guests", json_pack("{s:i, s:i, s:i, s:i}", "total", (int)s->nr_guests,
						   "containers", (int)(s->nr_guests - vms), "vms", (int)vms,
						   "policy_overrides", (int)gpolstore_count(r->a->gs)));
	declog_time(v->stats.last_cycle_real_ns, t, sizeof(t));
	json_object_set_new(o, "last_cycle",
			    json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:i, s:i}",
				      "seq", (json_int_t)s->seq, "time", t,
				      "duration_s", snapj_real_or_null(v->stats.last_cycle_s),
				      "acquire_s", snapj_real_or_null(v->stats.last_acquire_s),
				      "decide_s", snapj_real_or_null(v->stats.last_decide_s),
				      "apply_s", snapj_real_or_null(v->stats.last_apply_s),
				      "planned_moves", (int)moves, "skipped", (int)skips));
	json_object_set_new(o, "cycles", json_integer((json_int_t)v->stats.cycles));
	json_object_set_new(o, "totals",
			    json_pack("{s:I, s:I, s:I, s:f}", "moves", (json_int_t)v->stats.moves,
				      "move_failures", (json_int_t)v->stats.move_failures,
				      "moves_skipped", (json_int_t)v->stats.moves_skipped,
				      "migrated_mib", round((double)v->stats.migrated_bytes / MIB * 10) / 10));
	/* The kernel's own NUMA balancing, and how the agent works beside it
	 * (orchestrator/model/kbal.h). */
	json_object_set_new(o, "kernel_balancing",
			    json_pack("{s:o, s:b, s:s, s:I}",
				      "numa_balancing", v->stats.numa_balancing >= 0 ?
					      json_integer(v->stats.numa_balancing) : json_null(),
				      "kernel_migrates", kbal_kernel_moves(v->stats.numa_balancing),
				      "setting", kbal_setting_name(v->stats.kernel_balancing) ?
					      kbal_setting_name(v->stats.kernel_balancing) : "?",
				      "memory_deferred", (json_int_t)v->stats.memory_deferred));
	/* Memory tiering: memory on nodes without CPUs is the kernel's tier,
	 * left where it put it (deploy/man/numaorchd.8). */
	/* The kernel's balancing migrations host-wide (/proc/vmstat
	 * numa_pages_migrated): the counter and its rate over the last
	 * cycle's window, null where not read. */
	json_object_set_new(json_object_get(o, "kernel_balancing"), "numa_pages_migrated",
			    s->vmstat_read ? json_integer((json_int_t)s->numa_pages_migrated) : json_null());
	json_object_set_new(json_object_get(o, "kernel_balancing"), "numa_pages_migrated_per_s",
			    snapj_real_or_null(s->kernel_migrated_pps));
	json_object_set_new(json_object_get(o, "kernel_balancing"), "memory_tiering",
			    json_pack("{s:b, s:o}", "active", snap_memory_tiering(s), "demotion_enabled",
				      s->demotion_enabled >= 0 ? json_boolean(s->demotion_enabled > 0) : json_null()));
	json_object_set_new(o, "libvirt",
			    json_pack("{s:s, s:o, s:I, s:I, s:o}",
				      "state", engine_libvirt_state_name(v->stats.libvirt_state),
				      "reason", v->stats.libvirt_reason[0] ? json_string(v->stats.libvirt_reason)
									  : json_null(),
				      "connects", (json_int_t)v->stats.libvirt_connects,
				      "losses", (json_int_t)v->stats.libvirt_losses,
				      "last_reconnect_s", snapj_real_or_null(v->stats.libvirt_last_reconnect_s)));
	json_object_set_new(o, "api", json_pack("{s:o, s:o, s:b}",
						"socket", r->a->socket_path ? json_string(r->a->socket_path) : json_null(),
						"listen", r->a->listen ? json_string(r->a->listen) : json_null(),
						"tls", r->a->tls));
	warn = json_array();
	if (v->stats.cpu_nodes <= 1)
		json_array_append_new(warn, json_pack("s+", "one-node host: ",
			v->stats.cpu_nodes == 1 ? "1 NUMA node has CPUs; guests are discovered and reported, "
			"nothing is moved" : "no NUMA node with CPUs found; nothing is moved"));
	for (unsigned i = 0; i < s->nr_warnings; i++)
		json_array_append_new(warn, api_json_tame(s->warnings[i], 400));
	json_object_set_new(o, "warnings", warn);
	api_reply_json(r, 200, o);
}

void h_nodes(struct rq *r)
{
	struct engine_view *v = need_view(r);
	const struct snapshot *s;
	json_t *arr;

	if (!v)
		return;
	s = v->snap;
	arr = json_array();
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		json_t *o = snap_node_to_json(s, n), *homed = json_array();
		const struct snap_node *nd = &s->nodes[n];

		for (unsigned i = 0; i < s->nr_guests; i++)
			if (mask_test(&s->guests[i].cpu_nodes, nd->id))
				json_array_append_new(homed, json_string(s->guests[i].id));
		json_object_set_new(o, "load_cpus", snapj_real_or_null(nd->busy * nd->nr_cpus));
		/* Memory in flight, as the policy saw it this cycle: what the
		 * mover's live jobs take off the node and bring onto it (room
		 * to come, snap_node.mem_leaving/mem_coming). */
		json_object_set_new(o, "mem_leaving_bytes", json_integer((json_int_t)nd->mem_leaving));
		json_object_set_new(o, "mem_coming_bytes", json_integer((json_int_t)nd->mem_coming));
		/* Memory and no CPUs (a CXL expander, a tier): never a CPU
		 * target. */
		json_object_set_new(o, "memory_only", json_boolean(!nd->nr_cpus && nd->mem_total));
		json_object_set_new(o, "guests", homed);
		json_array_append_new(arr, o);
	}
	api_reply_json(r, 200, json_pack("{s:o, s:I}", "nodes", arr, "seq", (json_int_t)s->seq));
}

/* The Kubernetes node this agent runs on: NODE_NAME (the DaemonSet sets
 * it from spec.nodeName; a node's name need not be its host name), else
 * the host name in lower case, as the kubelet names its node by default. */
static void node_name(char *buf, size_t sz)
{
	const char *env = getenv("NODE_NAME");

	if (env && *env) {
		snprintf(buf, sz, "%s", env);
		return;
	}
	if (gethostname(buf, sz) < 0 || !buf[0])
		snprintf(buf, sz, "localhost");
	buf[sz - 1] = '\0';
	for (char *c = buf; *c; c++)
		*c = (char)tolower((unsigned char)*c);
}

void h_topology(struct rq *r)
{
	struct engine_view *v = need_view(r);
	char name[256];

	if (!v)
		return;
	node_name(name, sizeof(name));
	api_reply_json(r, 200, nrt_build(v->snap, name));
}

/* The pager of /v1/guests and /v1/guest-policies: both are lists by
 * guest id, one page at a time. Reads ?limit= (1..API_PAGE_MAX, default
 * API_PAGE_DEFAULT) into *LIMIT and ?after= (a guest id, NULL: from the
 * start) into *AFTER; false after answering 400. */
static bool page_query(struct rq *r, uint64_t *limit, const char **after)
{
	const char *lim = urlq_get(&r->url, "limit");

	*limit = API_PAGE_DEFAULT;
	*after = urlq_get(&r->url, "after");
	if (lim && (parse_u64(lim, limit) < 0 || *limit < 1 || *limit > API_PAGE_MAX)) {
		problem(r, 400, "invalid-field", "limit", "limit: must be an integer 1..%u", API_PAGE_MAX);
		return false;
	}
	if (*after && !snap_id_valid(*after)) {
		problem(r, 400, "invalid-field", "after", "after: not a valid guest id");
		return false;
	}
	return true;
}

/* A page's "next": the last id shown when more follow, else NULL. */
static const char *page_next(bool more, const char *last)
{
	return more ? last : NULL;
}

/* A guest's policy in a guests list, keys sorted (devices only when not
 * the default, prefer). */
static void guest_policy_doc(struct jw *w, const struct guest_policy *pol)
{
	char nodes[NODELIST_BUFSZ];

	jw_key(w, "policy");
	jw_obj(w);
	if (pol->devices != GPOL_DEV_PREFER) {
		jw_key(w, "devices");
		jw_str(w, gpol_devices_name(pol->devices));
	}
	jw_key(w, "mode");
	jw_str(w, gpol_mode_name(pol->mode));
	if (pol->mode == GPOL_PINNED) {
		mask_format(&pol->nodes, nodes, sizeof(nodes));
		jw_key(w, "nodes");
		jw_str(w, nodes);
	}
	jw_key(w, "source");
	jw_str(w, gpol_source_name(pol->source));
	jw_obj_end(w);
}

/* G's devices in a guests list: {"count": N, "nodes": "1", "local":
 * true}, only when it has some; "all" when its device cgroup lets it use
 * every device (no node); "local" when their nodes are known: its CPUs
 * on one of them. */
static void guest_devices_doc(struct jw *w, const struct snap_guest *g)
{
	char nodes[NODELIST_BUFSZ];

	if (!g->nr_devices && !g->dev_all)
		return;
	jw_key(w, "devices");
	jw_obj(w);
	if (g->dev_all) {
		jw_key(w, "all");
		jw_bool(w, true);
	}
	jw_key(w, "count");
	jw_int(w, g->nr_devices);
	if (!mask_empty(&g->dev_nodes) && !mask_empty(&g->cpu_nodes)) {
		jw_key(w, "local");
		jw_bool(w, mask_intersects(&g->cpu_nodes, &g->dev_nodes));
	}
	mask_format(&g->dev_nodes, nodes, sizeof(nodes));
	jw_key(w, "nodes");
	jw_str(w, nodes);
	jw_obj_end(w);
}

/* The guest list as JSON text, written directly: a jansson tree of a
 * thousand guests costs several times the CPU and memory (api/jsonw.h). */
static char *guests_doc(struct api *a, const struct snapshot *s, const char *kind, const char *runtime,
			int node, const char *after, unsigned limit, size_t *len)
{
	/* One override looked up per guest, not a copy of the whole store,
	 * which near its limit is megabytes per request. */
	struct gpol_record one;
	unsigned count = 0, shown = 0, first = 0, hi = s->nr_guests;
	const char *last = NULL;
	bool more = false;
	char *cpus = xmalloc(CPULIST_BUFSZ), nodes[NODELIST_BUFSZ];
	struct jw w;

	/* The guests are sorted by id: the page starts at the first id after
	 * AFTER (which need not be a guest any more). */
	while (after && first < hi) {
		unsigned mid = (first + hi) / 2;

		if (strcmp(s->guests[mid].id, after) <= 0)
			first = mid + 1;
		else
			hi = mid;
	}
	jw_init(&w, 512 + (size_t)(s->nr_guests < limit ? s->nr_guests : limit) * 512);
	jw_obj(&w);
	jw_key(&w, "guests");
	jw_arr(&w);
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];
		const struct guest_policy *pol;

		if (kind && strcmp(snap_kind_name(g->kind), kind) != 0)
			continue;
		if (runtime && strcmp(g->runtime, runtime) != 0)
			continue;
		if (node >= 0 && !mask_test(&g->cpu_nodes, node))
			continue;
		/* "count" is every match, as guest-policies counts every
		 * override; only one page of them is written. */
		count++;
		if (i < first)
			continue;
		if (shown == limit) {
			more = true;
			continue;
		}
		shown++;
		last = g->id;
		/* An API override wins; the snapshot shows it only from the
		 * cycle after it was set. */
		pol = gpolstore_get(a->gs, g->id, &one) ? &one.pol : &g->base_policy;
		/* Keys in sorted order, as the jansson answers have them. */
		jw_obj(&w);
		jw_key(&w, "cgroup");
		jw_str(&w, g->cgroup ? g->cgroup : "");
		mask_format(&g->cpu_nodes, nodes, sizeof(nodes));
		jw_key(&w, "cpu_nodes");
		jw_str(&w, nodes);
		jw_key(&w, "cpu_use");
		jw_real(&w, g->cpu_use);
		if (mask_format(g->cpus, cpus, CPULIST_BUFSZ) < 0)
			cpus[0] = '\0';
		jw_key(&w, "cpus");
		jw_str(&w, cpus);
		guest_devices_doc(&w, g);
		if (g->huge_total) {
			jw_key(&w, "hugetlb_total_bytes");
			jw_int(&w, (int64_t)g->huge_total);
		}
		jw_key(&w, "id");
		jw_str(&w, g->id);
		jw_key(&w, "kind");
		jw_str(&w, snap_kind_name(g->kind));
		jw_key(&w, "locality");
		jw_real(&w, g->locality);
		jw_key(&w, "locality_source");
		jw_str(&w, snap_loc_source_name(g->locality_source));
		/* Per node, as /metrics has it: numaorchctl top shows it. */
		jw_key(&w, "mem_bytes_by_node");
		if (g->mem_unknown)
			jw_null(&w);
		else
			jw_obj(&w);
		for (unsigned n = 0; !g->mem_unknown && n < s->nr_nodes; n++) {
			char id[16];

			if (!s->nodes[n].mem_total && !g->mem_node[n])
				continue;
			snprintf(id, sizeof(id), "%d", s->nodes[n].id);
			jw_key(&w, id);
			jw_int(&w, (int64_t)g->mem_node[n]);
		}
		if (!g->mem_unknown)
			jw_obj_end(&w);
		jw_key(&w, "mem_in_cpuset");
		jw_real(&w, g->mem_in_cpuset);
		jw_key(&w, "mem_total_bytes");
		if (g->mem_unknown)
			jw_null(&w);
		else
			jw_int(&w, (int64_t)g->mem_total);
		mask_format(&g->mems, nodes, sizeof(nodes));
		jw_key(&w, "mems");
		jw_str(&w, nodes);
		jw_key(&w, "name");
		jw_str(&w, g->name);
		if (g->ns[0]) {
			jw_key(&w, "namespace");
			jw_str(&w, g->ns);
		}
		if (g->owner[0]) {
			jw_key(&w, "owner");
			jw_str(&w, g->owner);
			jw_key(&w, "owner_reason");
			jw_str(&w, g->owner_reason);
		}
		if (g->pod[0]) {
			jw_key(&w, "pod");
			jw_str(&w, g->pod);
		}
		guest_policy_doc(&w, pol);
		jw_key(&w, "runtime");
		jw_str(&w, g->runtime);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "count");
	jw_int(&w, count);
	jw_key(&w, "next");
	if (page_next(more, last))
		jw_str(&w, last);
	else
		jw_null(&w);
	jw_key(&w, "seq");
	jw_int(&w, (int64_t)s->seq);
	jw_obj_end(&w);
	jw_raw(&w, "\n");
	free(cpus);
	return jw_take(&w, len);
}

static void text_reply(struct rq *r, char *text, size_t len)
{
	api_set_body(r->resp, 200, "application/json", text, len);
}

void h_guests(struct rq *r)
{
	const char *kind = urlq_get(&r->url, "kind"), *runtime = urlq_get(&r->url, "runtime");
	const char *nodes = urlq_get(&r->url, "node"), *after;
	uint64_t limit;
	struct engine_view *v;
	struct api *a = r->a;
	uint64_t gen;
	size_t len;
	char *text;
	int node = -1;

	/* One page at a time, as /v1/guest-policies: 1000 guests are ~600 KB
	 * of JSON, and an unbounded list grew with the host. */
	if (!page_query(r, &limit, &after))
		return;
	if (kind && strcmp(kind, "container") != 0 && strcmp(kind, "vm") != 0) {
		problem(r, 400, "invalid-field", "kind", "kind: must be container or vm");
		return;
	}
	if (runtime && (strlen(runtime) >= GUEST_RUNTIME_MAX || !*runtime)) {
		problem(r, 400, "invalid-field", "runtime", "runtime: must be 1..%d characters",
			GUEST_RUNTIME_MAX - 1);
		return;
	}
	if (nodes) {
		uint64_t u;

		if (parse_u64(nodes, &u) < 0 || u >= MASK_MAX_NODES) {
			problem(r, 400, "invalid-field", "node", "node: must be a node id 0..%d",
				MASK_MAX_NODES - 1);
			return;
		}
		node = (int)u;
	}
	v = need_view(r);
	if (!v)
		return;
	if (node >= 0 && snap_node_index(v->snap, node) < 0) {
		problem(r, 400, "invalid-field", "node", "node: this host has no node %d", node);
		return;
	}
	if (kind || runtime || node >= 0 || urlq_get(&r->url, "limit") || after) {
		text = guests_doc(a, v->snap, kind, runtime, node, after, (unsigned)limit, &len);
		text_reply(r, text, len);
		return;
	}
	/* Unfiltered, the common poll (its first page): built once per view
	 * and per override generation, by one request while the others wait for it (no
	 * stampede of identical builds when a new view appears). A view at
	 * least as new as the caller's is as good as its own. */
	gen = gpolstore_generation(a->gs);
	pthread_mutex_lock(&a->cache_lock);
	for (;;) {
		if (a->cache_view && a->cache_gen == gen && a->cache_view->snap->seq >= v->snap->seq) {
			text = xmalloc(a->cache_len + 1);
			memcpy(text, a->cache_body, a->cache_len + 1);
			len = a->cache_len;
			pthread_mutex_unlock(&a->cache_lock);
			text_reply(r, text, len);
			return;
		}
		if (!a->cache_building)
			break;
		pthread_cond_wait(&a->cache_cond, &a->cache_lock);
	}
	a->cache_building = true;
	pthread_mutex_unlock(&a->cache_lock);

	text = guests_doc(a, v->snap, NULL, NULL, -1, NULL, API_PAGE_DEFAULT, &len);

	pthread_mutex_lock(&a->cache_lock);
	a->cache_building = false;
	if (!a->cache_view || a->cache_view->snap->seq < v->snap->seq ||
	    (a->cache_view->snap->seq == v->snap->seq && a->cache_gen != gen)) {
		engine_view_unref(a->cache_view);
		free(a->cache_body);
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
		a->cache_view = v;
		a->cache_gen = gen;
		a->cache_body = xmalloc(len + 1);
		memcpy(a->cache_body, text, len + 1);
		a->cache_len = len;
	}
	pthread_cond_broadcast(&a->cache_cond);
	pthread_mutex_unlock(&a->cache_lock);
	text_reply(r, text, len);
}

/* Replace each byte of S that is not part of valid UTF-8 with U+FFFD, as
 * the guest list's writer shows it (jsonw.h: one rule for both), in
 * place: S holds SZ bytes, and a name the replacements lengthen is cut at
 * a character boundary. */
static void utf8_tame(char *s, size_t sz)
{
	size_t left = strlen(s), o = 0;
	char *src = xstrdup(s), *p = src;

	while (left) {
		size_t n = utf8_seq(p, left);
		const char *put = p;
		size_t k = n;

		if (!n) {
			put = "\xef\xbf\xbd";
			k = 3;
			n = 1;
		}
		if (o + k >= sz)
			break;
		memcpy(s + o, put, k);
		o += k;
		p += n;
		left -= n;
	}
	s[o] = '\0';
	free(src);
}

static const struct snap_guest *find_guest(struct rq *r, struct engine_view *v)
{
	const struct snap_guest *g = snap_find_guest(v->snap, r->id);

	if (!g)
		problem(r, 404, "not-found", "id", "no guest %s on this host (as of cycle %llu)", r->id,
			(unsigned long long)v->snap->seq);
	return g;
}

/* The newest decision record for ID, or null. */
static json_t *last_decision(struct api *a, const char *id)
{
	json_t *all = declog_query_newest(engine_declog(a->e), 1, id), *last;

	last = json_array_size(all) ? json_incref(json_array_get(all, 0)) : json_null();
	json_decref(all);
	return last;
}

void h_guest(struct rq *r)
{
	struct engine_view *v = need_view(r);
	const struct snap_guest *g;
	struct guest_policy pol;
	json_t *o, *item = json_null();

	if (!v || !(g = find_guest(r, v)))
		return;
	o = snap_guest_to_json(v->snap, g);
	if (!o) {
		/* jansson refuses strings that are not UTF-8, and a cgroup's
		 * name may be any bytes: show such names as the list does. */
		struct snap_guest t = *g;
		struct snap_vm vm;
		size_t cgsz = 3 * strlen(g->cgroup ? g->cgroup : "") + 1;
		char *cg = xmalloc(cgsz);

		snprintf(cg, cgsz, "%s", g->cgroup ? g->cgroup : "");
		utf8_tame(t.name, sizeof(t.name));
		utf8_tame(t.ns, sizeof(t.ns));
		utf8_tame(t.pod, sizeof(t.pod));
		utf8_tame(cg, cgsz);
		t.cgroup = cg;
		if (g->vm) {
			vm = *g->vm;
			utf8_tame(vm.name, sizeof(vm.name));
			t.vm = &vm;
		}
		o = snap_guest_to_json(v->snap, &t);
		free(cg);
		if (!o) {
			problem(r, 500, "internal", "id", "guest %s cannot be shown as JSON", r->id);
			return;
		}
	}
	effective_policy(r->a, g, &pol);
	json_object_set_new(o, "policy", gpol_to_json(&pol));
	for (unsigned i = 0; v->plan && i < v->plan->nr_items; i++)
		if (strcmp(v->plan->items[i].guest_id, g->id) == 0) {
			json_decref(item);
			item = plan_item_to_json(&v->plan->items[i]);
		}
	json_object_set_new(o, "plan", item);
	json_object_set_new(o, "last_decision", last_decision(r->a, g->id));
	json_object_set_new(o, "seq", json_integer((json_int_t)v->snap->seq));
	api_reply_json(r, 200, o);
}

json_t *api_gpol_record_json(const struct gpol_record *rec, bool present)
{
	json_t *o = gpol_to_json(&rec->pol);
	char t[40];

	declog_time(rec->set_real_ns, t, sizeof(t));
	json_object_set_new(o, "guest", json_string(rec->id));
	json_object_set_new(o, "set", json_string(t));
	json_object_set_new(o, "present", json_boolean(present));
	return o;
}

void h_guest_policy_get(struct rq *r)
{
	struct engine_view *v = engine_view_get(r->a->e);
	const struct snap_guest *g = v && v->snap ? snap_find_guest(v->snap, r->id) : NULL;
	struct gpol_record rec;
	json_t *o;

	r->view = v;
	if (gpolstore_get(r->a->gs, r->id, &rec)) {
		api_reply_json(r, 200, api_gpol_record_json(&rec, g != NULL));
		return;
	}
	if (!g) {
		if (!need_view(r))
			return;
		problem(r, 404, "not-found", "id", "no guest %s on this host and no policy set for it", r->id);
		return;
	}
	o = gpol_to_json(&g->base_policy);
	json_object_set_new(o, "guest", json_string(g->id));
	json_object_set_new(o, "present", json_true());
	api_reply_json(r, 200, o);
}

void h_guest_policies(struct rq *r)
{
	struct engine_view *v = engine_view_get(r->a->e);
	struct gpol_record *recs;
	const char *after, *next;
	uint64_t limit;
	unsigned n, total;
	bool more;
	json_t *arr;

	r->view = v;
	if (!page_query(r, &limit, &after))
		return;
	/* One page at a time: a full store is megabytes in one response,
	 * and concurrent readers would each hold a copy of all of it. */
	n = gpolstore_page(r->a->gs, after, (unsigned)limit, &recs, &total, &more);
	arr = json_array();
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(arr, api_gpol_record_json(&recs[i],
			v && v->snap && snap_find_guest(v->snap, recs[i].id)));
	next = page_next(more, n ? recs[n - 1].id : NULL);
	api_reply_json(r, 200, json_pack("{s:i, s:o, s:o}", "count", (int)total, "policies", arr,
				     "next", next ? json_string(next) : json_null()));
	free(recs);
}

void h_policy_get(struct rq *r)
{
	struct engine_view *v = engine_view_get(r->a->e);
	struct api_policy pol;
	char rev[17];
	json_t *o;

	r->view = v;
	if (!api_current_policy(r->a, v, &pol)) {
		need_view(r);
		return;
	}
	o = api_policy_json(&pol);
	api_policy_revision(&pol, rev);
	json_object_set_new(o, "revision", json_string(rev));
	api_reply_json(r, 200, o);
}

/* "2024-01-31T12:00:00Z" or with ".123" (what the records carry), as ms
 * since the epoch. */
static bool parse_time_param(const char *s, int64_t *out_ms)
{
	/* Every digit where the pattern has one: sscanf's %2d took "-1",
	 * "+1" and " 1" as fields. */
	static const char pat[] = "dddd-dd-ddTdd:dd:dd";
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, se, ms = 0, n = 19;
	struct tm tm;

	for (int i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
			return false;
	if (s[19] == '.') {
		if (!isdigit((unsigned char)s[20]) || !isdigit((unsigned char)s[21]) || !isdigit((unsigned char)s[22]))
			return false;
		ms = (s[20] - '0') * 100 + (s[21] - '0') * 10 + (s[22] - '0');
		n = 23;
	}
	if (strcmp(s + n, "Z") != 0 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6)
		return false;
	/* A day the month has (Feb 29 only in a leap year), not one timegm
	 * would carry into the next month. */
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) || h > 23 || mi > 59 ||
	    se > 60)
		return false;
	tm = (struct tm){ .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi,
			  .tm_sec = se };
	*out_ms = (int64_t)timegm(&tm) * 1000 + ms;
	return true;
}

void h_decisions(struct rq *r)
{
	const char *since = urlq_get(&r->url, "since"), *lim = urlq_get(&r->url, "limit");
	const char *guest = urlq_get(&r->url, "guest");
	struct declog *dl = engine_declog(r->a->e);
	uint64_t since_id = 0, limit = 100;
	int64_t since_ms = INT64_MIN;
	bool more = false;
	json_t *out, *next = json_null();
	size_t n;

	if (lim && (parse_u64(lim, &limit) < 0 || limit < 1 || limit > 1000)) {
		problem(r, 400, "invalid-field", "limit", "limit: must be an integer 1..1000");
		return;
	}
	if (since && parse_u64(since, &since_id) < 0 && !parse_time_param(since, &since_ms)) {
		problem(r, 400, "invalid-field", "since",
			"since: must be a record id or a UTC time such as 2024-01-31T12:00:00Z");
		return;
	}
	if (guest && !snap_id_valid(guest)) {
		problem(r, 400, "invalid-field", "guest", "guest: not a valid guest id");
		return;
	}
	/* Without SINCE: the newest LIMIT. With it: the oldest LIMIT after it
	 * (an id or a time), and "next", the id to pass as SINCE to read on.
	 * Either way only the LIMIT returned are decoded: decoding the whole
	 * ring (4096 records, a jansson tree each) per request would cost
	 * tens of MB. */
	if (!since) {
		out = declog_query_newest(dl, (unsigned)limit, guest);
	} else {
		out = declog_query(dl, since_id, since_ms, (unsigned)limit, guest, &more);
		n = json_array_size(out);
		if (more && n)
			next = json_incref(json_object_get(json_array_get(out, n - 1), "id"));
	}
	api_reply_json(r, 200, json_pack("{s:o, s:I, s:o}", "decisions", out, "last_id",
					 (json_int_t)declog_last_id(dl), "next", next));
}
