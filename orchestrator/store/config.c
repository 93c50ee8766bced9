#include "orchestrator/store/config.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/cghier.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/parse.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/kflow.h"
#include "orchestrator/actuator/vmplugin.h"
#include "orchestrator/base/strtab.h"

#define MIB (1024ULL * 1024ULL)

void strv_push(unsigned *n, char ***v, const char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(char *));
	(*v)[(*n)++] = xstrdup(s);
}

void strv_free(unsigned *n, char ***v)
{
	for (unsigned i = 0; i < *n; i++)
		free((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

static void strv_copy(unsigned *dn, char ***dv, unsigned sn, char *const *sv)
{
	*dn = 0;
	*dv = NULL;
	for (unsigned i = 0; i < sn; i++)
		strv_push(dn, dv, sv[i]);
}

void config_default(struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = MODE_ENFORCE;
	c->interval_s = 15.0;
	c->sample_s = 0.5;
	c->watch_s = 1.0;
	c->history_s = 3600.0;
	c->state_dir = xstrdup("/var/lib/numaorch");
	c->log_level = LOG_LEVEL_INFO;
	policy_config_default(&c->policy);
	c->api_socket = xstrdup("/run/numaorch/api.sock");
	c->api_guest_metrics = CONFIG_GUEST_METRICS_DEFAULT;
	c->libvirt_enabled = true;
	c->libvirt_uri = xstrdup("qemu:///system");
	c->libvirt_keepalive_interval = 2;
	c->libvirt_keepalive_count = 2;
	c->libvirt_place_on_start = true;
	c->libvirt_place_vcpu_load = 1.0;
	c->libvirt_cpus_without_memory = VM_CPUS_LOCAL;
	c->kernel_balancing = KBAL_MIGRATE;
	c->kernel_follow_s = KFLOW_FOLLOW_S;
	c->mover = true;
	c->mover_workers = 4;
	c->mover_rate_mib = 0;
	c->mover_chunk_ms = 20;
	c->mover_on_target = true;
	c->mover_job_timeout_s = 300;
}

void config_clear(struct agent_config *c)
{
	if (!c)
		return;
	free(c->decision_log);
	free(c->state_dir);
	strv_free(&c->cg.nr_scopes, &c->cg.scopes);
	strv_free(&c->cg.nr_parents, &c->cg.parents);
	strv_free(&c->cg.nr_runc_roots, &c->cg.runc_roots);
	strv_free(&c->cg.nr_containerd_roots, &c->cg.containerd_roots);
	free(c->cg.docker_root);
	free(c->cg.docker_config);
	free(c->cg.kubelet_root);
	free(c->cg.kubelet_reserved);
	free(c->api_socket);
	free(c->api_listen);
	free(c->api_token_file);
	free(c->api_tls_cert);
	free(c->api_tls_key);
	free(c->libvirt_uri);
	free(c->libvirt_module);
	sched_clear(&c->schedule);
	memset(c, 0, sizeof(*c));
}

void config_free(struct agent_config *c)
{
	config_clear(c);
	free(c);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void config_copy(struct agent_config *dst, const struct agent_config *src)
{
	*dst = *src;
	dst->decision_log = dup_or_null(src->decision_log);
	dst->state_dir = dup_or_null(src->state_dir);
	strv_copy(&dst->cg.nr_scopes, &dst->cg.scopes, src->cg.nr_scopes, src->cg.scopes);
	strv_copy(&dst->cg.nr_parents, &dst->cg.parents, src->cg.nr_parents, src->cg.parents);
	strv_copy(&dst->cg.nr_runc_roots, &dst->cg.runc_roots, src->cg.nr_runc_roots,
		  src->cg.runc_roots);
	strv_copy(&dst->cg.nr_containerd_roots, &dst->cg.containerd_roots, src->cg.nr_containerd_roots,
		  src->cg.containerd_roots);
	dst->cg.docker_root = dup_or_null(src->cg.docker_root);
	dst->cg.docker_config = dup_or_null(src->cg.docker_config);
	dst->cg.kubelet_root = dup_or_null(src->cg.kubelet_root);
	dst->cg.kubelet_reserved = dup_or_null(src->cg.kubelet_reserved);
	dst->api_socket = dup_or_null(src->api_socket);
	dst->api_listen = dup_or_null(src->api_listen);
	dst->api_token_file = dup_or_null(src->api_token_file);
	dst->api_tls_cert = dup_or_null(src->api_tls_cert);
	dst->api_tls_key = dup_or_null(src->api_tls_key);
	dst->libvirt_uri = dup_or_null(src->libvirt_uri);
	dst->libvirt_module = dup_or_null(src->libvirt_module);
	sched_copy(&dst->schedule, &src->schedule);
}

struct parse_ctx {
	struct agent_config *cfg;
	char msg[512];  /* first handler error, without the line prefix */
	bool failed;
	int long_line;  /* the first line over the reader's limit; 0 */
	int max_line;   /* that limit, in characters with the newline */
};

static int fail(struct parse_ctx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parse_ctx *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->failed) {
		va_start(ap, fmt);
		vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
		va_end(ap);
		p->failed = true;
	}
	return 0; /* inih: 0 means error on this line */
}

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = *v ? xstrdup(v) : NULL;
	return 1;
}

/* A number in [lo, hi]. */
static bool num_in(const char *v, double lo, double hi, double *out)
{
	double d;

	if (parse_double(v, &d) < 0 || d < lo || d > hi)
		return false;
	*out = d;
	return true;
}

static int cgroup_list_add(struct parse_ctx *p, const char *sec, const char *key, const char *v,
			   unsigned *n, char ***list)
{
	if (!*v) { /* "key =" resets the list, as in systemd units */
		strv_free(n, list);
		return 1;
	}
	if (!cgh_rel_valid(v))
		return fail(p, "[%s] %s: \"%s\" is not an absolute cgroup path without \".\" or \"..\" components",
			    sec, key, v);
	strv_push(n, list, v);
	return 1;
}

/* ---- the keys: one table ------------------------------------------------
 *
 * Each key of the file is one row: its section and name, how its value is
 * parsed and checked, and where it goes (an offset into struct
 * agent_config). Messages name the section and key and say what the value
 * must be, from the row. Lists, enums and the few keys with a rule of
 * their own have a setter. */

enum key_type {
	K_NUM,       /* double in [lo, hi], stored ÷ div as a double (percent: div 100) */
	K_SECONDS,   /* seconds in [lo, hi], stored as int64 ns */
	K_UINT,      /* integer in [lo, hi], stored as unsigned */
	K_MIB,       /* integer of MiB ≤ 2^30, stored as uint64 bytes */
	K_BOOL,      /* yes/no, true/false, on/off, 1/0 */
	K_STR,       /* a string; "" stores NULL */
	K_SET,       /* the row's setter decides */
};

struct key;
typedef int (*key_set_fn)(struct parse_ctx *p, const struct key *k, const char *v);

struct key {
	const char *sec, *name;
	enum key_type type;
	size_t off;
	double lo, hi, div;
	const char *what;    /* K_NUM/K_SECONDS: "seconds", "a number", ... */
	const char *suffix;  /* after the range: " (percent)" */
	key_set_fn set;      /* K_SET */
	/* Also takes "auto": the bool at this offset set (a number clears
	 * it); 0: a number only. */
	size_t auto_off;
};

#define AT(field) offsetof(struct agent_config, field)
#define FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))

static int set_mode(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (agent_mode_parse(v, FIELD(p->cfg, k, enum agent_mode)) < 0)
		return fail(p, "[%s] %s: must be enforce, advise or off, got \"%s\"", k->sec, k->name, v);
	return 1;
}

static int set_log_level(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (log_level_parse(v, FIELD(p->cfg, k, enum log_level)) < 0)
		return fail(p, "[%s] %s: must be error, warn, info or debug, got \"%s\"", k->sec, k->name, v);
	return 1;
}

static int set_abs_path(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (!*v || v[0] != '/')
		return fail(p, "[%s] %s: must be an absolute path, got \"%s\"", k->sec, k->name, v);
	return set_str(FIELD(p->cfg, k, char *), v);
}

/* empty: the default (NULL) */
static int set_abs_path_or_empty(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (*v && *v != '/')
		return fail(p, "[%s] %s: must be an absolute path, got \"%s\"", k->sec, k->name, v);
	return set_str(FIELD(p->cfg, k, char *), v);
}

static int set_cpu_list(struct parse_ctx *p, const struct key *k, const char *v)
{
	cpumask_t *m = xmalloc(sizeof(*m));
	int r = mask_parse(v, m);

	free(m);
	if (r < 0)
		return fail(p, "[%s] %s: must be a CPU list (0-3,8), got \"%s\"", k->sec, k->name, v);
	return set_str(FIELD(p->cfg, k, char *), v);
}

static int set_memory_binding(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (strcmp(v, "soft") == 0)
		p->cfg->strict_mems = false;
	else if (strcmp(v, "strict") == 0)
		p->cfg->strict_mems = true;
	else
		return fail(p, "[%s] %s: must be soft or strict, got \"%s\"", k->sec, k->name, v);
	return 1;
}

static int set_devices(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (gpol_devices_parse(v, &p->cfg->policy.devices) < 0)
		return fail(p, "[%s] %s: must be prefer, require or ignore, got \"%s\"", k->sec, k->name, v);
	return 1;
}

static int set_scope(struct parse_ctx *p, const struct key *k, const char *v)
{
	return cgroup_list_add(p, k->sec, k->name, v, &p->cfg->cg.nr_scopes, &p->cfg->cg.scopes);
}

static int set_parent(struct parse_ctx *p, const struct key *k, const char *v)
{
	return cgroup_list_add(p, k->sec, k->name, v, &p->cfg->cg.nr_parents, &p->cfg->cg.parents);
}

static int root_list_add(struct parse_ctx *p, const struct key *k, const char *v, unsigned *n, char ***list)
{
	if (!*v) {
		strv_free(n, list);
		return 1;
	}
	if (v[0] != '/')
		return fail(p, "[%s] %s: must be an absolute path, got \"%s\"", k->sec, k->name, v);
	strv_push(n, list, v);
	return 1;
}

static int set_runc_root(struct parse_ctx *p, const struct key *k, const char *v)
{
	return root_list_add(p, k, v, &p->cfg->cg.nr_runc_roots, &p->cfg->cg.runc_roots);
}

static int set_containerd_root(struct parse_ctx *p, const struct key *k, const char *v)
{
	return root_list_add(p, k, v, &p->cfg->cg.nr_containerd_roots, &p->cfg->cg.containerd_roots);
}

static int set_api_socket(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (*v && v[0] != '/')
		return fail(p, "[%s] %s: must be an absolute path, got \"%s\"", k->sec, k->name, v);
	free(p->cfg->api_socket);
	p->cfg->api_socket = xstrdup(v); /* "" disables the socket */
	return 1;
}

bool config_listen_valid(const char *v)
{
	const char *port = strrchr(v, ':');
	uint64_t n;

	/* Digits only: getaddrinfo would take a port over 65535 modulo 2^16
	 * (99999 bound 34463). */
	if (!port || !port[1] || strspn(port + 1, "0123456789") != strlen(port + 1))
		return false;
	return parse_u64(port + 1, &n) == 0 && n <= 65535;
}

static int set_api_listen(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (*v && !config_listen_valid(v))
		return fail(p, "[%s] %s: must be ADDR:PORT with a port 0..65535, got \"%s\"", k->sec, k->name, v);
	return set_str(&p->cfg->api_listen, v);
}

/* off, all, or "top N": the N guests with the most memory. */
static int set_guest_metrics(struct parse_ctx *p, const struct key *k, const char *v)
{
	uint64_t n;

	if (strcmp(v, "off") == 0) {
		p->cfg->api_guest_metrics = 0;
	} else if (strcmp(v, "all") == 0) {
		p->cfg->api_guest_metrics = CONFIG_GUEST_METRICS_ALL;
	} else if (strncmp(v, "top ", 4) == 0 && parse_u64(v + 4 + strspn(v + 4, " "), &n) == 0 && n >= 1 &&
		   n <= 1000000) {
		p->cfg->api_guest_metrics = (unsigned)n;
	} else {
		return fail(p, "[%s] %s: must be off, all or top N (N 1..1000000), got \"%s\"", k->sec, k->name, v);
	}
	return 1;
}

static int set_nonempty(struct parse_ctx *p, const struct key *k, const char *v)
{
	if (!*v)
		return fail(p, "[%s] %s: must not be empty", k->sec, k->name);
	return set_str(FIELD(p->cfg, k, char *), v);
}

static int set_cpus_without_memory(struct parse_ctx *p, const struct key *k, const char *v)
{
	enum vm_cpus_without_memory m;

	if (vm_cpus_without_memory_parse(v, &m) < 0)
		return fail(p, "[%s] %s: must be local, never or always, got \"%s\"", k->sec, k->name, v);
	p->cfg->libvirt_cpus_without_memory = m;
	return 1;
}

static int set_kernel_balancing(struct parse_ctx *p, const struct key *k, const char *v)
{
	enum kbal_setting b;

	if (kbal_setting_parse(v, &b) < 0)
		return fail(p, "[%s] %s: must be auto, defer or migrate, got \"%s\"", k->sec, k->name, v);
	p->cfg->kernel_balancing = b;
	return 1;
}

static int set_window(struct parse_ctx *p, const struct key *k, const char *v)
{
	struct schedule *sc = &p->cfg->schedule;
	struct sched_entry se;
	char why[256];

	if (!*v) {
		sched_clear(sc);
		return 1;
	}
	if (sc->n >= SCHED_MAX_ENTRIES)
		return fail(p, "[%s] %s: at most %d windows", k->sec, k->name, SCHED_MAX_ENTRIES);
	if (sched_parse(v, &se, why, sizeof(why)) < 0)
		return fail(p, "[%s] %s: %s", k->sec, k->name, why);
	sched_add(sc, &se);
	return 1;
}

#define NUM(s, n, f, l, h, w, sfx, sc) { s, n, K_NUM, AT(f), l, h, sc, w, sfx, NULL, 0 }
#define PCT(n, l, h) NUM("policy", #n, policy.n, l, h, "a number", " (percent)", 100)
#define SECS(s, n, f, l, h) { s, n, K_SECONDS, AT(f), l, h, 1, "seconds", "", NULL, 0 }
#define UINT(s, n, f, l, h) { s, n, K_UINT, AT(f), l, h, 1, "an integer", "", NULL, 0 }
#define MIBS(s, n, f) { s, n, K_MIB, AT(f), 0, 0, 1, NULL, NULL, NULL, 0 }
/* ... or auto (the bool at field A) */
#define SECS_A(s, n, f, l, h, a) { s, n, K_SECONDS, AT(f), l, h, 1, "seconds", "", NULL, AT(a) }
#define UINT_A(s, n, f, l, h, a) { s, n, K_UINT, AT(f), l, h, 1, "an integer", "", NULL, AT(a) }
#define MIBS_A(s, n, f, a) { s, n, K_MIB, AT(f), 0, 0, 1, NULL, NULL, NULL, AT(a) }
#define BOOLK(s, n, f) { s, n, K_BOOL, AT(f), 0, 0, 1, NULL, NULL, NULL, 0 }
#define STR(s, n, f) { s, n, K_STR, AT(f), 0, 0, 1, NULL, NULL, NULL, 0 }
#define SET(s, n, f, fn) { s, n, K_SET, AT(f), 0, 0, 1, NULL, NULL, fn, 0 }

static const struct key keys[] = {
	SET("agent", "mode", mode, set_mode),
	NUM("agent", "interval", interval_s, 0.1, 86400, "seconds", "", 1),
	NUM("agent", "sample", sample_s, 0.05, 60, "seconds", "", 1),
	NUM("agent", "watch", watch_s, 0, 60, "seconds", "", 1),
	NUM("agent", "history", history_s, 0, 86400, "seconds", "", 1),
	SET("agent", "log_level", log_level, set_log_level),
	STR("agent", "decision_log", decision_log),
	SET("agent", "state_dir", state_dir, set_abs_path),
	BOOLK("agent", "dry_run", dry_run),
	BOOLK("agent", "log_syslog", log_syslog),
	BOOLK("agent", "freeze_during_migration", freeze_during_migration),
	SET("agent", "memory_binding", strict_mems, set_memory_binding),

	SET("scope", "cgroup", cg.scopes, set_scope),
	SET("containers", "parent", cg.parents, set_parent),
	SET("containers", "runc_root", cg.runc_roots, set_runc_root),
	SET("containers", "containerd_root", cg.containerd_roots, set_containerd_root),
	SET("containers", "docker_root", cg.docker_root, set_abs_path_or_empty),
	SET("containers", "docker_config", cg.docker_config, set_abs_path_or_empty),
	SET("kubelet", "root", cg.kubelet_root, set_abs_path_or_empty),
	SET("kubelet", "reserved_cpus", cg.kubelet_reserved, set_cpu_list),

	PCT(locality_target, 0, 100),
	PCT(cpu_headroom, 0, 1000),
	PCT(mem_headroom, 0, 1000),
	PCT(less_busy_margin, 0, 100),
	PCT(max_util, 1, 100),
	PCT(rebalance_util, 0, 100),
	NUM("policy", "min_cpu", policy.min_cpu, 0, 4096, "a number of CPUs", "", 1),
	SECS_A("policy", "cooldown", policy.cooldown_ns, 0, 86400 * 7, policy.cooldown_auto),
	UINT_A("policy", "max_moves", policy.max_moves, 1, 10000, policy.max_moves_auto),
	MIBS_A("policy", "max_migrate_mib", policy.max_migrate_bytes, policy.max_migrate_auto),
	MIBS("policy", "min_free_mib", policy.min_free_bytes),
	PCT(min_free_share, 0, 100),
	BOOLK("policy", "start_place", policy.start_place),
	BOOLK("policy", "start_bind_mems", policy.start_bind_mems),
	BOOLK("policy", "whole_cores", policy.whole_cores),
	BOOLK("policy", "container_cores", policy.container_cores),
	SET("policy", "devices", policy.devices, set_devices),

	SET("api", "socket", api_socket, set_api_socket),
	SET("api", "listen", api_listen, set_api_listen),
	STR("api", "token_file", api_token_file),
	STR("api", "tls_cert", api_tls_cert),
	STR("api", "tls_key", api_tls_key),
	SET("api", "guest_metrics", api_guest_metrics, set_guest_metrics),

	BOOLK("libvirt", "enabled", libvirt_enabled),
	SET("libvirt", "uri", libvirt_uri, set_nonempty),
	/* empty: the default search (vmplugin.h) */
	SET("libvirt", "module", libvirt_module, set_abs_path_or_empty),
	UINT("libvirt", "keepalive_interval", libvirt_keepalive_interval, 1, 60),
	UINT("libvirt", "keepalive_count", libvirt_keepalive_count, 1, 60),
	BOOLK("libvirt", "place_on_start", libvirt_place_on_start),
	NUM("libvirt", "place_vcpu_load", libvirt_place_vcpu_load, 1, 100, "a number", " (percent)", 100),
	SET("libvirt", "cpus_without_memory", libvirt_cpus_without_memory, set_cpus_without_memory),

	SET("memory", "kernel_balancing", kernel_balancing, set_kernel_balancing),
	NUM("memory", "kernel_follow", kernel_follow_s, 1, 86400, "seconds", "", 1),
	BOOLK("memory", "mover", mover),
	UINT("memory", "workers", mover_workers, 1, 16),
	NUM("memory", "rate_mib", mover_rate_mib, 0, 1048576, "MiB/s", " (0: no limit)", 1),
	NUM("memory", "chunk_ms", mover_chunk_ms, 1, 1000, "milliseconds", "", 1),
	BOOLK("memory", "workers_on_target", mover_on_target),
	NUM("memory", "job_timeout", mover_job_timeout_s, 1, 86400, "seconds", "", 1),

	SET("schedule", "window", schedule, set_window),
};

#undef NUM
#undef PCT
#undef SECS
#undef UINT
#undef MIBS
#undef SECS_A
#undef UINT_A
#undef MIBS_A
#undef BOOLK
#undef STR
#undef SET

static const char *const sections[] = { "agent", "scope", "containers", "policy", "api", "libvirt", "memory",
					"schedule" };

static int set_key(struct parse_ctx *p, const struct key *k, const char *v)
{
	struct agent_config *c = p->cfg;
	const char *au = k->auto_off ? "auto or " : "";
	double d;
	uint64_t u;
	bool b;

	if (k->auto_off) {
		*(bool *)((char *)c + k->auto_off) = strcmp(v, "auto") == 0;
		if (strcmp(v, "auto") == 0)
			return 1;
	}
	switch (k->type) {
	case K_NUM:
		if (!num_in(v, k->lo, k->hi, &d))
			return fail(p, "[%s] %s: must be %s %.10g..%.10g%s, got \"%s\"", k->sec, k->name, k->what, k->lo,
				    k->hi, k->suffix, v);
		*FIELD(c, k, double) = k->div == 1 ? d : d / k->div;
		return 1;
	case K_SECONDS:
		if (!num_in(v, k->lo, k->hi, &d))
			return fail(p, "[%s] %s: must be %s%s %.10g..%.10g%s, got \"%s\"", k->sec, k->name, au, k->what,
				    k->lo, k->hi, k->suffix, v);
		*FIELD(c, k, int64_t) = (int64_t)(d * 1e9);
		return 1;
	case K_UINT:
		if (parse_u64(v, &u) < 0 || (double)u < k->lo || (double)u > k->hi)
			return fail(p, "[%s] %s: must be %san integer %.10g..%.10g, got \"%s\"", k->sec, k->name, au,
				    k->lo, k->hi, v);
		*FIELD(c, k, unsigned) = (unsigned)u;
		return 1;
	case K_MIB:
		if (parse_u64(v, &u) < 0 || u > (1ULL << 30))
			return fail(p, "[%s] %s: must be %san integer of MiB, got \"%s\"", k->sec, k->name, au, v);
		*FIELD(c, k, uint64_t) = u * MIB;
		return 1;
	case K_BOOL:
		if (parse_bool(v, &b) < 0)
			return fail(p, "[%s] %s: must be yes or no, got \"%s\"", k->sec, k->name, v);
		*FIELD(c, k, bool) = b;
		return 1;
	case K_STR:
		return set_str(FIELD(c, k, char *), v);
	case K_SET:
		return k->set(p, k, v);
	}
	return fail(p, "[%s] %s: cannot be set", k->sec, k->name);
}

static int handler(void *user, const char *sec, const char *name, const char *v)
{
	struct parse_ctx *p = user;
	bool known_sec = false;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].sec, sec) == 0 && strcmp(keys[i].name, name) == 0)
			return set_key(p, &keys[i], v);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		known_sec = known_sec || strcmp(sections[i], sec) == 0;
	if (!*sec)
		return fail(p, "key \"%s\" outside any [section]", name);
	if (!known_sec)
		return fail(p, "unknown section [%s]", sec);
	if (strcmp(sec, "schedule") == 0)
		return fail(p, "[schedule] unknown key \"%s\" (window = DAYS HH:MM-HH:MM KEY=VALUE...)", name);
	return fail(p, "[%s] unknown key \"%s\"", sec, name);
}

int config_validate(const struct agent_config *c, char *err, size_t errsz)
{
	const char *field = NULL;

	if (policy_config_validate(&c->policy, &field) < 0) {
		snprintf(err, errsz, "[policy] %s: out of range", field ? field : "?");
		return -EINVAL;
	}
	if ((c->api_tls_cert && !c->api_tls_key) || (!c->api_tls_cert && c->api_tls_key)) {
		snprintf(err, errsz, "[api] tls_cert and tls_key must be given together");
		return -EINVAL;
	}
	if (c->api_listen && !c->api_token_file) {
		snprintf(err, errsz, "[api] listen needs token_file: TCP requests must carry a bearer token");
		return -EINVAL;
	}
	return 0;
}

static int finish(struct parse_ctx *p, int line, const char *name, struct agent_config *tmp,
		  struct agent_config *out, char *err, size_t errsz)
{
	if (line < 0) {
		snprintf(err, errsz, "%s: cannot read: %s", name, strerror(errno ? errno : EIO));
		config_clear(tmp);
		return errno ? -errno : -EIO;
	}
	if (p->long_line && (line == 0 || line >= p->long_line)) {
		snprintf(err, errsz, "%s:%d: line longer than %d characters, which the configuration reader "
			 "cannot take whole (repeatable keys take one entry per line)", name,
			 p->long_line, p->max_line - 1);
		config_clear(tmp);
		return -EINVAL;
	}
	if (line > 0) {
		snprintf(err, errsz, "%s:%d: %s", name, line,
			 p->failed ? p->msg : "syntax error (expected [section] or key = value)");
		config_clear(tmp);
		return -EINVAL;
	}
	if (config_validate(tmp, err, errsz) < 0) {
		char buf[512];

		snprintf(buf, sizeof(buf), "%s: %s", name, err);
		snprintf(err, errsz, "%s", buf);
		config_clear(tmp);
		return -EINVAL;
	}
	*out = *tmp;
	return 0;
}

/* inih's line reader, for a file (F) or a string (S). inih reads a line
 * in a fixed buffer (Debian builds it with 200 bytes) and parses the rest
 * of a longer line as a line of its own, so a long commented-out line
 * could end in a live setting: a line that does not fit whole is never
 * handed over; the parse stops there and it is an error with its number. */
struct conf_reader {
	struct parse_ctx *p;
	FILE *f;
	const char *s;
	int line;
};

static char *conf_read_line(char *str, int num, void *stream)
{
	struct conf_reader *rd = stream;
	bool over = false;
	int n = 0, c;

	for (;;) {
		if (rd->f)
			c = getc(rd->f);
		else
			c = *rd->s ? (unsigned char)*rd->s++ : EOF;
		if (c == EOF)
			break;
		if (n < num - 1)
			str[n++] = (char)c;
		else
			over = true;  /* read on to its end, keep none of it */
		if (c == '\n')
			break;
	}
	if (n == 0 && !over)
		return NULL;
	rd->line++;
	if (over) {
		rd->p->long_line = rd->line;
		rd->p->max_line = num - 1;
		return NULL;
	}
	str[n] = '\0';
	return str;
}

static int parse_file(FILE *f, struct parse_ctx *p)
{
	struct conf_reader rd = { .p = p, .f = f };

	return ini_parse_stream(conf_read_line, &rd, handler, p);
}

static int parse_string(const char *text, struct parse_ctx *p)
{
	struct conf_reader rd = { .p = p, .s = text };

	return ini_parse_stream(conf_read_line, &rd, handler, p);
}

static int drop_filter(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0;
}

/* Open a configuration file for parsing. Only a regular file (or a
 * symlink to one): a directory read as an empty file, so "reloaded" every
 * default (advise became enforce), and a FIFO blocked the reader (the
 * engine thread, at SIGHUP) for ever. fs_open_regular never blocks. */
static FILE *open_conf(const char *path, char *err, size_t errsz, int *r)
{
	int fd = fs_open_regular("configuration file", path, NULL, err, errsz);
	FILE *f;

	if (fd < 0) {
		*r = fd;
		return NULL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		*r = -errno;
		snprintf(err, errsz, "configuration file %s: %s", path, strerror(-*r));
		close(fd);
	}
	return f;
}

int config_load(const char *path, struct agent_config *out, char *err, size_t errsz)
{
	struct agent_config tmp;
	struct parse_ctx p = { .cfg = &tmp };
	struct dirent **ents = NULL;
	char *dir, *file = NULL;
	int line, n, r = 0;
	FILE *f;

	f = open_conf(path, err, errsz, &r);
	if (!f)
		return r;
	config_default(&tmp);
	errno = 0;
	line = parse_file(f, &p);
	fclose(f);
	if (line != 0 || p.long_line)
		return finish(&p, line, path, &tmp, out, err, errsz);

	/* Drop-ins: packages and tools add files here instead of editing the
	 * operator's conffile. */
	dir = xasprintf("%s.d", path);
	n = scandir(dir, &ents, drop_filter, alphasort);
	for (int i = 0; i < n; i++) {
		if (r == 0) {
			free(file);
			file = xasprintf("%s/%s", dir, ents[i]->d_name);
			f = open_conf(file, err, errsz, &r);
			if (f) {
				errno = 0;
				line = parse_file(f, &p);
				fclose(f);
				if (line != 0 || p.long_line)
					r = 1;
			}
		}
		free(ents[i]);
	}
	free(ents);
	free(dir);
	if (r < 0) {
		config_clear(&tmp);
		free(file);
		return r;
	}
	r = finish(&p, line, r ? file : path, &tmp, out, err, errsz);
	free(file);
	return r;
}

int config_load_string(const char *text, const char *name, struct agent_config *out,
		       char *err, size_t errsz)
{
	struct agent_config tmp;
	struct parse_ctx p = { .cfg = &tmp };
	int line;

	config_default(&tmp);
	errno = 0;
	line = parse_string(text, &p);
	return finish(&p, line, name, &tmp, out, err, errsz);
}

static bool same_strv(unsigned na, char *const *a, unsigned nb, char *const *b)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

bool config_sources_differ(const struct agent_config *a, const struct agent_config *b)
{
	return !same_strv(a->cg.nr_scopes, a->cg.scopes, b->cg.nr_scopes, b->cg.scopes) ||
	       !same_strv(a->cg.nr_parents, a->cg.parents, b->cg.nr_parents, b->cg.parents) ||
	       !same_strv(a->cg.nr_runc_roots, a->cg.runc_roots, b->cg.nr_runc_roots,
			  b->cg.runc_roots) ||
	       !same_strv(a->cg.nr_containerd_roots, a->cg.containerd_roots, b->cg.nr_containerd_roots,
			  b->cg.containerd_roots) ||
	       strcmp(a->cg.docker_root ? a->cg.docker_root : "", b->cg.docker_root ? b->cg.docker_root : "") ||
	       strcmp(a->cg.docker_config ? a->cg.docker_config : "",
		      b->cg.docker_config ? b->cg.docker_config : "") ||
	       strcmp(a->cg.kubelet_root ? a->cg.kubelet_root : "", b->cg.kubelet_root ? b->cg.kubelet_root : "") ||
	       strcmp(a->cg.kubelet_reserved ? a->cg.kubelet_reserved : "",
		      b->cg.kubelet_reserved ? b->cg.kubelet_reserved : "") ||
	       a->policy.min_free_bytes != b->policy.min_free_bytes ||
	       a->policy.min_free_share != b->policy.min_free_share ||
	       a->freeze_during_migration != b->freeze_during_migration ||
	       a->strict_mems != b->strict_mems ||
	       a->libvirt_enabled != b->libvirt_enabled ||
	       strcmp(a->libvirt_uri ? a->libvirt_uri : "", b->libvirt_uri ? b->libvirt_uri : "") ||
	       strcmp(a->libvirt_module ? a->libvirt_module : "",
		      b->libvirt_module ? b->libvirt_module : "") ||
	       a->libvirt_keepalive_interval != b->libvirt_keepalive_interval ||
	       a->libvirt_keepalive_count != b->libvirt_keepalive_count ||
	       a->libvirt_cpus_without_memory != b->libvirt_cpus_without_memory;
}
