/* numaorchd — the numaorch node agent.
 *
 * Exit codes: 0 success; 1 runtime failure; 2 bad usage or configuration;
 * 3 (--once) a move was attempted and failed.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquire.h"
#include "topo.h"
#include "cgwatch.h"
#include "../api/api.h"
#include "../api/httpd.h"
#include "../orchestrator/actuator/apply.h"
#include "../orchestrator/store/config.h"
#include "../orchestrator/engine/engine.h"
#include "../orchestrator/store/engstate.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/store/gpolstore.h"
#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/base/numamig.h"
#include "../orchestrator/store/setoverlay.h"
#include "../orchestrator/model/snapjson.h"
#include "../orchestrator/base/utf8.h"
#include "../orchestrator/actuator/vmplugin.h"
#include "../policies/policies.h"

#ifndef NUMAORCH_VERSION
#define NUMAORCH_VERSION "0.1.0"
#endif
#define DEFAULT_CONFIG "/etc/numaorch/numaorchd.conf"
#define ENGINE_NICE 5

/* Command-line settings, re-applied on top of the file at every reload. */
struct cli {
	const char *config;
	bool config_given;
	bool once, dry_run, check_config, json;
	const char *root;
	const char *sysfs, *procfs, *cgroupfs; /* single-root overrides */
	double interval;          /* NAN: not given */
	const char *decision_log;
	const char *log_level;
	const char *mode;
	unsigned nr_scopes;
	char **scopes;
	unsigned nr_parents;
	char **parents;
	/* REST API and state; NULL: not given */
	const char *socket, *socket_group, *listen, *token_file, *tls_cert, *tls_key;
	const char *state_dir;
	bool list_routes;
};

/* systemd sets JOURNAL_STREAM=DEV:INODE of the stream it connected to
 * stderr; a child with stderr redirected elsewhere inherits the variable,
 * so compare (sd_journal_stream_fd(3), "JOURNAL_STREAM" in systemd.exec(5)). */
/* The parts the engine runs on: main is the only file that knows both
 * the sources (agents/) and the policies (policies/); the core sees them
 * through these interfaces (orchestrator/model/source.h, policy.h). */
static const struct policy_ops consolidate_policy = {
	.decide = policy_decide_reserved,
	.advise = policy_advise,
};
static const struct engine_parts daemon_parts = { .sources = &acquire_host_ops, .policy = &consolidate_policy };

static bool stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!v || sscanf(v, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: numaorchd [OPTIONS]\n"
		"Keep every container and VM on the fewest, least-busy NUMA nodes that fit it.\n\n"
		"  -c, --config FILE        configuration file (default " DEFAULT_CONFIG " if present)\n"
		"      --check-config       validate the configuration, print \"configuration OK\", exit\n"
		"      --once               run one cycle, report, exit\n"
		"  -n, --dry-run            decide and report, write nothing\n"
		"      --json               with --once: print the snapshot and plan as JSON\n"
		"  -i, --interval SECONDS   time between cycles\n"
		"  -s, --scope CGROUP       only discover and touch guests under this cgroup (repeatable)\n"
		"  -p, --parent CGROUP      every child of this cgroup is a guest (repeatable)\n"
		"      --mode MODE          enforce, advise or off\n"
		"  -r, --root DIR           read the host from a fixture tree (DIR/sys, DIR/proc, ...)\n"
		"      --sysfs DIR          read sysfs here instead of /sys (host trees mounted in a\n"
		"      --procfs DIR         container; tests); writes stay live unless --root is given\n"
		"      --cgroupfs DIR\n"
		"      --decision-log FILE  append one JSON record per decision\n"
		"      --state-dir DIR      where per-guest policies persist (default /var/lib/numaorch)\n"
		"      --socket PATH        REST API unix socket (default /run/numaorch/api.sock; \"\": none)\n"
		"      --socket-group GROUP group of the socket (default: numaorch if it exists)\n"
		"      --listen ADDR:PORT   also serve the API on TCP (needs --token-file)\n"
		"      --token-file FILE    bearer token for TCP clients (not readable by others)\n"
		"      --tls-cert FILE      serve TCP over TLS with this PEM certificate ...\n"
		"      --tls-key FILE       ... and key\n"
		"      --list-routes        print the API's routes (METHOD PATH) and exit\n"
		"  -l, --log-level LEVEL    error, warn, info or debug\n"
		"  -V, --version            print the version\n"
		"  -h, --help               this text\n");
}

static int apply_cli(const struct cli *cli, struct agent_config *c, char *err, size_t errsz)
{
	if (!isnan(cli->interval))
		c->interval_s = cli->interval;
	if (cli->dry_run)
		c->dry_run = true;
	if (cli->decision_log) {
		free(c->decision_log);
		c->decision_log = xstrdup(cli->decision_log);
	}
	if (cli->log_level && log_level_parse(cli->log_level, &c->log_level) < 0) {
		snprintf(err, errsz, "--log-level: must be error, warn, info or debug, got \"%s\"", cli->log_level);
		return -EINVAL;
	}
	if (cli->mode && agent_mode_parse(cli->mode, &c->mode) < 0) {
		snprintf(err, errsz, "--mode: must be enforce, advise or off, got \"%s\"", cli->mode);
		return -EINVAL;
	}
	if (cli->nr_scopes) {
		strv_free(&c->cg.nr_scopes, &c->cg.scopes);
		for (unsigned i = 0; i < cli->nr_scopes; i++)
			strv_push(&c->cg.nr_scopes, &c->cg.scopes, cli->scopes[i]);
	}
	for (unsigned i = 0; i < cli->nr_parents; i++)
		strv_push(&c->cg.nr_parents, &c->cg.parents, cli->parents[i]);
	{
		const struct { const char *v; char **dst; } ov[] = {
			{ cli->socket, &c->api_socket }, { cli->listen, &c->api_listen },
			{ cli->token_file, &c->api_token_file }, { cli->tls_cert, &c->api_tls_cert },
			{ cli->tls_key, &c->api_tls_key }, { cli->state_dir, &c->state_dir },
		};

		for (unsigned i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
			if (!ov[i].v)
				continue;
			free(*ov[i].dst);
			/* "" disables the socket; for the others it means "none". */
			*ov[i].dst = *ov[i].v || ov[i].dst == &c->api_socket ? xstrdup(ov[i].v) : NULL;
		}
	}
	if (c->state_dir && c->state_dir[0] != '/') {
		snprintf(err, errsz, "--state-dir: must be an absolute path, got \"%s\"", c->state_dir);
		return -EINVAL;
	}
	return config_validate(c, err, errsz);
}

/* File (or defaults) + command line → a new config; NULL on error. */
static struct agent_config *load_config(const struct cli *cli, char *err, size_t errsz)
{
	struct agent_config *c = xcalloc(1, sizeof(*c));
	int r;

	if (cli->config) {
		r = config_load(cli->config, c, err, errsz);
		if (r < 0) {
			free(c);
			return NULL;
		}
	} else {
		config_default(c);
	}
	if (apply_cli(cli, c, err, errsz) < 0) {
		config_free(c);
		return NULL;
	}
	return c;
}

/* load_config, with the settings changed through the API (setoverlay.h)
 * laid over the file and the command line: the operator's newest word
 * wins, at start and at every reload. A settings file that cannot be read
 * or no longer fits the configuration is left out, loudly: the agent then
 * runs on the file's settings rather than not at all. */
static struct agent_config *load_config_and_settings(const struct cli *cli, const char *state_dir, char *err,
						     size_t errsz)
{
	struct agent_config *c = load_config(cli, err, errsz), *o;
	json_t *set = NULL, *v;
	const char *k;
	char why[600], keys[400] = "";
	size_t n = 0;

	/* STATE_DIR: the one the agent started with (a reload moves none). */
	if (c && !state_dir)
		state_dir = c->state_dir;
	if (!c || !state_dir || !state_dir[0])
		return c;
	if (setoverlay_load(state_dir, &set, why, sizeof(why)) < 0) {
		log_error("%s; running on the configuration file's settings", why);
		return c;
	}
	if (!set)
		return c;
	o = xcalloc(1, sizeof(*o));
	config_copy(o, c);
	if (api_settings_apply(set, o, why, sizeof(why)) < 0) {
		log_error("%s/%s: %s; running on the configuration file's settings "
			  "(numaorchctl policy reset drops the file)", state_dir, SETOVERLAY_FILE, why);
		config_free(o);
		json_decref(set);
		return c;
	}
	json_object_foreach(set, k, v)
		if (n < sizeof(keys))
			n += (size_t)snprintf(keys + n, sizeof(keys) - n, "%s%s", n ? ", " : "", k);
	log_info("settings changed through the API, over the configuration file: %s (from %s/%s)", keys,
		 state_dir, SETOVERLAY_FILE);
	json_decref(set);
	config_free(c);
	return o;
}

struct reload_ctx {
	const struct cli *cli;
	const struct agent_config *started; /* what the API and state were started with */
	struct api *api;                    /* NULL: no API */
	struct watch_ctx *watch;            /* NULL: no cgroup watcher */
};

/* The cgroup watcher (cgwatch.h) prompts the engine's cycles. */
struct watch_ctx {
	struct engine *e;
	struct cg_hier hier;
	struct cgwatch *w;
};

static void watch_prompt(void *ctx)
{
	engine_trigger(ctx);
}

/* (Re)start the watcher on CFG's scopes. A failure only costs latency:
 * guests are still found at the interval. */
static void watch_start(struct watch_ctx *wc, const struct agent_config *cfg)
{
	int r;

	cgwatch_stop(wc->w);
	wc->w = NULL;
	r = cgwatch_start(&wc->hier, &cfg->cg, 0, watch_prompt, wc->e, &wc->w);
	if (r < 0) {
		log_warn("cannot watch the cgroup tree (%s): new guests are noticed at the interval", strerror(-r));
		return;
	}
	{
		struct cgwatch_stats st;

		cgwatch_get_stats(wc->w, &st);
		log_info("watching %u cgroup directories: new guests are acted on within a few seconds", st.watches);
	}
}

static bool str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

static struct agent_config *reload_cb(void *ctx)
{
	const struct reload_ctx *rc = ctx;
	const struct agent_config *s = rc->started;
	struct agent_config *c;
	char err[600];

	c = load_config_and_settings(rc->cli, s->state_dir, err, sizeof(err));
	if (!c) {
		log_error("reload: %s; keeping the old configuration", err);
		return NULL;
	}
	/* Scopes and parents may have changed: watch the new ones. (Should
	 * the engine refuse this config, the old scopes are still under the
	 * new watch or at the interval: only latency differs.) */
	if (rc->watch)
		watch_start(rc->watch, c);
	if (rc->api)
		api_set_guest_metrics(rc->api, c->api_guest_metrics);
	/* Listeners and the state directory are set up once: say so rather
	 * than pretend a reload moved them. */
	if (str_differs(c->api_socket, s->api_socket) || str_differs(c->api_listen, s->api_listen) ||
	    str_differs(c->api_token_file, s->api_token_file) || str_differs(c->api_tls_cert, s->api_tls_cert) ||
	    str_differs(c->api_tls_key, s->api_tls_key) || str_differs(c->state_dir, s->state_dir))
		log_warn("reload: [api] settings and state_dir take effect only at the next start");
	/* The token file is re-read (rotation without a restart); a bad one
	 * keeps the old token, as a bad configuration keeps the old one. */
	if (rc->api && s->api_listen && s->api_token_file) {
		char *tok = NULL;

		if (api_token_load(s->api_token_file, &tok, err, sizeof(err)) < 0) {
			log_error("reload: %s; keeping the old token", err);
		} else {
			api_set_token(rc->api, tok);
			log_info("reload: bearer token re-read from %s", s->api_token_file);
			explicit_bzero(tok, strlen(tok));
			free(tok);
		}
	}
	return c;
}

static void print_route(const char *method, const char *path, void *ctx)
{
	printf("%s %s\n", method, path);
}

/* Per-guest policies from the state directory, for the engine. */
static int load_guest_policies(struct engine *e, const char *state_dir, unsigned flags, struct gpolstore **out)
{
	unsigned n;
	char err[600];
	int r;

	r = gpolstore_open(state_dir, flags, out, err, sizeof(err));
	if (r == -EACCES && !(flags & GPOLSTORE_CREATE)) {
		/* --once as an unprivileged user: still show what it would do. */
		log_warn("%s; deciding without the per-guest policies", err);
		r = gpolstore_open(NULL, 0, out, err, sizeof(err));
		if (r == 0)
			engine_use_gpolstore(e, *out);
		return r;
	}
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	engine_use_gpolstore(e, *out);
	{
		char *const *msgs;
		unsigned nd = gpolstore_dropped(*out, &msgs);

		for (unsigned i = 0; i < nd; i++)
			log_warn("per-guest policies: %s", msgs[i]);
	}
	n = gpolstore_count(*out);
	if (n)
		log_info("%u per-guest polic%s loaded from %s", n, n == 1 ? "y" : "ies", gpolstore_path(*out));
	return 0;
}

/* The host's CPUs and memory: what a saved reservation may not exceed.
 * Left 0 (the format's own caps) if the topology cannot be read. */
static void host_limits(const struct host_paths *hp, struct engstate_limits *lim)
{
	struct snap_node *nodes = NULL;
	unsigned nr = 0, *dist = NULL;

	if (topo_read_nodes(hp, &nodes, &nr, &dist) < 0)
		return;
	for (unsigned i = 0; i < nr; i++) {
		lim->cpus += nodes[i].nr_cpus;
		lim->mem_bytes += nodes[i].mem_total;
	}
	free(nodes);
	free(dist);
}

static const char *human_bytes(uint64_t b, char *buf, size_t sz)
{
	if (b >= (1ULL << 30))
		snprintf(buf, sz, "%.1f GiB", (double)b / (double)(1ULL << 30));
	else
		snprintf(buf, sz, "%.0f MiB", (double)b / (double)(1ULL << 20));
	return buf;
}

static void print_report_text(const struct cycle_report *rep, const struct agent_config *cfg)
{
	const struct snapshot *s = rep->view->snap;
	const struct plan *p = rep->view->plan;
	char *cpus = xmalloc(CPULIST_BUFSZ);
	char mems[NODELIST_BUFSZ], b1[32], b2[32];

	printf("host: %u NUMA node%s (%u with CPUs), cgroup layout %s, %u guest%s; mode %s%s\n",
	       s->nr_nodes, s->nr_nodes == 1 ? "" : "s", snap_nr_cpu_nodes(s), cgh_layout_name(s->layout),
	       s->nr_guests, s->nr_guests == 1 ? "" : "s", agent_mode_name(cfg->mode),
	       rep->applied ? "" : " (dry run: nothing written)");
	printf("\n%-5s %-16s %6s %20s\n", "NODE", "CPUS", "BUSY", "MEM FREE / TOTAL");
	for (unsigned i = 0; i < s->nr_nodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		char busy[16];

		mask_format(&n->cpus, cpus, CPULIST_BUFSZ);
		if (isnan(n->busy))
			snprintf(busy, sizeof(busy), "-");
		else
			snprintf(busy, sizeof(busy), "%.0f%%", n->busy * 100);
		printf("%-5d %-16s %6s %9s / %-9s\n", n->id, *cpus ? cpus : "(none)", busy,
		       human_bytes(n->mem_free, b1, sizeof(b1)), human_bytes(n->mem_total, b2, sizeof(b2)));
	}
	/* LOCAL: where its threads run (snap_guest.locality); IN-SET: memory
	 * inside its cpuset's nodes, wherever the threads run. */
	printf("\n%-40s %-10s %-12s %-6s %6s %10s %6s %6s\n", "GUEST", "RUNTIME", "CPUS", "MEMS", "CPU",
	       "MEMORY", "LOCAL", "IN-SET");
	for (unsigned i = 0; i < s->nr_guests; i++) {
		const struct snap_guest *g = &s->guests[i];
		char use[16], loc[16], inset[16];

		mask_format(g->cpus, cpus, CPULIST_BUFSZ);
		mask_format(&g->mems, mems, sizeof(mems));
		if (isnan(g->cpu_use))
			snprintf(use, sizeof(use), "-");
		else
			snprintf(use, sizeof(use), "%.2f", g->cpu_use);
		/* Memory not measured: "-", not 0 B and 100 %. */
		snprintf(loc, sizeof(loc), "-");
		snprintf(inset, sizeof(inset), "-");
		if (!isnan(g->locality))
			snprintf(loc, sizeof(loc), "%.0f%%", g->locality * 100);
		if (!isnan(g->mem_in_cpuset))
			snprintf(inset, sizeof(inset), "%.0f%%", g->mem_in_cpuset * 100);
		printf("%-40s %-10s %-12s %-6s %6s %10s %6s %6s\n", g->id, g->runtime, cpus, mems, use,
		       g->mem_unknown ? "-" : human_bytes(g->mem_total, b1, sizeof(b1)), loc, inset);
	}
	if (p) {
		printf("\nDECISIONS\n");
		for (unsigned i = 0; i < p->nr_items; i++) {
			const struct plan_item *it = &p->items[i];
			const char *what = plan_kind_name(it->kind);

			printf("  %-40s %-7s", it->guest_id, what);
			if (it->kind == PLAN_SKIP)
				printf(" [%s]", skip_reason_name(it->skip));
			else if (it->kind == PLAN_MOVE)
				printf(" [%s]", move_reason_name(it->reason));
			printf(" %s", it->detail);
			if (rep->attempted && rep->attempted[i])
				printf(" => %s: %s", apply_status_name(rep->results[i].status), rep->results[i].msg);
			printf("\n");
		}
		if (p->nr_items == 0)
			printf("  (none: every guest is placed well)\n");
	}
	for (unsigned i = 0; i < s->nr_warnings; i++) {
		char safe[4096];

		utf8_escape(s->warnings[i], safe, sizeof(safe)); /* names from the host */
		printf("warning: %s\n", safe);
	}
	free(cpus);
}

static void print_report_json(const struct cycle_report *rep)
{
	json_t *o = json_object(), *res = json_array();

	json_object_set_new(o, "snapshot", snap_to_json(rep->view->snap, 0));
	if (rep->view->plan)
		json_object_set_new(o, "plan", plan_to_json(rep->view->plan));
	for (unsigned i = 0; i < rep->nr_results; i++) {
		if (!rep->attempted[i])
			continue;
		json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:f}",
						     "guest", rep->view->plan->items[i].guest_id,
						     "outcome", apply_status_name(rep->results[i].status),
						     "message", rep->results[i].msg,
						     "duration_s", rep->results[i].duration_s));
	}
	json_object_set_new(o, "results", res);
	json_object_set_new(o, "applied", json_boolean(rep->applied));
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	fputc('\n', stdout);
	json_decref(o);
}

/* Everything main sets up, torn down in one place (daemon_teardown). */
struct daemon {
	struct cli cli;
	char *state_dir_abs;        /* --state-dir made absolute, owned */
	struct agent_config *cfg;
	char *token;                /* the API's bearer token, wiped at the end */
	struct host_paths hp;
	struct engine *e;
	struct gpolstore *gs;
	struct api *api;
	struct httpd *httpd;
	struct watch_ctx watch;
};

/* What each step of main returns to go on to the next; anything else is
 * the exit code. */
#define GO_ON (-1)

/* --state-dir, relative to where the daemon was started: the daemon never
 * chdirs, but the file it writes should say where it is. */
static int state_dir_arg(struct daemon *d, const char *arg)
{
	if (arg[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "numaorchd: --state-dir: %s\n", strerror(errno));
			return 2;
		}
		free(d->state_dir_abs);
		d->state_dir_abs = xasprintf("%s/%s", cwd, arg);
		arg = d->state_dir_abs;
	}
	d->cli.state_dir = arg;
	return GO_ON;
}

/* One option C (getopt_long's) with its argument ARG into D's cli. */
static int parse_option(struct daemon *d, int c, const char *arg)
{
	struct cli *cli = &d->cli;

	switch (c) {
	case 'c':
		cli->config = arg;
		cli->config_given = true;
		break;
	case 'C': cli->check_config = true; break;
	case 'o': cli->once = true; break;
	case 'n': cli->dry_run = true; break;
	case 'j': cli->json = true; break;
	case 'i':
		if (parse_double(arg, &cli->interval) < 0 || cli->interval < 0.1 || cli->interval > 86400) {
			fprintf(stderr, "numaorchd: --interval: must be seconds 0.1..86400, got \"%s\"\n", arg);
			return 2;
		}
		break;
	case 's':
	case 'p':
		if (!cgh_rel_valid(arg)) {
			fprintf(stderr, "numaorchd: --%s: \"%s\" is not an absolute cgroup path without "
				"\".\" or \"..\" components\n", c == 's' ? "scope" : "parent", arg);
			return 2;
		}
		if (c == 's')
			strv_push(&cli->nr_scopes, &cli->scopes, arg);
		else
			strv_push(&cli->nr_parents, &cli->parents, arg);
		break;
	case 'm': cli->mode = arg; break;
	case 'r': cli->root = arg; break;
	case 'S': cli->sysfs = arg; break;
	case 'P': cli->procfs = arg; break;
	case 'G': cli->cgroupfs = arg; break;
	case 'd': cli->decision_log = arg; break;
	case 'l': cli->log_level = arg; break;
	case 'D': return state_dir_arg(d, arg);
	case 'U': cli->socket = arg; break;
	case 'g': cli->socket_group = arg; break;
	case 'L':
		if (*arg && !config_listen_valid(arg)) {
			fprintf(stderr, "numaorchd: --listen: must be ADDR:PORT with a port 0..65535, got \"%s\"\n",
				arg);
			return 2;
		}
		cli->listen = arg;
		break;
	case 'T': cli->token_file = arg; break;
	case 'E': cli->tls_cert = arg; break;
	case 'K': cli->tls_key = arg; break;
	case 'R': cli->list_routes = true; break;
	case 'V':
		printf("numaorchd %s\n", NUMAORCH_VERSION);
		return 0;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
	return GO_ON;
}

/* The command line into D's cli; --version, --help and --list-routes
 * answer here (exit 0). */
static int parse_args(struct daemon *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "once", no_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "scope", required_argument, NULL, 's' },
		{ "parent", required_argument, NULL, 'p' },
		{ "mode", required_argument, NULL, 'm' },
		{ "root", required_argument, NULL, 'r' },
		{ "sysfs", required_argument, NULL, 'S' },
		{ "procfs", required_argument, NULL, 'P' },
		{ "cgroupfs", required_argument, NULL, 'G' },
		{ "decision-log", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "state-dir", required_argument, NULL, 'D' },
		{ "socket", required_argument, NULL, 'U' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "listen", required_argument, NULL, 'L' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "tls-cert", required_argument, NULL, 'E' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "list-routes", no_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "c:ni:s:p:r:l:Vh", opts, NULL)) != -1)
		if ((r = parse_option(d, c, optarg)) != GO_ON)
			return r;
	if (optind < argc) {
		fprintf(stderr, "numaorchd: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (d->cli.list_routes) {
		api_routes_foreach(print_route, NULL);
		return 0;
	}
	if (!d->cli.config && access(DEFAULT_CONFIG, F_OK) == 0)
		d->cli.config = DEFAULT_CONFIG;
	return GO_ON;
}

/* The configuration and the API's token; --check-config ends here. */
static int load_startup_config(struct daemon *d)
{
	char err[600];

	/* --check-config checks the file; the daemon and --once run with
	 * the settings changed through the API too. */
	d->cfg = d->cli.check_config ? load_config(&d->cli, err, sizeof(err))
				     : load_config_and_settings(&d->cli, NULL, err, sizeof(err));
	if (!d->cfg) {
		fprintf(stderr, "numaorchd: %s\n", err);
		return 2;
	}
	/* The token is configuration: a bad one fails here and in
	 * --check-config, not later at the first request. */
	if (d->cfg->api_listen && !d->cli.once &&
	    api_token_load(d->cfg->api_token_file, &d->token, err, sizeof(err)) < 0) {
		fprintf(stderr, "numaorchd: %s\n", err);
		return 2;
	}
	if (d->cli.check_config) {
		char mod[PATH_MAX];

		/* Not an error: containers are managed without it. */
		if (d->cfg->libvirt_enabled &&
		    vmplugin_find(d->cfg->libvirt_module, mod, sizeof(mod), err, sizeof(err)) < 0)
			fprintf(stderr, "numaorchd: warning: [libvirt] enabled = yes, but %s: VMs will not be managed\n",
				err);
		printf("configuration OK\n");
		return 0;
	}
	return GO_ON;
}

/* The process's limits and logging, and the host's paths (--root, the
 * single-root overrides). */
static int setup_host(struct daemon *d)
{
	const struct agent_config *cfg = d->cfg;
	const struct cli *cli = &d->cli;
	struct host_paths *hp = &d->hp;
	int r;

	{
		/* The container source keeps a few files per guest open between
		 * cycles; nothing here uses select(), so take the hard limit. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	log_set_level(cfg->log_level);
	/* Under systemd, stderr is the journal: "<N>" prefixes keep levels. */
	if (stderr_is_journal())
		log_set_journal_prefix(true);
	if (cfg->log_syslog)
		log_use_syslog(true, "numaorchd");

	if (cli->root) {
		r = host_paths_from_root(hp, cli->root);
		if (r < 0) {
			fprintf(stderr, "numaorchd: --root %s: %s\n", cli->root, strerror(-r));
			return 2;
		}
	} else {
		host_paths_default(hp);
		if (!numamig_available())
			log_warn("the kernel reports no NUMA support (numa_available): the host is one node");
		if (geteuid() != 0 && cfg->mode == MODE_ENFORCE && !cfg->dry_run)
			log_warn("not running as root: cgroup writes will be refused");
	}
	{
		const struct { const char *v; char *dst; const char *flag; } ov[] = {
			{ cli->sysfs, hp->sysfs, "--sysfs" },
			{ cli->procfs, hp->procfs, "--procfs" },
			{ cli->cgroupfs, hp->cgroupfs, "--cgroupfs" },
		};

		for (unsigned i = 0; i < 3; i++) {
			if (!ov[i].v)
				continue;
			if (!fs_is_dir(ov[i].v) || strlen(ov[i].v) >= PATH_MAX) {
				fprintf(stderr, "numaorchd: %s %s: not a directory\n", ov[i].flag, ov[i].v);
				return 2;
			}
			strcpy(ov[i].dst, ov[i].v);
		}
	}
	return GO_ON;
}

/* The engine on the daemon's parts, and the start line. */
static int build_engine(struct daemon *d)
{
	const struct agent_config *cfg = d->cfg;

	if (engine_new(d->cfg, &d->hp, &daemon_parts, &d->e) < 0)
		return 1;
	log_info("numaorchd %s starting: mode %s%s, interval %.1fs, %u scope%s, host %s",
		 NUMAORCH_VERSION, agent_mode_name(cfg->mode), cfg->dry_run ? " (dry run)" : "",
		 cfg->interval_s, cfg->cg.nr_scopes, cfg->cg.nr_scopes == 1 ? "" : "s",
		 d->cli.root ? d->cli.root : "live");
	/* The shipped mode: say what it means and the one command out of it. */
	if (cfg->mode == MODE_ADVISE && !d->cli.once)
		log_info("advise mode: decisions are recorded (numaorchctl decisions) and nothing is moved; "
			 "to let it act: numaorchctl policy set mode=enforce");
	return GO_ON;
}

/* --once: one cycle, its memory moved, the report printed. Exit 3 when a
 * move was attempted and failed. */
static int run_once(struct daemon *d)
{
	const struct agent_config *cfg = d->cfg;
	struct cycle_report rep;
	int ret = 0;

	/* Honour the operator's per-guest policies; create nothing. */
	if (load_guest_policies(d->e, cfg->state_dir, 0, &d->gs) < 0)
		return 1;
	if (engine_cycle(d->e, cfg->dry_run, &rep) < 0)
		return 1;
	/* One cycle means its memory too: wait for the mover's jobs
	 * (their records say when the memory arrived). */
	if (engine_drain_migrations(d->e, cfg->mover_job_timeout_s + 5) < 0)
		log_warn("--once: memory still moving after %.0f s; stopping its jobs", cfg->mover_job_timeout_s + 5);
	/* Nothing widens a binding once this process is gone. */
	engine_release_bindings(d->e, "the agent's one cycle (--once) ended");
	if (d->cli.json)
		print_report_json(&rep);
	else
		print_report_text(&rep, cfg);
	for (unsigned i = 0; i < rep.nr_results; i++)
		if (rep.attempted[i] && (rep.results[i].status == APPLY_FAILED ||
					 rep.results[i].status == APPLY_FAILED_PARTIAL ||
					 rep.results[i].status == APPLY_REFUSED))
			ret = 3;
	cycle_report_clear(&rep);
	return ret;
}

/* The REST API's listeners, when a socket or an address is configured. */
static int start_api(struct daemon *d)
{
	const struct agent_config *cfg = d->cfg;
	struct api_opts ao = {
		.version = NUMAORCH_VERSION,
		.token = d->token,
		.socket_path = cfg->api_socket && *cfg->api_socket ? cfg->api_socket : NULL,
		.listen = cfg->api_listen,
		.tls = cfg->api_tls_cert != NULL,
	};
	struct httpd_opts ho = {
		.socket_path = cfg->api_socket,
		.socket_group = d->cli.socket_group,
		.listen = cfg->api_listen,
		.tls_cert = cfg->api_tls_cert,
		.tls_key = cfg->api_tls_key,
	};
	char err[600];
	int r;

	if (!(cfg->api_socket && *cfg->api_socket) && !cfg->api_listen)
		return GO_ON;
	r = api_new(d->e, d->gs, &ao, &d->api);
	if (r == 0) {
		api_set_guest_metrics(d->api, cfg->api_guest_metrics);
		r = httpd_start(d->api, &ho, &d->httpd, err, sizeof(err));
	} else {
		snprintf(err, sizeof(err), "%s", strerror(-r));
	}
	if (r < 0) {
		log_error("cannot start the REST API: %s", err);
		return 1;
	}
	return GO_ON;
}

/* The daemon's state (per-guest policies, the state directory), its
 * event loop and its API, before the loop runs. */
static int start_daemon(struct daemon *d)
{
	const struct agent_config *cfg = d->cfg;
	int r;

	if (load_guest_policies(d->e, cfg->state_dir, GPOLSTORE_CREATE, &d->gs) < 0)
		return 1;
	/* Cool-downs and reservations survive a restart, or a restarted agent
	 * would move a guest again inside its cool-down and forget room it
	 * promised (ARCHITECTURE.md, "State that survives a restart"). */
	if (cfg->state_dir && cfg->state_dir[0]) {
		struct engstate_limits lim = { 0 };
		char serr[600];

		host_limits(&d->hp, &lim);
		if (engine_use_state_dir(d->e, cfg->state_dir, &lim, serr, sizeof(serr)) < 0) {
			log_error("%s", serr);
			return 1;
		}
	}
	/* Signals are blocked here, before any API thread exists, so that
	 * they all reach the engine's signalfd. */
	r = engine_prepare_loop(d->e);
	if (r < 0) {
		log_errno(LOG_LEVEL_ERROR, r, "cannot set up the event loop");
		return 1;
	}
	return start_api(d);
}

/* The daemon: this thread runs the engine's loop until a signal stops it. */
static int run_daemon(struct daemon *d)
{
	struct reload_ctx rc = { .cli = &d->cli, .started = d->cfg };
	int r = start_daemon(d);

	if (r != GO_ON)
		return r;
	/* This thread becomes the engine. Its cycles are background work; the
	 * API's threads (created above, at the default priority) answer
	 * people and probes, so on a saturated host they go first. Per
	 * thread: setpriority() on a tid affects only that thread. */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), ENGINE_NICE) < 0)
		log_debug("cannot lower the engine thread's priority: %s", strerror(errno));
	/* After engine_prepare_loop: the watcher's thread starts with the
	 * engine's signals blocked. A fixture root never changes by itself. */
	if (d->hp.live && cgh_detect(d->hp.cgroupfs, &d->watch.hier) == 0) {
		d->watch.e = d->e;
		watch_start(&d->watch, d->cfg);
	}
	rc.api = d->api;
	rc.watch = d->watch.e ? &d->watch : NULL;
	r = engine_run(d->e, reload_cb, &rc);
	/* Before the engine goes: the watcher prompts it. */
	cgwatch_stop(d->watch.w);
	d->watch.w = NULL;
	log_info("numaorchd stopped");
	return r < 0 ? 1 : 0;
}

static void daemon_teardown(struct daemon *d)
{
	cgwatch_stop(d->watch.w);
	/* Listeners first: their threads use the engine and the store. */
	httpd_stop(d->httpd);
	api_free(d->api);
	engine_free(d->e);
	gpolstore_free(d->gs);
	if (d->token) {
		explicit_bzero(d->token, strlen(d->token));
		free(d->token);
	}
	if (d->cfg)
		config_free(d->cfg);
	free(d->state_dir_abs);
	strv_free(&d->cli.nr_scopes, &d->cli.scopes);
	strv_free(&d->cli.nr_parents, &d->cli.parents);
}

int main(int argc, char **argv)
{
	struct daemon d = { .cli = { .interval = NAN } };
	int ret;

	xmalloc_tune();
	/* A closed reader of stderr (`numaorchd | head`) or a peer that went
	 * away must be an EPIPE the writer handles, not the daemon's death;
	 * systemd ignores SIGPIPE for its units, a shell pipeline does not. */
	signal(SIGPIPE, SIG_IGN);
	ret = parse_args(&d, argc, argv);
	if (ret == GO_ON)
		ret = load_startup_config(&d);
	if (ret == GO_ON)
		ret = setup_host(&d);
	if (ret == GO_ON)
		ret = build_engine(&d);
	if (ret == GO_ON)
		ret = d.cli.once ? run_once(&d) : run_daemon(&d);
	daemon_teardown(&d);
	return ret;
}
