/* numaorchctl — command-line client of numaorchd's REST API.
 *
 * Talks to the agent's unix socket (default /run/numaorch/api.sock) or,
 * with --url, to its TCP listener with a bearer token. Human tables by
 * default, the server's JSON with --json. Exit codes: see usage().
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ctl_fmt.h"
#include "ctl_http.h"
#include "ctl_top.h"

#ifndef NUMAORCH_VERSION
#define NUMAORCH_VERSION "0.1.0"
#endif
#define DEFAULT_SOCKET "/run/numaorch/api.sock"

enum {
	EX_OK = 0,
	EX_FAIL = 1,        /* unexpected reply, server error */
	EX_USAGE = 2,
	EX_UNREACHABLE = 3, /* no daemon, refused, timeout, TLS */
	EX_NOTFOUND = 4,    /* 404 */
	EX_REJECTED = 5,    /* 400, 405, 409, 413, 415 */
	EX_AUTH = 6,        /* 401, 403 */
	EX_UNAVAILABLE = 7, /* 503, 429: not ready yet, engine busy or wedged, stopping, rate limit */
	EX_NEGATIVE = 8,    /* advise: nothing fits; rebalance: a move failed */
};

struct opts {
	struct ctl_conn conn;
	bool json, dry_run, verbose, follow, provision;
	const char *since, *guest, *limit, *kind, *runtime, *node, *label, *uuid, *source, *devices;
	double reserve;
	long busy_threads;  /* advise --busy-threads: 0 not given */
	uint64_t dev_nodes; /* advise --device: its devices' nodes (ids < 64) */
	struct ctl_top_opts top;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: numaorchctl [OPTIONS] COMMAND [ARGS]\n"
		"Drive numaorchd, the NUMA placement agent, through its REST API.\n\n"
		"Commands:\n"
		"  status                         agent, host and last cycle\n"
		"  nodes                          NUMA nodes: CPUs, load, memory, guests\n"
		"  topology                       the host as Kubernetes' NodeResourceTopology: each\n"
		"                                 zone's resources, load, guests' memory, costs\n"
		"  guests [--kind K] [--runtime R] [--node N]\n"
		"                                 guests and where they run\n"
		"  guest ID                       one guest in detail, with its last decision\n"
		"  policy [get]                   the global policy\n"
		"  policy set KEY=VALUE...        change it (keys and units of numaorchd.conf [policy],\n"
		"                                 plus mode and interval); all or nothing; kept\n"
		"                                 across reloads and restarts\n"
		"  policy reset                   drop what policy set and schedule set changed: the\n"
		"                                 configuration file's settings again\n"
		"  schedule [get]                 the schedule windows, open or closed, and what is in force\n"
		"  schedule set WINDOW...         replace them ('Mon-Fri 08:00-18:00 mode=advise' ...)\n"
		"  schedule clear                 remove them\n"
		"  guest-policy ID                a guest's policy\n"
		"  guest-policy ID auto|ignore|clear\n"
		"  guest-policy ID pinned NODES   pin (e.g. 0-1); kept across restarts\n"
		"                                 (a last devices=prefer|require|ignore: what its\n"
		"                                 devices' nodes weigh, prefer by default)\n"
		"                                 (--provision: for a guest not on the host yet)\n"
		"  guest-policies                 every per-guest policy set\n"
		"  rebalance [--dry-run] [--verbose]\n"
		"                                 run a cycle now; show the plan and outcomes\n"
		"  decisions [--since ID|TIME|AGO] [--guest ID] [--limit N] [--follow]\n"
		"                                 decision records (AGO: 30s, 10m, 2h, 1d); --follow\n"
		"                                 keeps printing new ones (--json: one per line)\n"
		"  advise VCPUS MEMORY [--reserve SECONDS] [--label NAME] [--device PCI|NODE]...\n"
		"         [--devices prefer|require|ignore] [--busy-threads N]\n"
		"                                 where a new guest should go (MEMORY: MiB, or 512M, 4G);\n"
		"                                 --device: a PCI function it will have (its node read\n"
		"                                 from /sys/bus/pci/devices/PCI/numa_node) or a node id;\n"
		"                                 --busy-threads: its busy threads (a VM: VCPUS), counted\n"
		"                                 against free cores and one last-level cache\n"
		"  event EVENT DOMAIN [--uuid UUID] [--source NAME]\n"
		"                                 tell the agent a domain started|stopped|release|reconnect\n"
		"  top [--once] [--delay SECONDS] [--sort KEY]\n"
		"                                 live view of nodes and guests (q quits; KEY: locality,\n"
		"                                 cpu, mem, name, decision); --once: one plain screen\n"
		"  migrations                     the memory mover's jobs: guest, nodes, progress, rate, ETA\n"
		"  migrations cancel ID           stop job ID at its next chunk\n"
		"  health                         is the agent up and ready (exit 7 while starting)\n"
		"  metrics                        the Prometheus metrics, as served\n\n"
		"Options:\n"
		"  -s, --socket PATH      the agent's unix socket (default " DEFAULT_SOCKET ",\n"
		"                         or $NUMAORCH_SOCKET)\n"
		"  -u, --url URL          talk TCP instead: http(s)://HOST:PORT (or $NUMAORCH_URL)\n"
		"  -t, --token-file FILE  bearer token for --url (or $NUMAORCH_TOKEN_FILE)\n"
		"      --cacert FILE      CA certificate(s) to verify an https agent\n"
		"  -j, --json             print the server's JSON\n"
		"      --timeout SECONDS  give up after this long (default 30, at most 86400)\n"
		"  -V, --version, -h, --help\n\n"
		"Exit status: 0 done; 1 failed (server error, bad reply); 2 bad usage;\n"
		"3 cannot reach numaorchd; 4 not found; 5 request rejected (invalid or\n"
		"conflicting); 6 not authorised; 7 agent not ready or busy, retry later;\n"
		"8 done but negative (advise: nothing fits; rebalance: a move failed).\n");
}

static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("numaorchctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(numaorchctl --help for usage)\n", stderr);
	return EX_USAGE;
}

static int exit_for_status(long st)
{
	switch (st) {
	case 404: return EX_NOTFOUND;
	case 400: case 405: case 409: case 413: case 415: return EX_REJECTED;
	case 401: case 403: return EX_AUTH;
	case 429: case 503: return EX_UNAVAILABLE;
	default: return EX_FAIL;
	}
}

/* One request; on success *OUT holds the parsed JSON (NULL for an empty
 * or non-JSON body, e.g. /metrics or 204) and RAW the reply. Errors are
 * printed as one line; the return value is the exit code. */
static int call(const struct opts *o, const char *method, const char *path, json_t *body, json_t **out,
		struct ctl_reply *raw)
{
	struct ctl_reply rep;
	char err[512], *text = NULL;
	json_t *j;
	int r;

	*out = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			abort();
	}
	/* only /metrics is asked for raw: text, and larger */
	r = ctl_request(&o->conn, method, path, text, raw ? CTL_TEXT_MAX : CTL_JSON_MAX, &rep, err, sizeof(err));
	free(text);
	if (r < 0) {
		/* curl's messages may quote what the server sent */
		fprintf(stderr, "numaorchctl: %s\n", fmt_safe(err));
		return r == -EFBIG ? EX_FAIL : EX_UNREACHABLE;
	}
	j = rep.len ? json_loadb(rep.body, rep.len, 0, NULL) : NULL;
	if (rep.status >= 400) {
		const char *detail = jstr(j, "detail"), *title = jstr(j, "title");
		if (!*detail) {
			/* Not our problem+json (a proxy?): show the start of it,
			 * escaped, for it may hold anything. */
			size_t n = strcspn(rep.body, "\r\n");

			fprintf(stderr, "numaorchctl: HTTP %ld: ", rep.status);
			fmt_safe_write(stderr, rep.body, n > 200 ? 200 : n, false);
			fputc('\n', stderr);
		} else {
			fprintf(stderr, "numaorchctl: %s (HTTP %ld %s)\n", detail, rep.status, title);
		}
		json_decref(j);
		r = exit_for_status(rep.status);
		ctl_reply_free(&rep);
		return r;
	}
	if (rep.status < 200 || rep.status >= 300) {
		fprintf(stderr, "numaorchctl: unexpected HTTP status %ld\n", rep.status);
		json_decref(j);
		ctl_reply_free(&rep);
		return EX_FAIL;
	}
	if (!j && rep.len && strncmp(rep.content_type, "application/json", 16) == 0) {
		fprintf(stderr, "numaorchctl: the agent's reply is not valid JSON\n");
		ctl_reply_free(&rep);
		return EX_FAIL;
	}
	*out = j;
	if (raw)
		*raw = rep;
	else
		ctl_reply_free(&rep);
	return EX_OK;
}

static void print_json(json_t *j)
{
	if (j)
		fmt_json_print(stdout, j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
}

static char *guest_path(const char *id, const char *suffix)
{
	char *e = ctl_escape(id), *p;
	size_t n = strlen(e) + 32;

	p = malloc(n);
	if (!p)
		abort();
	snprintf(p, n, "/v1/guests/%s%s", e, suffix);
	free(e);
	return p;
}

/* ---- commands -------------------------------------------------------- */

static int cmd_status(const struct opts *o)
{
	json_t *j, *h, *g, *lc, *t, *w, *lv;
	char b1[32];
	int r = call(o, "GET", "/v1/status", NULL, &j, NULL);
	size_t i;
	json_t *x;

	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	h = json_object_get(j, "host");
	g = json_object_get(j, "guests");
	lc = json_object_get(j, "last_cycle");
	t = json_object_get(j, "totals");
	printf("numaorchd %s, up %s, mode %s%s, a cycle every %g s\n", jstr(j, "version"),
	       fmt_duration(jnum(j, "uptime_s"), b1, sizeof(b1)), jstr(j, "mode"),
	       json_is_true(json_object_get(j, "dry_run")) ? " (dry run)" : "", jnum(j, "interval_s"));
	printf("host:        %lld NUMA node%s (%lld with CPUs), cgroup %s\n", jint(h, "nodes"),
	       jint(h, "nodes") == 1 ? "" : "s", jint(h, "cpu_nodes"), jstr(h, "cgroup_layout"));
	printf("guests:      %lld (%lld container%s, %lld VM%s), %lld with a per-guest policy\n",
	       jint(g, "total"), jint(g, "containers"), jint(g, "containers") == 1 ? "" : "s", jint(g, "vms"),
	       jint(g, "vms") == 1 ? "" : "s", jint(g, "policy_overrides"));
	printf("last cycle:  #%lld at %s, %.1f ms (acquire %.1f, decide %.1f, apply %.1f); "
	       "%lld move%s planned, %lld skipped\n",
	       jint(lc, "seq"), jstr(lc, "time"), jnum(lc, "duration_s") * 1e3, jnum(lc, "acquire_s") * 1e3,
	       jnum(lc, "decide_s") * 1e3, jnum(lc, "apply_s") * 1e3, jint(lc, "planned_moves"),
	       jint(lc, "planned_moves") == 1 ? "" : "s", jint(lc, "skipped"));
	printf("since start: %lld cycles, %lld moves, %lld failed, %lld skipped, %g MiB migrated\n",
	       jint(j, "cycles"), jint(t, "moves"), jint(t, "move_failures"), jint(t, "moves_skipped"),
	       jnum(t, "migrated_mib"));
	lv = json_object_get(j, "libvirt");
	if (lv && strcmp(jstr(lv, "state"), "disabled") != 0) {
		printf("libvirt:     %s", jstr(lv, "state"));
		if (json_is_string(json_object_get(lv, "reason")))
			printf(" (%s)", jstr(lv, "reason"));
		else
			printf(", %lld connection%s lost since start", jint(lv, "losses"),
			       jint(lv, "losses") == 1 ? "" : "s");
		printf("\n");
	}
	w = json_object_get(j, "schedule");
	json_array_foreach(w, i, x)
		printf("schedule:    %s  [%s]\n", jstr(x, "window"),
		       json_is_true(json_object_get(x, "active")) ? "open" : "closed");
	if (json_array_size(w) && strcmp(jstr(j, "mode"), jstr(json_object_get(j, "configured"), "mode")))
		printf("             (configured mode %s; a window sets %s now)\n",
		       jstr(json_object_get(j, "configured"), "mode"), jstr(j, "mode"));
	w = json_object_get(j, "warnings");
	json_array_foreach(w, i, x)
		printf("warning:     %s\n", fmt_safe(json_string_value(x)));
	json_decref(j);
	return EX_OK;
}

/* schedule [get] | set WINDOW... | clear: the [schedule] windows, shown
 * with whether each is open now; set/clear replace the whole list. */
static int cmd_schedule(const struct opts *o, int argc, char **argv)
{
	json_t *j, *body, *list, *x, *in;
	size_t i;
	int r;

	if (argc == 0 || strcmp(argv[0], "get") == 0) {
		if (argc > 1)
			return die_usage("schedule get takes no arguments");
		r = call(o, "GET", "/v1/status", NULL, &j, NULL);
		if (r || o->json) {
			print_json(r ? j : json_object_get(j, "schedule"));
			json_decref(j);
			return r;
		}
		list = json_object_get(j, "schedule");
		if (!json_array_size(list))
			printf("no schedule windows: the configured settings apply all the time\n");
		json_array_foreach(list, i, x)
			printf("%-6s %s\n", json_is_true(json_object_get(x, "active")) ? "open" : "closed",
			       jstr(x, "window"));
		in = json_object_get(j, "in_force");
		printf("in force now: mode %s, interval %g s, max_moves %lld, max_migrate_mib %lld, cooldown %g s\n",
		       jstr(in, "mode"), jnum(in, "interval_s"), jint(in, "max_moves"), jint(in, "max_migrate_mib"),
		       jnum(in, "cooldown_s"));
		if (jnum(in, "rate_mib") > 0)
			printf("memory mover: at most %g MiB/s\n", jnum(in, "rate_mib"));
		{
			json_t *sz = json_object_get(in, "sized");

			/* where auto's figures came from */
			if (json_is_object(sz))
				printf("max_moves %s; max_migrate_mib %s; cooldown %s\n", fmt_safe(jstr(sz, "max_moves")),
				       fmt_safe(jstr(sz, "max_migrate_mib")), fmt_safe(jstr(sz, "cooldown")));
		}
		json_decref(j);
		return EX_OK;
	}
	if (strcmp(argv[0], "set") == 0) {
		if (argc < 2)
			return die_usage("schedule set needs windows, e.g. 'Mon-Fri 08:00-18:00 mode=advise'");
	} else if (strcmp(argv[0], "clear") == 0) {
		if (argc > 1)
			return die_usage("schedule clear takes no arguments");
	} else {
		return die_usage("schedule: expected get, set or clear, got \"%s\"", argv[0]);
	}
	list = json_array();
	for (int k = 1; k < argc; k++)
		json_array_append_new(list, json_string(argv[k]));
	body = json_pack("{s:o}", "schedule", list);
	r = call(o, "PUT", "/v1/policy", body, &j, NULL);
	json_decref(body);
	if (r || o->json)
		print_json(j);
	else
		printf("changed: %s (applies %s)\n", jstr(j, "changed"), jstr(j, "applies"));
	json_decref(j);
	return r;
}

static int cmd_nodes(const struct opts *o)
{
	json_t *j, *nodes, *n;
	struct table *t;
	size_t i;
	int r = call(o, "GET", "/v1/nodes", NULL, &j, NULL);

	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	t = table_new(7);
	table_row(t, "NODE", "CPUS", "BUSY", "LOAD", "MEM FREE / TOTAL", "MOVING OUT / IN", "GUESTS");
	nodes = json_object_get(j, "nodes");
	json_array_foreach(nodes, i, n) {
		char id[16], busy[16], load[16], mem[64], b1[24], b2[24], ng[16], fl[64];

		snprintf(id, sizeof(id), "%lld", jint(n, "id"));
		snprintf(mem, sizeof(mem), "%s / %s", fmt_bytes(jnum(n, "mem_free_bytes"), b1, sizeof(b1)),
			 fmt_bytes(jnum(n, "mem_total_bytes"), b2, sizeof(b2)));
		snprintf(fl, sizeof(fl), "%s / %s", fmt_bytes(jnum(n, "mem_leaving_bytes"), b1, sizeof(b1)),
			 fmt_bytes(jnum(n, "mem_coming_bytes"), b2, sizeof(b2)));
		snprintf(ng, sizeof(ng), "%zu", json_array_size(json_object_get(n, "guests")));
		table_row(t, id, *jstr(n, "cpus") ? jstr(n, "cpus") : "(none)",
			  fmt_ratio(json_object_get(n, "busy"), busy, sizeof(busy)),
			  fmt_num(json_object_get(n, "load_cpus"), 1, load, sizeof(load)), mem, fl, ng);
	}
	table_print(t, stdout);
	json_decref(j);
	return EX_OK;
}

/* The value of attribute NAME in the NodeResourceTopology list LIST, "-"
 * when absent (the agent did not measure it). */
static const char *nrt_attr(json_t *list, const char *name)
{
	size_t i;
	json_t *a;

	json_array_foreach(list, i, a)
		if (strcmp(jstr(a, "name"), name) == 0)
			return jstr(a, "value");
	return "-";
}

/* A zone's hugetlb pools as SIZE:AVAILABLE/CAPACITY, comma-separated
 * ("2Mi:200Mi/1Gi"); "-" when it has none. */
static void nrt_hugepages(json_t *res, char *buf, size_t sz)
{
	size_t i, n = 0;
	json_t *r;

	buf[0] = '\0';
	json_array_foreach(res, i, r) {
		const char *name = jstr(r, "name");
		char size[32];

		if (strncmp(name, "hugepages-", 10) != 0 || n >= sz)
			continue;
		snprintf(size, sizeof(size), "%s", name + 10);
		n += (size_t)snprintf(buf + n, sz - n, "%s%s:%s/", n ? "," : "", size, jstr(r, "available"));
		if (n < sz)
			n += (size_t)snprintf(buf + n, sz - n, "%s", jstr(r, "capacity"));
	}
	if (!buf[0])
		snprintf(buf, sz, "-");
}

/* GET /v1/topology: one row a zone, quantities as the object writes them
 * (what a scheduler reads), "-" where the agent measured nothing. */
static int cmd_topology(const struct opts *o)
{
	json_t *j, *z, *res, *r0;
	struct table *t;
	size_t i, k;
	int r = call(o, "GET", "/v1/topology", NULL, &j, NULL);

	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	printf("node %s (%s)\n", jstr(json_object_get(j, "metadata"), "name"), jstr(j, "apiVersion"));
	t = table_new(11);
	table_row(t, "ZONE", "CPUS", "MEMORY", "ALLOC", "AVAIL", "HUGEPAGES", "LOAD", "GUESTS", "LOCAL", "REMOTE",
		  "COSTS");
	json_array_foreach(json_object_get(j, "zones"), i, z) {
		json_t *attrs = json_object_get(z, "attributes"), *c, *cpu = NULL, *mem = NULL;
		char huge[160], costs[256];
		size_t n = 0;

		res = json_object_get(z, "resources");
		json_array_foreach(res, k, r0) {
			if (strcmp(jstr(r0, "name"), "cpu") == 0)
				cpu = r0;
			else if (strcmp(jstr(r0, "name"), "memory") == 0)
				mem = r0;
		}
		nrt_hugepages(res, huge, sizeof(huge));
		costs[0] = '\0';
		json_array_foreach(json_object_get(z, "costs"), k, c)
			if (n < sizeof(costs))
				n += (size_t)snprintf(costs + n, sizeof(costs) - n, "%s%lld", n ? "," : "",
						      jint(c, "value"));
		table_row(t, jstr(z, "name"), cpu ? jstr(cpu, "capacity") : "-", mem ? jstr(mem, "capacity") : "-",
			  mem ? jstr(mem, "allocatable") : "-", mem ? jstr(mem, "available") : "-", huge,
			  nrt_attr(attrs, "numaorch.io/cpu-used"), nrt_attr(attrs, "numaorch.io/guests"),
			  nrt_attr(attrs, "numaorch.io/guest-memory-local"),
			  nrt_attr(attrs, "numaorch.io/guest-memory-remote"), costs[0] ? costs : "-");
	}
	table_print(t, stdout);
	json_decref(j);
	return EX_OK;
}

static void policy_text(json_t *p, char *buf, size_t sz)
{
	if (strcmp(jstr(p, "mode"), "pinned") == 0)
		snprintf(buf, sz, "pinned %s", jstr(p, "nodes"));
	else
		snprintf(buf, sz, "%s", jstr(p, "mode"));
	if (*jstr(p, "devices")) {
		size_t n = strlen(buf);

		snprintf(buf + n, sz - n, ", devices %s", jstr(p, "devices"));
	}
	if (strcmp(jstr(p, "source"), "default") != 0 && *jstr(p, "source")) {
		size_t n = strlen(buf);

		snprintf(buf + n, sz - n, " (%s)", jstr(p, "source"));
	}
}

/* GET PATH (which may hold a query already) and every page after it: the
 * agent pages its lists (1000 at a time, "next" the cursor to pass as
 * "after"); the pages' KEY arrays are joined into the first answer, whose
 * "next" is then null. On an HTTP error *OUT is that error's answer.
 * Stops with EX_FAIL after CTL_PAGES_MAX pages. */
static int call_pages(const struct opts *o, const char *path, const char *key, json_t **out)
{
	json_t *j = NULL, *page = NULL;
	char next_path[1024];
	const char *cur = path;
	unsigned pages = 0;
	int r;

	for (;;) {
		json_t *next;
		bool more;

		r = call(o, "GET", cur, NULL, &page, NULL);
		if (r) {
			json_decref(j);
			*out = page;
			return r;
		}
		next = json_object_get(page, "next");
		more = json_is_string(next);
		if (more) {
			char *e = ctl_escape(json_string_value(next));

			snprintf(next_path, sizeof(next_path), "%s%safter=%s", path, strchr(path, '?') ? "&" : "?", e);
			free(e);
			cur = next_path;
		}
		if (!j) {
			j = page;
		} else {
			json_array_extend(json_object_get(j, key), json_object_get(page, key));
			json_decref(page);
		}
		if (!more)
			break;
		if (++pages >= CTL_PAGES_MAX) {
			fprintf(stderr, "numaorchctl: GET %s: more than %u pages (the agent keeps sending \"next\"); stopped\n",
				path, CTL_PAGES_MAX);
			json_decref(j);
			*out = NULL;
			return EX_FAIL;
		}
	}
	if (json_object_get(j, "next"))
		json_object_set_new(j, "next", json_null());
	*out = j;
	return 0;
}

static int cmd_guests(const struct opts *o)
{
	char path[512] = "/v1/guests";
	const char *sep = "?";
	json_t *j, *g;
	struct table *t;
	size_t i;
	int r;

	{
		const struct { const char *k, *v; } f[] = {
			{ "kind", o->kind }, { "runtime", o->runtime }, { "node", o->node },
		};

		for (unsigned k = 0; k < 3; k++) {
			char *e;

			if (!f[k].v)
				continue;
			e = ctl_escape(f[k].v);
			snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s=%.100s", sep, f[k].k, e);
			free(e);
			sep = "&";
		}
	}
	r = call_pages(o, path, "guests", &j);
	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	t = table_new(10);
	table_row(t, "GUEST", "NAME", "KIND", "RUNTIME", "CPUS", "MEMS", "CPU", "MEMORY", "LOCAL", "POLICY");
	json_array_foreach(json_object_get(j, "guests"), i, g) {
		char cpu[16], mem[48], loc[16], pol[96];

		policy_text(json_object_get(g, "policy"), pol, sizeof(pol));
		if (jnum(g, "hugetlb_total_bytes") > 0) {
			char hb[24];

			fmt_bytes(jnum(g, "mem_total_bytes"), mem, sizeof(mem));
			fmt_bytes(jnum(g, "hugetlb_total_bytes"), hb, sizeof(hb));
			snprintf(mem + strlen(mem), sizeof(mem) - strlen(mem), " (%s huge)", hb);
		}
		table_row(t, jstr(g, "id"), jstr(g, "name"), jstr(g, "kind"), jstr(g, "runtime"), jstr(g, "cpus"), jstr(g, "mems"),
			  fmt_num(json_object_get(g, "cpu_use"), 2, cpu, sizeof(cpu)),
			  jnum(g, "hugetlb_total_bytes") > 0 ? mem : fmt_bytes(jnum(g, "mem_total_bytes"), mem, sizeof(mem)),
			  fmt_ratio(json_object_get(g, "locality"), loc, sizeof(loc)), pol);
	}
	table_print(t, stdout);
	if (json_array_size(json_object_get(j, "guests")) == 0)
		printf("(no guests)\n");
	json_decref(j);
	return EX_OK;
}

static void print_decision(json_t *d)
{
	printf("  #%lld %s %s: %s", jint(d, "id"), jstr(d, "time"), jstr(d, "decision"), jstr(d, "reason"));
	if (*jstr(d, "skip_reason"))
		printf(" [%s]", jstr(d, "skip_reason"));
	printf(" nodes %s -> %s: %s\n", jstr(json_object_get(d, "from"), "nodes"),
	       jstr(json_object_get(d, "to"), "nodes"), jstr(d, "detail"));
}

/* Whether the user's locale can show UTF-8 (sparklines). */
static bool locale_utf8(void)
{
	static int cached = -1;

	if (cached < 0) {
		setlocale(LC_CTYPE, "");
		cached = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	}
	return cached;
}

/* "history:   ▁▃▇█ 12% -> 98% over 5m 2s (21 samples)" from
 * GET /v1/guests/{id}/history; nothing when the agent has none. */
static void print_history_line(const struct opts *o, const char *id)
{
	char *path = guest_path(id, "/history"), spark[512], b1[16], b2[16], d[32];
	struct ctl_reply rep;
	json_t *j, *samples;
	double *v, span = 0;
	size_t n;

	if (ctl_request(&o->conn, "GET", path, NULL, CTL_JSON_MAX, &rep, spark, sizeof(spark)) < 0) {
		free(path);
		return;
	}
	free(path);
	j = rep.status == 200 ? json_loadb(rep.body, rep.len, 0, NULL) : NULL;
	ctl_reply_free(&rep);
	samples = json_object_get(j, "samples");
	n = json_array_size(samples);
	if (!n) {
		json_decref(j);
		return;
	}
	v = calloc(n, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++)
		v[i] = jnum(json_array_get(samples, i), "locality");
	{
		struct tm t0 = { 0 }, t1 = { 0 };
		const char *s0 = jstr(json_array_get(samples, 0), "time");
		const char *s1 = jstr(json_array_get(samples, n - 1), "time");

		if (strptime(s0, "%Y-%m-%dT%H:%M:%S", &t0) && strptime(s1, "%Y-%m-%dT%H:%M:%S", &t1))
			span = difftime(timegm(&t1), timegm(&t0));
	}
	printf("history:   %s %s -> %s over %s (%zu samples)\n",
	       fmt_spark(v, (unsigned)n, 48, locale_utf8(), spark, sizeof(spark)),
	       fmt_ratio(json_object_get(json_array_get(samples, 0), "locality"), b1, sizeof(b1)),
	       fmt_ratio(json_object_get(json_array_get(samples, n - 1), "locality"), b2, sizeof(b2)),
	       fmt_duration(span, d, sizeof(d)), n);
	free(v);
	json_decref(j);
}

static int cmd_guest(const struct opts *o, const char *id)
{
	char *path = guest_path(id, ""), b1[32], b2[16], pol[96];
	json_t *j, *mem, *v, *plan, *last;
	const char *k;
	int r = call(o, "GET", path, NULL, &j, NULL);

	free(path);
	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	policy_text(json_object_get(j, "policy"), pol, sizeof(pol));
	printf("guest:     %s\n", jstr(j, "id"));
	printf("kind:      %s (%s), name %s", jstr(j, "kind"), jstr(j, "runtime"), jstr(j, "name"));
	if (*jstr(j, "namespace"))
		printf(", namespace %s", jstr(j, "namespace"));
	printf("\n");
	printf("cgroup:    %s\n", jstr(j, "cgroup"));
	printf("threads:   %lld in %lld processes\n", jint(j, "nr_threads"), jint(j, "nr_procs"));
	printf("cpu use:   %s CPUs", fmt_num(json_object_get(j, "cpu_use"), 2, b1, sizeof(b1)));
	mem = json_object_get(j, "cpu_use_by_node");
	if (json_is_object(mem)) {
		printf(", ran on");
		json_object_foreach(mem, k, v)
			printf(" node %s %.2f;", fmt_safe(k), json_number_value(v));
	}
	printf("\n");
	printf("cpuset:    cpus %s, mems %s (CPU nodes %s)\n", jstr(j, "cpus"), jstr(j, "mems"),
	       jstr(j, "cpu_nodes"));
	printf("locality:  %s where its threads run (%s), ", fmt_ratio(json_object_get(j, "locality"), b2, sizeof(b2)),
	       jstr(j, "locality_source"));
	printf("%s of its memory inside its cpuset's nodes\n", fmt_ratio(json_object_get(j, "mem_in_cpuset"), b2, sizeof(b2)));
	mem = json_object_get(j, "mem_bytes_by_node");
	if (json_is_null(json_object_get(j, "mem_total_bytes"))) {
		printf("memory:    - (not measured: no memory.numa_stat for it)\n");
	} else {
		printf("memory:    %s:", fmt_bytes(jnum(j, "mem_total_bytes"), b1, sizeof(b1)));
		json_object_foreach(mem, k, v)
			printf(" node %s %s;", fmt_safe(k), fmt_bytes(json_number_value(v), b1, sizeof(b1)));
		printf("\n");
	}
	v = json_object_get(j, "devices");
	if (json_is_object(v) && json_is_true(json_object_get(v, "all")))
		printf("devices:   all (its device cgroup allows every device: no node)\n");
	else if (json_is_object(v))
		printf("devices:   %lld, %s%s%s\n", jint(v, "count"), *jstr(v, "nodes") ? "on nodes " : "on no node",
		       jstr(v, "nodes"),
		       json_is_true(json_object_get(v, "local"))    ? " (its CPUs there)"
		       : json_is_false(json_object_get(v, "local")) ? " (its CPUs elsewhere)"
								    : "");
	print_history_line(o, id);
	printf("policy:    %s\n", pol);
	plan = json_object_get(j, "plan");
	if (json_is_object(plan))
		printf("plan:      %s [%s%s%s] %s\n", jstr(plan, "kind"), jstr(plan, "reason"),
		       strcmp(jstr(plan, "skip"), "none") ? ", " : "",
		       strcmp(jstr(plan, "skip"), "none") ? jstr(plan, "skip") : "", jstr(plan, "detail"));
	last = json_object_get(j, "last_decision");
	if (json_is_object(last)) {
		printf("last decision:\n");
		print_decision(last);
	}
	json_decref(j);
	return EX_OK;
}

static const char *const policy_units[][2] = {
	{ "mode", "" }, { "interval", "s" }, { "locality_target", "%" }, { "cpu_headroom", "%" },
	{ "mem_headroom", "%" }, { "min_cpu", "CPUs" }, { "min_free_mib", "MiB" }, { "min_free_share", "%" },
	{ "less_busy_margin", "%" }, { "max_util", "%" }, { "rebalance_util", "%" }, { "cooldown", "s" },
	{ "max_moves", "per cycle" }, { "max_migrate_mib", "MiB per cycle" }, { "revision", "" },
};

static void print_policy(json_t *p)
{
	struct table *t = table_new(3);

	for (unsigned i = 0; i < sizeof(policy_units) / sizeof(policy_units[0]); i++) {
		json_t *v = json_object_get(p, policy_units[i][0]);
		char buf[64];

		if (!v)
			continue;
		if (json_is_string(v))
			snprintf(buf, sizeof(buf), "%s", fmt_safe(json_string_value(v)));
		else
			snprintf(buf, sizeof(buf), "%g", json_number_value(v));
		table_row(t, policy_units[i][0], buf, policy_units[i][1]);
	}
	table_print(t, stdout);
}

static int cmd_policy(const struct opts *o, int argc, char **argv)
{
	json_t *j, *body;
	int r;

	if (argc == 0 || strcmp(argv[0], "get") == 0) {
		if (argc > 1)
			return die_usage("policy get takes no arguments");
		r = call(o, "GET", "/v1/policy", NULL, &j, NULL);
		if (r || o->json)
			print_json(j);
		else
			print_policy(j);
		json_decref(j);
		return r;
	}
	if (strcmp(argv[0], "reset") == 0) {
		if (argc > 1)
			return die_usage("policy reset takes no arguments");
		r = call(o, "DELETE", "/v1/policy", NULL, &j, NULL);
		if (r || o->json) {
			print_json(j);
		} else {
			printf("%s; the configuration file's settings apply %s\n",
			       json_is_true(json_object_get(j, "dropped")) ? "settings changed through the API dropped"
									 : "no settings changed through the API",
			       jstr(j, "applies"));
			print_policy(json_object_get(j, "policy"));
		}
		json_decref(j);
		return r;
	}
	if (strcmp(argv[0], "set") != 0)
		return die_usage("policy: expected get, set or reset, got \"%s\"", argv[0]);
	if (argc < 2)
		return die_usage("policy set needs KEY=VALUE arguments, e.g. max_util=85 cooldown=600");
	body = json_object();
	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '='), *end;
		char key[64];
		double d;
		long long ll;

		if (!eq || eq == argv[i] || !eq[1] || (size_t)(eq - argv[i]) >= sizeof(key)) {
			json_decref(body);
			return die_usage("policy set: expected KEY=VALUE, got \"%s\"", argv[i]);
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[i]), argv[i]);
		/* Numbers go as numbers (the server checks each key's type and
		 * range); anything else as a string (mode, revision). */
		errno = 0;
		ll = strtoll(eq + 1, &end, 10);
		if (!*end && !errno) {
			json_object_set_new(body, key, json_integer(ll));
			continue;
		}
		d = strtod(eq + 1, &end);
		if (!*end && isfinite(d))
			json_object_set_new(body, key, json_real(d));
		else
			json_object_set_new(body, key, json_string(eq + 1));
	}
	r = call(o, "PUT", "/v1/policy", body, &j, NULL);
	json_decref(body);
	if (r || o->json) {
		print_json(j);
	} else {
		printf("changed: %s (applies %s; %s)\n", jstr(j, "changed"), jstr(j, "applies"),
		       json_is_true(json_object_get(j, "persisted")) ? "kept across reloads and restarts"
								: "until the next reload: no state directory");
		print_policy(json_object_get(j, "policy"));
	}
	json_decref(j);
	return r;
}

static void print_gpol(json_t *p)
{
	char pol[96];

	policy_text(p, pol, sizeof(pol));
	printf("%s: %s", jstr(p, "guest"), pol);
	if (*jstr(p, "set"))
		printf(", set %s", jstr(p, "set"));
	printf("%s\n", json_is_false(json_object_get(p, "present")) ?
	       " (the guest is not on this host now: the policy applies when it appears)" : "");
}

static int cmd_guest_policy(const struct opts *o, int argc, char **argv)
{
	const char *id = argv[0], *devices = NULL;
	char *path = guest_path(id, "/policy");
	json_t *j = NULL, *body = NULL;
	int r = EX_OK;

	/* A last word devices=prefer|require|ignore goes with the mode. */
	if (argc > 2 && strncmp(argv[argc - 1], "devices=", 8) == 0)
		devices = argv[--argc] + 8;
	if (argc == 1) {
		r = call(o, "GET", path, NULL, &j, NULL);
	} else if (strcmp(argv[1], "clear") == 0 && argc == 2) {
		r = call(o, "DELETE", path, NULL, &j, NULL);
		if (!r && !o->json)
			printf("%s: per-guest policy cleared; the global policy applies from the next cycle\n", id);
		free(path);
		json_decref(j);
		return r;
	} else if ((strcmp(argv[1], "auto") == 0 || strcmp(argv[1], "ignore") == 0) && argc == 2) {
		body = json_pack("{s:s}", "mode", argv[1]);
	} else if (strcmp(argv[1], "pinned") == 0 && argc == 3) {
		body = json_pack("{s:s, s:s}", "mode", "pinned", "nodes", argv[2]);
	} else {
		free(path);
		return die_usage("guest-policy ID [auto | ignore | clear | pinned NODES] [devices=prefer|require|ignore]");
	}
	if (body) {
		if (o->provision)
			json_object_set_new(body, "provision", json_true());
		if (devices)
			json_object_set_new(body, "devices", json_string(devices));
		r = call(o, "PUT", path, body, &j, NULL);
		json_decref(body);
	}
	free(path);
	if (r || o->json)
		print_json(j);
	else
		print_gpol(j);
	json_decref(j);
	return r;
}

static int cmd_guest_policies(const struct opts *o)
{
	json_t *j = NULL, *p;
	struct table *t;
	size_t i;
	int r;

	r = call_pages(o, "/v1/guest-policies", "policies", &j);
	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	t = table_new(5);
	table_row(t, "GUEST", "MODE", "NODES", "SET", "PRESENT");
	json_array_foreach(json_object_get(j, "policies"), i, p)
		table_row(t, jstr(p, "guest"), jstr(p, "mode"), jstr(p, "nodes"), jstr(p, "set"),
			  json_is_true(json_object_get(p, "present")) ? "yes" : "no");
	table_print(t, stdout);
	if (!json_array_size(json_object_get(j, "policies")))
		printf("(none: every guest follows the global policy)\n");
	json_decref(j);
	return EX_OK;
}

/* migrations: the mover's jobs; migrations cancel ID: DELETE one. */
static int cmd_migrations(const struct opts *o, int argc, char **argv)
{
	json_t *j, *m;
	struct table *t;
	size_t i;
	unsigned nwrite = 0;
	int r;

	if (argc == 2 && strcmp(argv[0], "cancel") == 0) {
		char path[96];

		if (strspn(argv[1], "0123456789") != strlen(argv[1]) || !argv[1][0] || strlen(argv[1]) > 20)
			return die_usage("migrations cancel: ID must be a job number, got \"%s\"", argv[1]);
		snprintf(path, sizeof(path), "/v1/migrations/%s", argv[1]);
		r = call(o, "DELETE", path, NULL, &j, NULL);
		if (r || o->json)
			print_json(j);
		else
			printf("migration %s: %s (it stops at its next chunk)\n", argv[1], jstr(j, "state"));
		json_decref(j);
		return r;
	}
	if (argc != 0)
		return die_usage("migrations [cancel ID]");
	r = call(o, "GET", "/v1/migrations", NULL, &j, NULL);
	if (r || o->json) {
		print_json(j);
		json_decref(j);
		return r;
	}
	t = table_new(10);
	table_row(t, "ID", "GUEST", "FROM", "TO", "STATE", "DONE MiB", "LEFT MiB", "MiB/s", "STARTED", "ETA s");
	json_array_foreach(json_object_get(j, "migrations"), i, m) {
		char id[24], done[32], left[32], rate[32], eta[32];
		/* A start binding's write: the kernel moves the pages inside
		 * it, and the job counts none of them. */
		bool write = strcmp(jstr(m, "how"), "cpuset_write") == 0;

		nwrite += write;
		snprintf(id, sizeof(id), "%lld%s", jint(m, "id"), write ? "*" : "");
		table_row(t, id, jstr(m, "guest"), jstr(m, "from"), jstr(m, "to"), jstr(m, "state"),
			  write ? "-" : fmt_num(json_object_get(m, "done_mib"), 1, done, sizeof(done)),
			  write ? "-" : fmt_num(json_object_get(m, "left_mib"), 1, left, sizeof(left)),
			  write ? "-" : fmt_num(json_object_get(m, "rate_mib_s"), 0, rate, sizeof(rate)),
			  *jstr(m, "started") ? jstr(m, "started") : "-",
			  fmt_num(json_object_get(m, "eta_s"), 1, eta, sizeof(eta)));
	}
	table_print(t, stdout);
	if (nwrite)
		printf("(*: a start binding's cpuset.mems write; the kernel moves what the guest touched inside it, "
		       "uncounted)\n");
	if (!json_is_true(json_object_get(j, "mover")))
		printf("(no memory mover: [memory] mover = no, or no NUMA API; memory moves by cpuset.mems writes)\n");
	else if (!json_array_size(json_object_get(j, "migrations")))
		printf("(no migration since the agent started)\n");
	json_decref(j);
	return EX_OK;
}

static int cmd_rebalance(const struct opts *o)
{
	json_t *body = json_pack("{s:b, s:b}", "dry_run", o->dry_run, "verbose", o->verbose);
	json_t *j, *items, *res, *s, *x;
	size_t i;
	int r = call(o, "POST", "/v1/rebalance", body, &j, NULL);

	json_decref(body);
	if (r) {
		json_decref(j);
		return r;
	}
	s = json_object_get(j, "summary");
	if (o->json) {
		print_json(j);
	} else {
		printf("cycle #%lld%s in %.1f ms: %lld move%s planned, %lld moved, %lld failed, %lld skipped\n",
		       jint(j, "seq"), json_is_true(json_object_get(j, "applied")) ? "" : " (nothing written)",
		       jnum(j, "duration_s") * 1e3, jint(s, "planned_moves"),
		       jint(s, "planned_moves") == 1 ? "" : "s", jint(s, "moved"), jint(s, "failed"),
		       jint(s, "skipped"));
		items = json_object_get(json_object_get(j, "plan"), "items");
		res = json_object_get(j, "results");
		json_array_foreach(items, i, x) {
			const char *kind = jstr(x, "kind");
			size_t k;
			json_t *y;

			printf("  %-8s %s [%s] %s", kind, jstr(x, "guest"),
			       strcmp(kind, "skip") == 0 ? jstr(x, "skip") : jstr(x, "reason"), jstr(x, "detail"));
			json_array_foreach(res, k, y)
				if (strcmp(jstr(y, "guest"), jstr(x, "guest")) == 0)
					printf(" => %s: %s", jstr(y, "outcome"), jstr(y, "message"));
			printf("\n");
		}
		if (!json_is_object(json_object_get(j, "plan")))
			printf("  (mode off: nothing decided)\n");
	}
	r = jint(s, "failed") > 0 ? EX_NEGATIVE : EX_OK;
	json_decref(j);
	return r;
}

/* "30s", "10m", "2h", "1d" ago → an RFC 3339 UTC time in BUF, *OUT
 * pointing at it; others as given. -ERANGE when an AGO is negative, not
 * finite or reaches back before 1970 (time_t arithmetic would make a
 * garbage date of it). */
static int since_param(const char *s, char *buf, size_t sz, const char **out)
{
	char *end;
	double v = strtod(s, &end);
	double mult = 0;
	time_t t, now = time(NULL);
	struct tm tm;

	if (end != s && end[0] && !end[1]) {
		switch (end[0]) {
		case 's': mult = 1; break;
		case 'm': mult = 60; break;
		case 'h': mult = 3600; break;
		case 'd': mult = 86400; break;
		}
	}
	if (!mult) {
		*out = s;
		return 0;
	}
	if (!(v >= 0 && v * mult <= (double)now))
		return -ERANGE;
	t = now - (time_t)(v * mult);
	if (!gmtime_r(&t, &tm))
		return -ERANGE;
	strftime(buf, sz, "%Y-%m-%dT%H:%M:%SZ", &tm);
	*out = buf;
	return 0;
}

static void print_decisions(const struct opts *o, json_t *arr)
{
	size_t i;
	json_t *d;

	json_array_foreach(arr, i, d) {
		if (o->json) {
			/* One record per line, as the decision log file has them. */
			fmt_json_print(stdout, d, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
			continue;
		}
		if (strcmp(jstr(d, "decision"), "cycle") == 0) {
			json_t *w = json_object_get(json_object_get(d, "engine_time"), "wall_s");
			json_t *c = json_object_get(json_object_get(d, "engine_time"), "cpu_s");

			printf("#%lld %s cycle %lld: engine thread %.1f ms (acquire %.1f, decide %.1f, apply %.1f, "
			       "record %.1f), CPU %.1f ms\n", jint(d, "id"), jstr(d, "time"), jint(d, "cycle"),
			       json_number_value(json_object_get(w, "total")) * 1e3,
			       json_number_value(json_object_get(w, "acquire")) * 1e3,
			       json_number_value(json_object_get(w, "decide")) * 1e3,
			       json_number_value(json_object_get(w, "apply")) * 1e3,
			       json_number_value(json_object_get(w, "record")) * 1e3,
			       json_number_value(json_object_get(c, "total")) * 1e3);
			continue;
		}
		printf("#%lld %s %s %s %s", jint(d, "id"), jstr(d, "time"), jstr(d, "guest"), jstr(d, "decision"),
		       *jstr(d, "skip_reason") ? jstr(d, "skip_reason") : jstr(d, "reason"));
		printf(" nodes %s -> %s: %s", jstr(json_object_get(d, "from"), "nodes"),
		       jstr(json_object_get(d, "to"), "nodes"), jstr(d, "detail"));
		if (*jstr(d, "outcome"))
			printf(" => %s", jstr(d, "message"));
		printf("\n");
	}
	fflush(stdout);
	/* --follow prints for as long as it runs: keep no escaped copy */
	fmt_safe_release();
}

static char *decisions_path(const char *since, const char *guest, const char *limit)
{
	char *path = malloc(1024);
	const char *sep = "?";
	const struct { const char *k, *v; } f[] = { { "since", since }, { "guest", guest }, { "limit", limit } };

	if (!path)
		abort();
	snprintf(path, 1024, "/v1/decisions");
	for (unsigned k = 0; k < 3; k++) {
		char *e;

		if (!f[k].v)
			continue;
		e = ctl_escape(f[k].v);
		snprintf(path + strlen(path), 1024 - strlen(path), "%s%s=%.300s", sep, f[k].k, e);
		free(e);
		sep = "&";
	}
	return path;
}

static int cmd_decisions(const struct opts *o)
{
	char tb[40], *path;
	const char *since = NULL;
	json_t *j;
	int r;

	if (o->since && since_param(o->since, tb, sizeof(tb), &since) < 0)
		return die_usage("decisions --since: AGO must be 0 or more s, m, h or d, back to 1970 at most, "
				 "got \"%s\"", o->since);
	path = decisions_path(since, o->guest, o->limit);
	r = call(o, "GET", path, NULL, &j, NULL);
	free(path);
	if (r) {
		json_decref(j);
		return r;
	}
	if (o->json && !o->follow)
		print_json(j);
	else
		print_decisions(o, json_object_get(j, "decisions"));
	/* "None yet" only when the agent says it has recorded none (last_id
	 * 0): a record the query did not return is still one recorded. */
	if (!o->json && !o->follow && !json_array_size(json_object_get(j, "decisions"))) {
		if (jint(j, "last_id") > 0)
			printf("(no decisions match; the newest recorded is #%lld)\n", jint(j, "last_id"));
		else
			printf("(no decisions recorded since the agent started; its decision log file, if set, "
			       "has earlier runs')\n");
	}
	/* --follow: page forward from the newest id seen, like tail -f. */
	while (o->follow) {
		char last[32];

		snprintf(last, sizeof(last), "%lld", jint(j, "last_id"));
		json_decref(j);
		sleep(1);
		path = decisions_path(last, o->guest, "1000");
		r = call(o, "GET", path, NULL, &j, NULL);
		free(path);
		if (r) {
			json_decref(j);
			return r;
		}
		print_decisions(o, json_object_get(j, "decisions"));
	}
	json_decref(j);
	return EX_OK;
}

/* Sizes numaorchctl sends at most: 1 EiB, far above any host and far
 * below where a double stops converting to an integer. */
#define MIB_MAX (1LL << 40)

/* MiB, or a number with K/M/G/T (binary) and an optional "iB"/"B";
 * -ERANGE above MIB_MAX. */
static int parse_mib(const char *s, long long *out)
{
	char *end;
	double v = strtod(s, &end), mult = 1.0 / 1024; /* in MiB per unit */

	if (end == s || v < 0 || !isfinite(v))
		return -1;
	switch (*end) {
	case '\0': mult = 1; break;
	case 'k': case 'K': mult = 1.0 / 1024; end++; break;
	case 'm': case 'M': mult = 1; end++; break;
	case 'g': case 'G': mult = 1024; end++; break;
	case 't': case 'T': mult = 1024.0 * 1024; end++; break;
	default: return -1;
	}
	if (*end && strcasecmp(end, "ib") != 0 && strcasecmp(end, "b") != 0)
		return -1;
	if (ceil(v * mult) > (double)MIB_MAX)
		return -ERANGE;
	*out = (long long)ceil(v * mult);
	return 0;
}

/* advise --device ARG: a node id, or a PCI function whose node sysfs
 * gives (under $NUMAORCH_SYSFS, /sys by default: the device is on this
 * host, where the CLI runs). A function without a node (-1) weighs
 * nothing: said, not an error. 0, or EX_USAGE having said why. */
static int device_node(const char *arg, uint64_t *nodes)
{
	const char *sys = getenv("NUMAORCH_SYSFS");
	char path[512], buf[32], *end;
	long v;
	FILE *f;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end != arg && !*end && !errno) {
		if (v < 0 || v >= 64)
			return die_usage("--device: a node id must be 0..63, got \"%s\"", arg);
		*nodes |= 1ULL << v;
		return 0;
	}
	if (strlen(arg) != 12 || arg[4] != ':' || arg[7] != ':' || arg[10] != '.' || strchr(arg, '/'))
		return die_usage("--device: must be a PCI address such as 0000:3b:00.1 or a node id, got \"%s\"", arg);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node", sys && *sys ? sys : "/sys", arg);
	f = fopen(path, "re");
	if (!f)
		return die_usage("--device %s: cannot read %s: %s", arg, path, strerror(errno));
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return die_usage("--device %s: %s is empty", arg, path);
	}
	fclose(f);
	v = strtol(buf, &end, 10);
	if (end == buf || v >= 64)
		return die_usage("--device %s: %s holds \"%.16s\", not a node", arg, path, buf);
	if (v < 0) {
		fprintf(stderr, "numaorchctl: --device %s: the firmware gives it no NUMA node; not weighed\n", arg);
		return 0;
	}
	*nodes |= 1ULL << v;
	return 0;
}

static int cmd_advise(const struct opts *o, const char *vcpus, const char *memory)
{
	char *end;
	long long nv, mib;
	json_t *body, *j, *res;
	int r;

	errno = 0;
	nv = strtoll(vcpus, &end, 10);
	if (end == vcpus || *end || errno || nv < 1 || nv > INT_MAX)
		return die_usage("advise: VCPUS must be an integer 1..%d, got \"%s\"", INT_MAX, vcpus);
	r = parse_mib(memory, &mib);
	if (r == -ERANGE)
		return die_usage("advise: MEMORY must be at most %lld MiB (1 EiB), got \"%s\"", MIB_MAX, memory);
	if (r < 0)
		return die_usage("advise: MEMORY must be MiB or a size such as 512M or 4G, got \"%s\"", memory);
	body = json_pack("{s:I, s:I}", "vcpus", (json_int_t)nv, "memory_mib", (json_int_t)mib);
	if (o->reserve > 0)
		json_object_set_new(body, "reserve_seconds", json_real(o->reserve));
	if (o->label)
		json_object_set_new(body, "label", json_string(o->label));
	if (o->dev_nodes) {
		json_t *a = json_array();

		for (unsigned n = 0; n < 64; n++)
			if (o->dev_nodes & (1ULL << n))
				json_array_append_new(a, json_integer(n));
		json_object_set_new(body, "device_nodes", a);
	}
	if (o->devices)
		json_object_set_new(body, "devices", json_string(o->devices));
	if (o->busy_threads)
		json_object_set_new(body, "busy_threads", json_integer(o->busy_threads));
	r = call(o, "POST", "/v1/placements", body, &j, NULL);
	json_decref(body);
	if (r) {
		json_decref(j);
		return r;
	}
	if (o->json) {
		print_json(j);
	} else if (json_is_true(json_object_get(j, "ok"))) {
		printf("nodes %s (cpus %s, memory on %s): %s\n", jstr(j, "nodes"), jstr(j, "cpus"), jstr(j, "mems"),
		       jstr(j, "detail"));
		res = json_object_get(j, "reservation");
		if (json_is_object(res))
			printf("reserved for %g s (reservation %lld)\n", jnum(res, "seconds"), jint(res, "id"));
	} else {
		/* The agent's detail says "nothing fits: ..." itself. */
		printf("%s\n", *jstr(j, "detail") ? jstr(j, "detail") : "nothing fits");
	}
	r = json_is_true(json_object_get(j, "ok")) ? EX_OK : EX_NEGATIVE;
	json_decref(j);
	return r;
}

static int cmd_event(const struct opts *o, const char *event, const char *domain)
{
	json_t *body = json_pack("{s:s, s:s, s:s}", "source", o->source ? o->source : "numaorchctl",
				 "event", event, "domain", domain);
	json_t *j;
	int r;

	if (o->uuid)
		json_object_set_new(body, "uuid", json_string(o->uuid));
	r = call(o, "POST", "/v1/events", body, &j, NULL);
	json_decref(body);
	if (!r && o->json)
		print_json(j);
	else if (!r)
		printf("accepted: the agent runs a cycle now\n");
	json_decref(j);
	return r;
}

/* Exit 0 only when ready (the first cycle has published a snapshot), 7
 * while starting: readiness probes (Kubernetes, scripts) can use it as is. */
static int cmd_health(const struct opts *o)
{
	json_t *j;
	int r = call(o, "GET", "/v1/health", NULL, &j, NULL);
	bool ready = !r && json_is_true(json_object_get(j, "ready"));

	if (!r && o->json)
		print_json(j);
	else if (!r)
		printf("%s (%s)\n", jstr(j, "status"), ready ? "ready" : "starting: first cycle not done");
	json_decref(j);
	if (!r && !ready)
		r = EX_UNAVAILABLE;
	return r;
}

static int cmd_metrics(const struct opts *o)
{
	struct ctl_reply raw;
	json_t *j = NULL;
	int r = call(o, "GET", "/metrics", NULL, &j, &raw);

	json_decref(j);
	if (r)
		return r;
	/* as served, but no byte that drives a terminal */
	fmt_safe_write(stdout, raw.body, raw.len, true);
	ctl_reply_free(&raw);
	return EX_OK;
}

static char *read_token(const char *path)
{
	char buf[4200], err[512];
	char *t;

	if (ctl_read_token(path, buf, sizeof(buf), err, sizeof(err)) < 0) {
		fprintf(stderr, "numaorchctl: %s\n", err);
		return NULL;
	}
	t = strdup(buf);
	memset(buf, 0, sizeof(buf));
	return t;
}

/* numaorchctl's long options without a short form. */
enum { O_CACERT = 256, O_TIMEOUT, O_DRY, O_VERBOSE, O_SINCE, O_GUEST, O_LIMIT, O_KIND, O_RUNTIME,
       O_NODE, O_RESERVE, O_LABEL, O_UUID, O_SOURCE, O_FOLLOW, O_ONCE, O_DELAY, O_SORT,
       O_PROVISION, O_DEVICE, O_DEVICES, O_BUSY_THREADS };

/* What parse_option returns to go on; anything else is the exit code. */
#define GO_ON (-1)

/* One option C (getopt_long's) with its argument ARG into O (and the
 * token file into *TOKEN_FILE). */
static int parse_option(struct opts *o, const char **token_file, int c, char *arg)
{
	char *end;
	double d;
	long l;

	switch (c) {
	case 's': o->conn.socket = arg; o->conn.url = NULL; break;
	case 'u': o->conn.url = arg; break;
	case 't': *token_file = arg; break;
	case O_CACERT: o->conn.cacert = arg; break;
	case 'j': o->json = true; break;
	case O_TIMEOUT:
		d = strtod(arg, &end);
		if (end == arg || *end || !(d > 0 && d <= 86400))
			return die_usage("--timeout: must be seconds, more than 0 and at most 86400, got \"%s\"", arg);
		/* Up to a whole ms: libcurl reads 0 ms as no time-out at all. */
		o->conn.timeout_ms = (long)ceil(d * 1000);
		break;
	case O_DRY: o->dry_run = true; break;
	case O_PROVISION: o->provision = true; break;
	case O_VERBOSE: o->verbose = true; break;
	case O_SINCE: o->since = arg; break;
	case O_GUEST: o->guest = arg; break;
	case O_LIMIT: o->limit = arg; break;
	case O_KIND: o->kind = arg; break;
	case O_RUNTIME: o->runtime = arg; break;
	case O_NODE: o->node = arg; break;
	case O_RESERVE:
		d = strtod(arg, &end);
		if (*end || !(d > 0 && d <= 86400))
			return die_usage("--reserve: must be seconds 0..86400, got \"%s\"", arg);
		o->reserve = d;
		break;
	case O_LABEL: o->label = arg; break;
	case O_DEVICE:
		if (device_node(arg, &o->dev_nodes))
			return EX_USAGE;
		break;
	case O_BUSY_THREADS:
		errno = 0;
		l = strtol(arg, &end, 10);
		if (end == arg || *end || errno || l < 1 || l > 8192)
			return die_usage("--busy-threads: must be an integer 1..8192, got \"%s\"", arg);
		o->busy_threads = l;
		break;
	case O_DEVICES:
		if (strcmp(arg, "prefer") && strcmp(arg, "require") && strcmp(arg, "ignore"))
			return die_usage("--devices: must be prefer, require or ignore, got \"%s\"", arg);
		o->devices = arg;
		break;
	case O_UUID: o->uuid = arg; break;
	case O_SOURCE: o->source = arg; break;
	case O_FOLLOW: o->follow = true; break;
	case O_ONCE: o->top.once = true; break;
	case O_DELAY:
		d = strtod(arg, &end);
		if (*end || !(d >= 0.1 && d <= 3600))
			return die_usage("--delay: must be seconds 0.1..3600, got \"%s\"", arg);
		o->top.delay_s = d;
		break;
	case O_SORT: o->top.sort = arg; break;
	case 'V': printf("numaorchctl %s\n", NUMAORCH_VERSION); return EX_OK;
	case 'h': usage(stdout); return EX_OK;
	default: usage(stderr); return EX_USAGE;
	}
	return GO_ON;
}

/* Command CMD with its N arguments ARGS; the exit code. */
static int run_command(struct opts *o, const char *cmd, int n, char **args)
{
#define NARGS(lo, hi, what) \
	if (n < (lo) || n > (hi)) return die_usage("%s: %s", cmd, what)
	if (strcmp(cmd, "status") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_status(o);
	} else if (strcmp(cmd, "nodes") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_nodes(o);
	} else if (strcmp(cmd, "topology") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_topology(o);
	} else if (strcmp(cmd, "guests") == 0) {
		NARGS(0, 0, "takes no arguments (filters: --kind, --runtime, --node)");
		return cmd_guests(o);
	} else if (strcmp(cmd, "guest") == 0) {
		NARGS(1, 1, "needs a guest ID (see numaorchctl guests)");
		return cmd_guest(o, args[0]);
	} else if (strcmp(cmd, "policy") == 0) {
		return cmd_policy(o, n, args);
	} else if (strcmp(cmd, "schedule") == 0) {
		return cmd_schedule(o, n, args);
	} else if (strcmp(cmd, "guest-policy") == 0) {
		NARGS(1, 3, "guest-policy ID [auto | ignore | clear | pinned NODES]");
		return cmd_guest_policy(o, n, args);
	} else if (strcmp(cmd, "guest-policies") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_guest_policies(o);
	} else if (strcmp(cmd, "rebalance") == 0) {
		NARGS(0, 0, "takes no arguments (options: --dry-run, --verbose)");
		return cmd_rebalance(o);
	} else if (strcmp(cmd, "decisions") == 0) {
		NARGS(0, 0, "takes no arguments (options: --since, --guest, --limit, --follow)");
		return cmd_decisions(o);
	} else if (strcmp(cmd, "advise") == 0) {
		NARGS(2, 2, "needs VCPUS and MEMORY, e.g. advise 4 8G");
		return cmd_advise(o, args[0], args[1]);
	} else if (strcmp(cmd, "event") == 0) {
		NARGS(2, 2, "needs EVENT and DOMAIN, e.g. event started vm1");
		return cmd_event(o, args[0], args[1]);
	} else if (strcmp(cmd, "top") == 0) {
		NARGS(0, 0, "takes no arguments (options: --once, --delay, --sort)");
		return ctl_top(&o->conn, &o->top);
	} else if (strcmp(cmd, "health") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_health(o);
	} else if (strcmp(cmd, "metrics") == 0) {
		NARGS(0, 0, "takes no arguments");
		return cmd_metrics(o);
	} else if (strcmp(cmd, "migrations") == 0) {
		NARGS(0, 2, "migrations [cancel ID]");
		return cmd_migrations(o, n, args);
	}
#undef NARGS
	return die_usage("unknown command \"%s\"", cmd);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "url", required_argument, NULL, 'u' },
		{ "token-file", required_argument, NULL, 't' },
		{ "cacert", required_argument, NULL, O_CACERT },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "dry-run", no_argument, NULL, O_DRY },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "since", required_argument, NULL, O_SINCE },
		{ "guest", required_argument, NULL, O_GUEST },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "kind", required_argument, NULL, O_KIND },
		{ "runtime", required_argument, NULL, O_RUNTIME },
		{ "node", required_argument, NULL, O_NODE },
		{ "reserve", required_argument, NULL, O_RESERVE },
		{ "label", required_argument, NULL, O_LABEL },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "devices", required_argument, NULL, O_DEVICES },
		{ "busy-threads", required_argument, NULL, O_BUSY_THREADS },
		{ "uuid", required_argument, NULL, O_UUID },
		{ "source", required_argument, NULL, O_SOURCE },
		{ "follow", no_argument, NULL, O_FOLLOW },
		{ "once", no_argument, NULL, O_ONCE },
		{ "delay", required_argument, NULL, O_DELAY },
		{ "sort", required_argument, NULL, O_SORT },
		{ "provision", no_argument, NULL, O_PROVISION },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .conn = { .timeout_ms = 30000 } };
	const char *token_file = getenv("NUMAORCH_TOKEN_FILE");
	char *token = NULL;
	int c, r;

	o.conn.socket = getenv("NUMAORCH_SOCKET") ? getenv("NUMAORCH_SOCKET") : DEFAULT_SOCKET;
	o.conn.url = getenv("NUMAORCH_URL");
	if (o.conn.url && !*o.conn.url)
		o.conn.url = NULL;
	while ((c = getopt_long(argc, argv, "s:u:t:jVh", lopts, NULL)) != -1)
		if ((r = parse_option(&o, &token_file, c, optarg)) != GO_ON)
			return r;
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	if (o.conn.url) {
		if (strncmp(o.conn.url, "http://", 7) != 0 && strncmp(o.conn.url, "https://", 8) != 0)
			return die_usage("--url: must start with http:// or https://, got \"%s\"", o.conn.url);
		if (token_file) {
			token = read_token(token_file);
			if (!token)
				return EX_USAGE;
			o.conn.token = token;
		}
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = run_command(&o, argv[optind], argc - optind - 1, argv + optind + 1);
	curl_global_cleanup();
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
	return r;
}
