#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cghier.h"
#include "fs.h"
#include "parse.h"
#include "xalloc.h"
#include "kbal.h"
#include "vmplugin.h"

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
	c->sample_s = 1.0;
	c->history_s = 3600.0;
	c->state_dir = xstrdup("/var/lib/numaorch");
	c->log_level = LOG_LEVEL_INFO;
	policy_config_default(&c->policy);
	c->api_socket = xstrdup("/run/numaorch/api.sock");
	c->libvirt_enabled = true;
	c->libvirt_uri = xstrdup("qemu:///system");
	c->libvirt_keepalive_interval = 2;
	c->libvirt_keepalive_count = 2;
	c->libvirt_place_on_start = true;
	c->libvirt_place_vcpu_load = 1.0;
	c->libvirt_cpus_without_memory = VM_CPUS_LOCAL;
	c->kernel_balancing = KBAL_MIGRATE;
	c->mover = true;
	c->mover_workers = 2;
	c->mover_rate_mib = 0;
	c->mover_chunk_ms = 20;
	c->mover_job_timeout_s = 300;
}

void config_free(struct agent_config *c)
{
	if (!c)
		return;
	free(c->decision_log);
	free(c->state_dir);
	strv_free(&c->cg.nr_scopes, &c->cg.scopes);
	strv_free(&c->cg.nr_parents, &c->cg.parents);
	strv_free(&c->cg.nr_runc_roots, &c->cg.runc_roots);
	free(c->api_socket);
	free(c->api_listen);
	free(c->api_token_file);
	free(c->api_tls_cert);
	free(c->api_tls_key);
	free(c->libvirt_uri);
	free(c->libvirt_module);
	sched_free(&c->schedule);
	memset(c, 0, sizeof(*c));
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

/* A number in [lo, hi]; percentages are given as 0..100 and stored as
 * fractions by the caller. */
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

static int handle_policy(struct parse_ctx *p, const char *name, const char *v)
{
	struct policy_config *pc = &p->cfg->policy;
	double d;
	uint64_t u;

#define PCT(field, lo, hi) \
	if (strcmp(name, #field) == 0) { \
		if (!num_in(v, lo, hi, &d)) \
			return fail(p, "[policy] %s: must be a number %g..%g (percent), got \"%s\"", name, (double)lo, (double)hi, v); \
		pc->field = d / 100.0; \
		return 1; \
	}
	PCT(locality_target, 0, 100)
	PCT(cpu_headroom, 0, 1000)
	PCT(mem_headroom, 0, 1000)
	PCT(less_busy_margin, 0, 100)
	PCT(max_util, 1, 100)
	PCT(rebalance_util, 0, 100)
#undef PCT
	if (strcmp(name, "min_cpu") == 0) {
		if (!num_in(v, 0, 4096, &d))
			return fail(p, "[policy] min_cpu: must be a number of CPUs 0..4096, got \"%s\"", v);
		pc->min_cpu = d;
		return 1;
	}
	if (strcmp(name, "cooldown") == 0) {
		if (!num_in(v, 0, 86400 * 7, &d))
			return fail(p, "[policy] cooldown: must be seconds 0..604800, got \"%s\"", v);
		pc->cooldown_ns = (int64_t)(d * 1e9);
		return 1;
	}
	if (strcmp(name, "max_moves") == 0) {
		if (parse_u64(v, &u) < 0 || u < 1 || u > 10000)
			return fail(p, "[policy] max_moves: must be an integer 1..10000, got \"%s\"", v);
		pc->max_moves = (unsigned)u;
		return 1;
	}
	if (strcmp(name, "max_migrate_mib") == 0) {
		if (parse_u64(v, &u) < 0 || u > (1ULL << 30))
			return fail(p, "[policy] max_migrate_mib: must be an integer of MiB, got \"%s\"", v);
		pc->max_migrate_bytes = u * MIB;
		return 1;
	}
	if (strcmp(name, "min_free_mib") == 0) {
		if (parse_u64(v, &u) < 0 || u > (1ULL << 30))
			return fail(p, "[policy] min_free_mib: must be an integer of MiB, got \"%s\"", v);
		pc->min_free_bytes = u * MIB;
		return 1;
	}
	return fail(p, "[policy] unknown key \"%s\"", name);
}

static int handler(void *user, const char *sec, const char *name, const char *v)
{
	struct parse_ctx *p = user;
	struct agent_config *c = p->cfg;
	double d;
	bool b;

	if (strcmp(sec, "agent") == 0) {
		if (strcmp(name, "mode") == 0) {
			if (agent_mode_parse(v, &c->mode) < 0)
				return fail(p, "[agent] mode: must be enforce, advise or off, got \"%s\"", v);
			return 1;
		}
		if (strcmp(name, "interval") == 0) {
			if (!num_in(v, 0.1, 86400, &d))
				return fail(p, "[agent] interval: must be seconds 0.1..86400, got \"%s\"", v);
			c->interval_s = d;
			return 1;
		}
		if (strcmp(name, "sample") == 0) {
			if (!num_in(v, 0.05, 60, &d))
				return fail(p, "[agent] sample: must be seconds 0.05..60, got \"%s\"", v);
			c->sample_s = d;
			return 1;
		}
		if (strcmp(name, "history") == 0) {
			if (!num_in(v, 0, 86400, &d))
				return fail(p, "[agent] history: must be seconds 0..86400, got \"%s\"", v);
			c->history_s = d;
			return 1;
		}
		if (strcmp(name, "log_level") == 0) {
			if (log_level_parse(v, &c->log_level) < 0)
				return fail(p, "[agent] log_level: must be error, warn, info or debug, got \"%s\"", v);
			return 1;
		}
		if (strcmp(name, "decision_log") == 0)
			return set_str(&c->decision_log, v);
		if (strcmp(name, "state_dir") == 0) {
			if (!*v || v[0] != '/')
				return fail(p, "[agent] state_dir: must be an absolute path, got \"%s\"", v);
			return set_str(&c->state_dir, v);
		}
#define BOOL(key, field) \
		if (strcmp(name, key) == 0) { \
			if (parse_bool(v, &b) < 0) \
				return fail(p, "[agent] %s: must be yes or no, got \"%s\"", key, v); \
			c->field = b; \
			return 1; \
		}
		BOOL("dry_run", dry_run)
		BOOL("log_syslog", log_syslog)
		BOOL("freeze_during_migration", freeze_during_migration)
		if (strcmp(name, "memory_binding") == 0) {
			if (strcmp(v, "soft") == 0)
				c->strict_mems = false;
			else if (strcmp(v, "strict") == 0)
				c->strict_mems = true;
			else
				return fail(p, "[agent] memory_binding: must be soft or strict, got \"%s\"", v);
			return 1;
		}
#undef BOOL
		return fail(p, "[agent] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "scope") == 0) {
		if (strcmp(name, "cgroup") == 0)
			return cgroup_list_add(p, sec, name, v, &c->cg.nr_scopes, &c->cg.scopes);
		return fail(p, "[scope] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "containers") == 0) {
		if (strcmp(name, "parent") == 0)
			return cgroup_list_add(p, sec, name, v, &c->cg.nr_parents, &c->cg.parents);
		if (strcmp(name, "runc_root") == 0) {
			if (!*v) {
				strv_free(&c->cg.nr_runc_roots, &c->cg.runc_roots);
				return 1;
			}
			if (v[0] != '/')
				return fail(p, "[containers] runc_root: must be an absolute path, got \"%s\"", v);
			strv_push(&c->cg.nr_runc_roots, &c->cg.runc_roots, v);
			return 1;
		}
		return fail(p, "[containers] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "policy") == 0)
		return handle_policy(p, name, v);
	if (strcmp(sec, "api") == 0) {
		if (strcmp(name, "socket") == 0) {
			if (*v && v[0] != '/')
				return fail(p, "[api] socket: must be an absolute path, got \"%s\"", v);
			free(c->api_socket);
			c->api_socket = xstrdup(v); /* "" disables the socket */
			return 1;
		}
		if (strcmp(name, "listen") == 0) {
			if (*v && !strchr(v, ':'))
				return fail(p, "[api] listen: must be ADDR:PORT, got \"%s\"", v);
			return set_str(&c->api_listen, v);
		}
		if (strcmp(name, "token_file") == 0)
			return set_str(&c->api_token_file, v);
		if (strcmp(name, "tls_cert") == 0)
			return set_str(&c->api_tls_cert, v);
		if (strcmp(name, "tls_key") == 0)
			return set_str(&c->api_tls_key, v);
		return fail(p, "[api] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "libvirt") == 0) {
		if (strcmp(name, "enabled") == 0) {
			if (parse_bool(v, &b) < 0)
				return fail(p, "[libvirt] enabled: must be yes or no, got \"%s\"", v);
			c->libvirt_enabled = b;
			return 1;
		}
		if (strcmp(name, "uri") == 0) {
			if (!*v)
				return fail(p, "[libvirt] uri: must not be empty");
			return set_str(&c->libvirt_uri, v);
		}
		if (strcmp(name, "module") == 0) {
			/* empty: the default search (vmplugin.h) */
			if (*v && *v != '/')
				return fail(p, "[libvirt] module: must be an absolute path, got \"%s\"", v);
			return set_str(&c->libvirt_module, v);
		}
		if (strcmp(name, "keepalive_interval") == 0 || strcmp(name, "keepalive_count") == 0) {
			uint64_t u;

			if (parse_u64(v, &u) < 0 || u < 1 || u > 60)
				return fail(p, "[libvirt] %s: must be an integer 1..60, got \"%s\"", name, v);
			if (strcmp(name, "keepalive_interval") == 0)
				c->libvirt_keepalive_interval = (unsigned)u;
			else
				c->libvirt_keepalive_count = (unsigned)u;
			return 1;
		}
		if (strcmp(name, "place_on_start") == 0) {
			if (parse_bool(v, &b) < 0)
				return fail(p, "[libvirt] place_on_start: must be yes or no, got \"%s\"", v);
			c->libvirt_place_on_start = b;
			return 1;
		}
		if (strcmp(name, "place_vcpu_load") == 0) {
			if (!num_in(v, 1, 100, &d))
				return fail(p, "[libvirt] place_vcpu_load: must be a number 1..100 (percent), got \"%s\"", v);
			c->libvirt_place_vcpu_load = d / 100.0;
			return 1;
		}
		if (strcmp(name, "cpus_without_memory") == 0) {
			enum vm_cpus_without_memory m;

			if (vm_cpus_without_memory_parse(v, &m) < 0)
				return fail(p, "[libvirt] cpus_without_memory: must be local, never or always, got \"%s\"", v);
			c->libvirt_cpus_without_memory = (unsigned)m;
			return 1;
		}
		return fail(p, "[libvirt] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "memory") == 0) {
		if (strcmp(name, "kernel_balancing") == 0) {
			enum kbal_setting k;

			if (kbal_setting_parse(v, &k) < 0)
				return fail(p, "[memory] kernel_balancing: must be auto, defer or migrate, got \"%s\"", v);
			c->kernel_balancing = (unsigned)k;
			return 1;
		}
		if (strcmp(name, "mover") == 0) {
			if (parse_bool(v, &b) < 0)
				return fail(p, "[memory] mover: must be yes or no, got \"%s\"", v);
			c->mover = b;
			return 1;
		}
		if (strcmp(name, "workers") == 0) {
			uint64_t u;

			if (parse_u64(v, &u) < 0 || u < 1 || u > 16)
				return fail(p, "[memory] workers: must be an integer 1..16, got \"%s\"", v);
			c->mover_workers = (unsigned)u;
			return 1;
		}
		if (strcmp(name, "rate_mib") == 0) {
			if (!num_in(v, 0, 1048576, &d))
				return fail(p, "[memory] rate_mib: must be MiB/s 0..1048576 (0: no limit), got \"%s\"", v);
			c->mover_rate_mib = d;
			return 1;
		}
		if (strcmp(name, "chunk_ms") == 0) {
			if (!num_in(v, 1, 1000, &d))
				return fail(p, "[memory] chunk_ms: must be milliseconds 1..1000, got \"%s\"", v);
			c->mover_chunk_ms = d;
			return 1;
		}
		if (strcmp(name, "job_timeout") == 0) {
			if (!num_in(v, 1, 86400, &d))
				return fail(p, "[memory] job_timeout: must be seconds 1..86400, got \"%s\"", v);
			c->mover_job_timeout_s = d;
			return 1;
		}
		return fail(p, "[memory] unknown key \"%s\"", name);
	}
	if (strcmp(sec, "schedule") == 0) {
		struct sched_entry se;
		char why[256];

		if (strcmp(name, "window") != 0)
			return fail(p, "[schedule] unknown key \"%s\" (window = DAYS HH:MM-HH:MM KEY=VALUE...)", name);
		if (!*v) {
			sched_free(&c->schedule);
			return 1;
		}
		if (c->schedule.n >= SCHED_MAX_ENTRIES)
			return fail(p, "[schedule] window: at most %d windows", SCHED_MAX_ENTRIES);
		if (sched_parse(v, &se, why, sizeof(why)) < 0)
			return fail(p, "[schedule] window: %s", why);
		sched_add(&c->schedule, &se);
		return 1;
	}
	if (!*sec)
		return fail(p, "key \"%s\" outside any [section]", name);
	return fail(p, "unknown section [%s]", sec);
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
		config_free(tmp);
		return errno ? -errno : -EIO;
	}
	if (line > 0) {
		snprintf(err, errsz, "%s:%d: %s", name, line,
			 p->failed ? p->msg : "syntax error (expected [section] or key = value)");
		config_free(tmp);
		return -EINVAL;
	}
	if (config_validate(tmp, err, errsz) < 0) {
		char buf[512];

		snprintf(buf, sizeof(buf), "%s: %s", name, err);
		snprintf(err, errsz, "%s", buf);
		config_free(tmp);
		return -EINVAL;
	}
	*out = *tmp;
	return 0;
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
	line = ini_parse_file(f, handler, &p);
	fclose(f);
	if (line != 0)
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
				line = ini_parse_file(f, handler, &p);
				fclose(f);
				if (line != 0)
					r = 1;
			}
		}
		free(ents[i]);
	}
	free(ents);
	free(dir);
	if (r < 0) {
		config_free(&tmp);
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
	line = ini_parse_string(text, handler, &p);
	return finish(&p, line, name, &tmp, out, err, errsz);
}
