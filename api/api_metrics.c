/* api_metrics.c — GET /metrics: the published view and the API's own
 * counters in the Prometheus text format. Units follow Prometheus'
 * conventions (bytes, seconds, ratios 0..1).
 */
#include "api_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "promtext.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/store/declog.h"
#include "../orchestrator/store/history.h"
#include "../orchestrator/mover/mover.h"
#include "../orchestrator/base/utf8.h"
#include "../orchestrator/model/plan.h"
#include "../orchestrator/base/xalloc.h"

static void node_label(const struct snapshot *s, unsigned idx, char *buf, size_t sz)
{
	snprintf(buf, sz, "%d", s->nodes[idx].id);
}

struct by_mem {
	uint64_t mem;
	unsigned idx;
};

static int by_mem_desc(const void *x, const void *y)
{
	const struct by_mem *a = x, *b = y;

	if (a->mem != b->mem)
		return a->mem > b->mem ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Which guests get series of their own ([api] guest_metrics): WANT[i] for
 * the LIMIT guests with the most memory (ties: the snapshot's id order),
 * or all of them. Returns how many. */
static unsigned pick_guests(const struct snapshot *s, unsigned limit, bool *want)
{
	struct by_mem *o;

	if (limit >= s->nr_guests) {
		for (unsigned i = 0; i < s->nr_guests; i++)
			want[i] = true;
		return s->nr_guests;
	}
	o = xcalloc(s->nr_guests ? s->nr_guests : 1, sizeof(*o));
	for (unsigned i = 0; i < s->nr_guests; i++) {
		o[i].mem = s->guests[i].mem_total;
		o[i].idx = i;
		want[i] = false;
	}
	qsort(o, s->nr_guests, sizeof(*o), by_mem_desc);
	for (unsigned i = 0; i < limit; i++)
		want[o[i].idx] = true;
	free(o);
	return limit;
}

static void guest_device_metrics(struct prom *p, const struct snapshot *s, const bool *want);

/* The per-guest families, for the guests pick_guests() chose. */
static void guest_metrics(struct prom *p, struct api *a, const struct snapshot *s)
{
	unsigned limit = __atomic_load_n(&a->guest_metrics, __ATOMIC_RELAXED), nr;
	bool *want = xcalloc(s->nr_guests ? s->nr_guests : 1, sizeof(*want));
	char node[16];

	nr = pick_guests(s, limit, want);
	prom_family(p, "numaorch_guest_metrics_guests", "gauge",
		    "Guests with series of their own in this answer ([api] guest_metrics).");
	prom_sample(p, "numaorch_guest_metrics_guests", nr, 0);
	prom_family(p, "numaorch_guest_info", "gauge",
		    "Always 1: the guest's name as its runtime shows it, a pod's namespace and name, and the "
		    "placer that owns it (kubelet) if another does; join on guest.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];
		/* Names come from the host: label values must be UTF-8. */
		char name[4 * sizeof(g->name)], ns[4 * sizeof(g->ns)], pod[4 * sizeof(g->pod)];

		if (!want[i])
			continue;
		utf8_escape(g->name, name, sizeof(name));
		utf8_escape(g->ns, ns, sizeof(ns));
		utf8_escape(g->pod, pod, sizeof(pod));
		prom_sample(p, "numaorch_guest_info", 1, 7, "guest", g->id, "kind", snap_kind_name(g->kind),
			    "runtime", g->runtime, "name", name, "namespace", ns, "pod", pod, "owner", g->owner);
	}
	prom_family(p, "numaorch_guest_locality_ratio", "gauge",
		    "Share of the guest's memory on the node where each of its threads runs, weighted by "
		    "their CPU time (0..1).");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		/* Not measured: no sample, never a ratio the agent did not read. */
		if (want[i] && !isnan(g->locality))
			prom_sample(p, "numaorch_guest_locality_ratio", g->locality, 3, "guest", g->id, "kind",
				    snap_kind_name(g->kind), "runtime", g->runtime);
	}
	prom_family(p, "numaorch_guest_mem_in_cpuset_ratio", "gauge",
		    "Share of the guest's memory on the nodes of its cpuset, wherever its threads run (0..1).");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		if (want[i] && !isnan(g->mem_in_cpuset))
			prom_sample(p, "numaorch_guest_mem_in_cpuset_ratio", g->mem_in_cpuset, 1, "guest", g->id);
	}
	prom_family(p, "numaorch_guest_cpu_seconds_total", "counter",
		    "CPU time the guest used (its cgroup's, or its QEMU process's), as last read.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		/* 0 is what the sources leave when the counter could not be read. */
		if (want[i] && g->cpu_usage_ns)
			prom_sample(p, "numaorch_guest_cpu_seconds_total", (double)g->cpu_usage_ns / 1e9, 1, "guest",
				    g->id);
	}
	prom_family(p, "numaorch_guest_memory_bytes", "gauge", "Guest memory on each NUMA node.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		if (!want[i] || g->mem_unknown)
			continue;
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			if (!s->nodes[n].mem_total && !g->mem_node[n])
				continue;
			node_label(s, n, node, sizeof(node));
			prom_sample(p, "numaorch_guest_memory_bytes", (double)g->mem_node[n], 2, "guest", g->id,
				    "node", node);
		}
	}
	guest_device_metrics(p, s, want);
	free(want);
}

/* The chosen guests' devices (WANT), only guests with some: their nodes
 * (one series per node holding one: a handful at most) and whether its
 * CPUs are on one of them, which the placement prefers. */
static void guest_device_metrics(struct prom *p, const struct snapshot *s, const bool *want)
{
	char node[16];

	prom_family(p, "numaorch_guest_device_node", "gauge",
		    "Always 1: a NUMA node holding one of the guest's devices (passed-through PCI functions, "
		    "vDPA, mediated, device-plugin or device-cgroup devices); only guests with devices.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		if (!want[i] || !g->nr_devices)
			continue;
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			if (!mask_test(&g->dev_nodes, s->nodes[n].id))
				continue;
			node_label(s, n, node, sizeof(node));
			prom_sample(p, "numaorch_guest_device_node", 1, 2, "guest", g->id, "node", node);
		}
	}
	prom_family(p, "numaorch_guest_device_local", "gauge",
		    "1 when the guest's CPUs are on a node holding one of its devices, 0 when not; only guests "
		    "with devices whose node is known.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		if (want[i] && g->nr_devices && !mask_empty(&g->dev_nodes) && !mask_empty(&g->cpu_nodes))
			prom_sample(p, "numaorch_guest_device_local", mask_intersects(&g->cpu_nodes, &g->dev_nodes),
				    1, "guest", g->id);
	}
}

/* FAMILY's samples: one histogram per cycle phase of H. */
static void cycle_hists(struct prom *p, const char *family, const struct engine_hist *h)
{
	char bucket[96], sum[96], count[96], le[32];

	snprintf(bucket, sizeof(bucket), "%s_bucket", family);
	snprintf(sum, sizeof(sum), "%s_sum", family);
	snprintf(count, sizeof(count), "%s_count", family);
	for (int ph = CYCLE_TOTAL; ph < CYCLE_NR_PHASES; ph++) {
		const char *name = engine_cycle_phase_name((enum engine_cycle_phase)ph);

		for (unsigned b = 0; b < ENGINE_CYCLE_NR_BUCKETS; b++) {
			snprintf(le, sizeof(le), "%g", engine_cycle_buckets[b]);
			prom_sample(p, bucket, (double)h[ph].le[b], 2, "phase", name, "le", le);
		}
		prom_sample(p, bucket, (double)h[ph].count, 2, "phase", name, "le", "+Inf");
		prom_sample(p, sum, h[ph].sum_s, 1, "phase", name);
		prom_sample(p, count, (double)h[ph].count, 1, "phase", name);
	}
}

static void view_metrics(struct prom *p, struct api *a, const struct engine_view *v)
{
	const struct snapshot *s = v->snap;
	const struct engine_stats *st = &v->stats;
	char node[16];
	unsigned vms = 0, below = 0, moves = 0, skips = 0;

	prom_family(p, "numaorch_node_cpus", "gauge", "Online CPUs of the NUMA node.");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		node_label(s, n, node, sizeof(node));
		prom_sample(p, "numaorch_node_cpus", s->nodes[n].nr_cpus, 1, "node", node);
	}
	prom_family(p, "numaorch_node_cpu_busy_ratio", "gauge",
		    "Busy fraction of the node's CPUs over the last sample window (0..1).");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		node_label(s, n, node, sizeof(node));
		prom_sample(p, "numaorch_node_cpu_busy_ratio", s->nodes[n].busy, 1, "node", node);
	}
	prom_family(p, "numaorch_node_agent_cpus", "gauge",
		    "CPUs numaorchd's own threads used on the node over the last sample window, left out of the busy ratio.");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		node_label(s, n, node, sizeof(node));
		prom_sample(p, "numaorch_node_agent_cpus", s->nodes[n].agent_cpus, 1, "node", node);
	}
	prom_family(p, "numaorch_node_memory_total_bytes", "gauge", "Memory of the node (MemTotal).");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		node_label(s, n, node, sizeof(node));
		prom_sample(p, "numaorch_node_memory_total_bytes", (double)s->nodes[n].mem_total, 1, "node", node);
	}
	prom_family(p, "numaorch_node_memory_free_bytes", "gauge", "Free memory of the node (MemFree).");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		node_label(s, n, node, sizeof(node));
		prom_sample(p, "numaorch_node_memory_free_bytes", (double)s->nodes[n].mem_free, 1, "node", node);
	}

	for (unsigned i = 0; i < s->nr_guests; i++) {
		vms += s->guests[i].kind == GUEST_VM;
		below += s->guests[i].locality < v->policy.locality_target;
	}
	prom_family(p, "numaorch_guests", "gauge", "Guests discovered in the last cycle, by kind.");
	prom_sample(p, "numaorch_guests", s->nr_guests - vms, 1, "kind", "container");
	prom_sample(p, "numaorch_guests", vms, 1, "kind", "vm");
	prom_family(p, "numaorch_guests_below_locality_target", "gauge",
		    "Guests whose locality is below the policy's target, all of them (whatever [api] guest_metrics "
		    "exports).");
	prom_sample(p, "numaorch_guests_below_locality_target", below, 0);
	guest_metrics(p, a, s);
	for (unsigned i = 0; v->plan && i < v->plan->nr_items; i++) {
		moves += v->plan->items[i].kind == PLAN_MOVE;
		skips += v->plan->items[i].kind == PLAN_SKIP;
	}
	prom_family(p, "numaorch_plan_items", "gauge", "Decisions in the last cycle's plan, by kind.");
	prom_sample(p, "numaorch_plan_items", moves, 1, "kind", "move");
	prom_sample(p, "numaorch_plan_items", skips, 1, "kind", "skip");

	prom_family(p, "numaorch_cycles_total", "counter", "Cycles run since the agent started.");
	prom_sample(p, "numaorch_cycles_total", (double)st->cycles, 0);
	prom_family(p, "numaorch_moves_total", "counter", "Guest moves carried out.");
	prom_sample(p, "numaorch_moves_total", (double)st->moves, 0);
	prom_family(p, "numaorch_move_failures_total", "counter", "Guest moves that failed (writes refused).");
	prom_sample(p, "numaorch_move_failures_total", (double)st->move_failures, 0);
	prom_family(p, "numaorch_moves_skipped_total", "counter",
		    "Planned moves skipped at apply time (guest vanished or changed, no room).");
	prom_sample(p, "numaorch_moves_skipped_total", (double)st->moves_skipped, 0);
	prom_family(p, "numaorch_migrated_bytes_total", "counter", "Memory migrated by the moves carried out.");
	prom_sample(p, "numaorch_migrated_bytes_total", (double)st->migrated_bytes, 0);
	prom_family(p, "numaorch_kernel_numa_balancing", "gauge",
		    "kernel.numa_balancing as last read (0 off, 1 on, 2 tiering, 3 both; -1 unknown).");
	prom_sample(p, "numaorch_kernel_numa_balancing", st->numa_balancing, 0);
	prom_family(p, "numaorch_memory_deferred_total", "counter",
		    "Moves whose memory was left to the kernel's NUMA balancing ([memory] kernel_balancing).");
	prom_sample(p, "numaorch_memory_deferred_total", (double)st->memory_deferred, 0);
	prom_family(p, "numaorch_watch_cycles_total", "counter",
		    "Cycles the watch between cycles prompted: a guest's CPU use stepped ([agent] watch).");
	prom_sample(p, "numaorch_watch_cycles_total", (double)st->watch_cycles, 0);
	prom_family(p, "numaorch_placer_conflicts_total", "counter",
		    "cpusets another placer rewrote after numaorchd's move, each counted once (decision "
		    "conflict): the kubelet (a Kubernetes pod's container), or unknown.");
	prom_sample(p, "numaorch_placer_conflicts_total", (double)st->placer_conflicts_kubelet, 1, "placer", "kubelet");
	prom_sample(p, "numaorch_placer_conflicts_total", (double)st->placer_conflicts_unknown, 1, "placer", "unknown");
	prom_family(p, "numaorch_cycle_duration_seconds", "histogram", "Duration of the cycles, by phase.");
	cycle_hists(p, "numaorch_cycle_duration_seconds", st->cycle_hist);
	prom_family(p, "numaorch_cycle_cpu_seconds", "histogram",
		    "CPU time of the engine thread in the cycles, by phase (the cycle's decision record has each "
		    "cycle's).");
	cycle_hists(p, "numaorch_cycle_cpu_seconds", st->cycle_cpu_hist);
	/* For alert rules: "below target for 10 min", "not cycling". */
	prom_family(p, "numaorch_locality_target_ratio", "gauge",
		    "The policy's locality target in force (guests below it on nodes that fit are moved).");
	prom_sample(p, "numaorch_locality_target_ratio", v->policy.locality_target, 0);
	prom_family(p, "numaorch_move_budget", "gauge",
		    "The migrating moves and bytes a cycle may start, as in force at the last cycle "
		    "(auto: sized by the workers and the mover's measured rate).");
	prom_sample(p, "numaorch_move_budget", (double)v->policy.max_moves, 1, "kind", "moves");
	prom_sample(p, "numaorch_move_budget", (double)v->policy.max_migrate_bytes, 1, "kind", "bytes");
	prom_family(p, "numaorch_mover_measured_bytes_per_second", "gauge",
		    "The memory mover's host-wide rate measured from its last jobs (0: none ended yet).");
	prom_sample(p, "numaorch_mover_measured_bytes_per_second", v->mover_rate_mibs * 1048576.0, 0);
	prom_family(p, "numaorch_cycle_interval_seconds", "gauge", "Time between cycles in force.");
	prom_sample(p, "numaorch_cycle_interval_seconds", v->interval_s, 0);
	prom_family(p, "numaorch_last_cycle_timestamp_seconds", "gauge", "When the last cycle finished (Unix time).");
	prom_sample(p, "numaorch_last_cycle_timestamp_seconds", (double)st->last_cycle_real_ns / 1e9, 0);
	prom_family(p, "numaorch_libvirt_state", "gauge",
		    "The libvirt VM source: 1 for its state now (disabled, unavailable, disconnected, connected).");
	for (int k = LIBVIRT_DISABLED; k <= LIBVIRT_CONNECTED; k++)
		prom_sample(p, "numaorch_libvirt_state", st->libvirt_state == (enum engine_libvirt_state)k, 1,
			    "state", engine_libvirt_state_name((enum engine_libvirt_state)k));
	prom_family(p, "numaorch_libvirt_connection_losses_total", "counter", "Connections to libvirtd lost.");
	prom_sample(p, "numaorch_libvirt_connection_losses_total", (double)st->libvirt_losses, 0);
	{
		unsigned nh;
		size_t hb = history_bytes(engine_history(a->e), &nh);

		prom_gauge(p, "numaorch_history_bytes",
			   "Memory held by the per-guest history (GET /v1/guests/{id}/history).", (double)hb);
		prom_gauge(p, "numaorch_history_guests", "Guests with a history.", nh);
	}
	{
		unsigned nr;
		size_t rb = declog_bytes(engine_declog(a->e), &nr);

		prom_gauge(p, "numaorch_decision_ring_bytes",
			   "Memory held by the in-memory ring of decision records (GET /v1/decisions).", (double)rb);
		prom_gauge(p, "numaorch_decision_ring_records", "Decision records in the ring.", nr);
	}
	prom_family(p, "numaorch_guest_policy_overrides", "gauge", "Per-guest policies set through the API.");
	prom_sample(p, "numaorch_guest_policy_overrides", gpolstore_count(a->gs), 0);
}

static void api_counters(struct prom *p, struct api *a)
{
	char code[8], le[32];

	prom_family(p, "numaorch_api_requests_total", "counter", "API requests answered, by route and status.");
	for (unsigned r = 0; r < API_NR_ROUTES; r++)
		for (unsigned c = 0; c < API_NR_CODES; c++) {
			uint64_t n = __atomic_load_n(&a->req_count[r][c], __ATOMIC_RELAXED);

			/* A route's success is there from the start, 0 until answered:
			 * rate() needs the series before the first request. */
			if (!n && !(c == 200 && api_route_has_get((enum api_route_id)r)))
				continue;
			snprintf(code, sizeof(code), "%u", c);
			prom_sample(p, "numaorch_api_requests_total", (double)n, 2, "route",
				    api_route_name((enum api_route_id)r), "code", code);
		}
	prom_family(p, "numaorch_api_request_duration_seconds", "histogram",
		    "Time to answer an API request (handling only, not the network), by route.");
	for (unsigned r = 0; r < API_NR_ROUTES; r++) {
		uint64_t cum = 0;
		const char *route = api_route_name((enum api_route_id)r);

		for (unsigned b = 0; b <= API_NR_BUCKETS; b++)
			cum += __atomic_load_n(&a->req_bucket[r][b], __ATOMIC_RELAXED);
		if (!cum)
			continue;
		cum = 0;
		for (unsigned b = 0; b < API_NR_BUCKETS; b++) {
			cum += __atomic_load_n(&a->req_bucket[r][b], __ATOMIC_RELAXED);
			snprintf(le, sizeof(le), "%g", api_buckets[b]);
			prom_sample(p, "numaorch_api_request_duration_seconds_bucket", (double)cum, 2, "route", route,
				    "le", le);
		}
		cum += __atomic_load_n(&a->req_bucket[r][API_NR_BUCKETS], __ATOMIC_RELAXED);
		prom_sample(p, "numaorch_api_request_duration_seconds_bucket", (double)cum, 2, "route", route,
			    "le", "+Inf");
		prom_sample(p, "numaorch_api_request_duration_seconds_sum",
			    (double)__atomic_load_n(&a->req_ns[r], __ATOMIC_RELAXED) / 1e9, 1, "route", route);
		prom_sample(p, "numaorch_api_request_duration_seconds_count", (double)cum, 1, "route", route);
	}
	prom_family(p, "numaorch_events_total", "counter", "Notifications received on POST /v1/events, by event.");
	for (unsigned e = 0; e < API_NR_EVENTS; e++)
		prom_sample(p, "numaorch_events_total", (double)__atomic_load_n(&a->events[e], __ATOMIC_RELAXED), 1,
			    "event", api_event_names[e]);
	{
		uint64_t joined;
		int64_t hb = engine_heartbeat_ns(a->e);

		pthread_mutex_lock(&a->rb_lock);
		joined = a->rb_joined;
		pthread_mutex_unlock(&a->rb_lock);
		prom_family(p, "numaorch_api_rebalance_shared_total", "counter",
			    "POST /v1/rebalance requests answered by a cycle another request had asked for.");
		prom_sample(p, "numaorch_api_rebalance_shared_total", (double)joined, 0);
		prom_family(p, "numaorch_engine_heartbeat_age_seconds", "gauge",
			    "Seconds since the engine loop last turned (at least every second when healthy).");
		prom_sample(p, "numaorch_engine_heartbeat_age_seconds",
			    hb ? (double)(clock_mono_ns() - hb) / 1e9 : 0, 0);
	}
	pthread_mutex_lock(&a->cs_lock);
	if (a->cs_fn) {
		static const char *const names[] = { "unix", "tcp" };
		struct api_conn_stats st[2];

		for (unsigned t = 0; t < 2; t++)
			a->cs_fn(a->cs_ctx, t == 0 ? API_UNIX : API_TCP, &st[t]);
		prom_family(p, "numaorch_api_connections", "gauge", "Connections the API holds open, by listener.");
		for (unsigned t = 0; t < 2; t++)
			prom_sample(p, "numaorch_api_connections", st[t].open, 1, "listener", names[t]);
		prom_family(p, "numaorch_api_connections_closed_total", "counter",
			    "Connections the API closed on its own: past the listener's limit (the one that "
			    "waited longest) or at their request deadline.");
		for (unsigned t = 0; t < 2; t++) {
			prom_sample(p, "numaorch_api_connections_closed_total", (double)st[t].pushed_out, 2,
				    "listener", names[t], "reason", "limit");
			prom_sample(p, "numaorch_api_connections_closed_total", (double)st[t].timed_out, 2,
				    "listener", names[t], "reason", "deadline");
		}
	}
	pthread_mutex_unlock(&a->cs_lock);
}

/* The memory mover (orchestrator/mover/mover.h): bytes moved by cause, jobs
 * running and queued, jobs ended by how, and each move call's duration
 * (the guest's stall) as a histogram. */
static void mover_metrics(struct prom *p, struct api *a)
{
	struct mover *m = engine_mover(a->e);
	struct mover_stats st;
	char le[32];

	/* Without a mover (advise, dry run, cpuset.mems writes, a fixture
	 * root) every family is still there, at 0: dashboards and alerts see
	 * "nothing moved", not "no data". */
	if (m)
		mover_get_stats(m, &st);
	else
		memset(&st, 0, sizeof(st));
	prom_family(p, "numaorch_mover_moved_bytes_total", "counter",
		    "Memory the mover moved with move_pages(2), by the cause of the move.");
	/* Every cause a plan can give (its move reasons) from the start, then
	 * any other the mover counted. */
	for (int r = REASON_CONSOLIDATE; move_reason_name((enum move_reason)r); r++) {
		const char *cause = move_reason_name((enum move_reason)r);
		uint64_t bytes = 0;

		for (unsigned i = 0; i < st.nr_causes; i++)
			if (strcmp(st.moved[i].cause, cause) == 0)
				bytes = st.moved[i].bytes;
		prom_sample(p, "numaorch_mover_moved_bytes_total", (double)bytes, 1, "cause", cause);
	}
	for (unsigned i = 0; i < st.nr_causes; i++) {
		bool known = false;

		for (int r = REASON_CONSOLIDATE; move_reason_name((enum move_reason)r); r++)
			known = known || strcmp(st.moved[i].cause, move_reason_name((enum move_reason)r)) == 0;
		if (known)
			continue;
		prom_sample(p, "numaorch_mover_moved_bytes_total", (double)st.moved[i].bytes, 1, "cause",
			    st.moved[i].cause);
	}
	prom_family(p, "numaorch_mover_jobs", "gauge", "Migration jobs now, by state.");
	prom_sample(p, "numaorch_mover_jobs", st.running, 1, "state", "running");
	prom_sample(p, "numaorch_mover_jobs", st.queued, 1, "state", "queued");
	prom_family(p, "numaorch_mover_jobs_ended_total", "counter", "Migration jobs ended, by how.");
	for (int s = MJ_DONE; s < MJ_NR_STATES; s++)
		prom_sample(p, "numaorch_mover_jobs_ended_total", (double)st.jobs_by_state[s], 1, "state",
			    mover_state_name((enum mover_state)s));
	prom_family(p, "numaorch_mover_chunk_stall_seconds", "histogram",
		    "Duration of each move_pages(2) call that moved pages: how long the guest's pages were in flight.");
	for (unsigned b = 0; b < MOVER_NR_BUCKETS; b++) {
		snprintf(le, sizeof(le), "%g", mover_stall_buckets_ms[b] / 1e3);
		prom_sample(p, "numaorch_mover_chunk_stall_seconds_bucket", (double)st.stall_le[b], 1, "le", le);
	}
	prom_sample(p, "numaorch_mover_chunk_stall_seconds_bucket", (double)st.stall_count, 1, "le", "+Inf");
	prom_sample(p, "numaorch_mover_chunk_stall_seconds_sum", st.stall_sum_s, 0);
	prom_sample(p, "numaorch_mover_chunk_stall_seconds_count", (double)st.stall_count, 0);
}

/* The nodes' hugetlb pools, by page size ("2048kB", as the kernel names
 * them), and the guests' huge pages on each node (a part of
 * numaorch_guest_memory_bytes); no samples on a host without them. */
static void hugepage_metrics(struct prom *p, const struct snapshot *s)
{
	static const char *const state[3] = { "total", "free", "surplus" };
	char node[16], size[32];

	prom_family(p, "numaorch_node_hugepages", "gauge",
		    "Huge pages in the node's hugetlb pool of one page size: total (nr_hugepages), free, surplus.");
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		const struct snap_node *nd = &s->nodes[n];

		node_label(s, n, node, sizeof(node));
		for (unsigned i = 0; i < nd->nr_hpools && i < SNAP_HP_MAX; i++) {
			const uint64_t v[3] = { nd->hpools[i].total, nd->hpools[i].free, nd->hpools[i].surplus };

			snprintf(size, sizeof(size), "%llukB", (unsigned long long)(nd->hpools[i].page >> 10));
			for (unsigned k = 0; k < 3; k++)
				prom_sample(p, "numaorch_node_hugepages", (double)v[k], 3, "node", node, "size", size,
					    "state", state[k]);
		}
	}
	prom_family(p, "numaorch_guest_hugetlb_bytes", "gauge",
		    "Guest memory in huge pages (hugetlb) on each NUMA node, a part of numaorch_guest_memory_bytes.");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];

		if (!g->huge_total || !g->huge_node)
			continue;
		snprintf(size, sizeof(size), "%llukB", (unsigned long long)(g->huge_page >> 10));
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			if (!g->huge_node[n])
				continue;
			node_label(s, n, node, sizeof(node));
			prom_sample(p, "numaorch_guest_hugetlb_bytes", (double)g->huge_node[n], 3, "guest", g->id,
				    "node", node, "size", size);
		}
	}
}

void h_metrics(struct rq *r)
{
	struct engine_view *v = need_view(r);
	struct prom p;
	char *text;
	size_t len;

	if (!v)
		return;
	/* The last answer's size and a little more: at 1000 guests the text
	 * is a few MiB, which doubling from 4 KiB would pass through twice
	 * over (old and new buffer at once) at every step. */
	len = __atomic_load_n(&r->a->metrics_len, __ATOMIC_RELAXED);
	prom_init_size(&p, len + len / 16);
	prom_family(&p, "numaorch_build_info", "gauge", "Always 1; the version is a label.");
	prom_sample(&p, "numaorch_build_info", 1, 1, "version", r->a->version);
	prom_family(&p, "numaorch_start_time_seconds", "gauge", "When the agent started (Unix time).");
	prom_sample(&p, "numaorch_start_time_seconds", (double)r->a->start_real_ns / 1e9, 0);
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0) {
			prom_family(&p, "process_cpu_seconds_total", "counter",
				    "CPU time numaorchd used, user and system, all its threads.");
			prom_sample(&p, "process_cpu_seconds_total",
				    (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
					    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
				    0);
		}
	}
	view_metrics(&p, r->a, v);
	hugepage_metrics(&p, v->snap);
	mover_metrics(&p, r->a);
	api_counters(&p, r->a);
	text = prom_take(&p, &len);
	__atomic_store_n(&r->a->metrics_len, len, __ATOMIC_RELAXED);
	api_set_body(r->resp, 200, PROM_CONTENT_TYPE, text, len);
}
