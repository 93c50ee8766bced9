/* api_write.c — handlers that change things. Each validates its whole
 * request on the API thread first (so a bad request never reaches the
 * engine), then runs one function on the engine thread, which owns the
 * state: the change is applied there in one piece, or not at all.
 */
#include "api_int.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/actuator/apply.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/model/snapjson.h"
#include "../orchestrator/model/plan.h"
#include "../orchestrator/store/setoverlay.h"

#define MIB (1024ULL * 1024ULL)

/* ---- PUT /v1/policy ------------------------------------------------- */

enum pf_kind { PF_PCT, PF_NUM, PF_SEC, PF_COUNT, PF_MIB };

/* The keys and units of numaorchd.conf's [policy] section, so that what
 * an operator writes in the file and sends to the API is the same. */
static const struct pfield {
	const char *name;
	enum pf_kind kind;
	double lo, hi;
	size_t off;
	const char *unit;
	size_t auto_off;             /* also takes "auto": its bool in policy_config (0: a number only) */
} pfields[] = {
	{ "locality_target", PF_PCT, 0, 100, offsetof(struct policy_config, locality_target), "percent", 0 },
	{ "cpu_headroom", PF_PCT, 0, 1000, offsetof(struct policy_config, cpu_headroom), "percent", 0 },
	{ "mem_headroom", PF_PCT, 0, 1000, offsetof(struct policy_config, mem_headroom), "percent", 0 },
	{ "less_busy_margin", PF_PCT, 0, 100, offsetof(struct policy_config, less_busy_margin), "percent", 0 },
	{ "max_util", PF_PCT, 1, 100, offsetof(struct policy_config, max_util), "percent", 0 },
	{ "rebalance_util", PF_PCT, 0, 100, offsetof(struct policy_config, rebalance_util), "percent", 0 },
	{ "min_cpu", PF_NUM, 0, 4096, offsetof(struct policy_config, min_cpu), "CPUs", 0 },
	{ "cooldown", PF_SEC, 0, 604800, offsetof(struct policy_config, cooldown_ns), "seconds",
	  offsetof(struct policy_config, cooldown_auto) },
	{ "max_moves", PF_COUNT, 1, 10000, offsetof(struct policy_config, max_moves), NULL,
	  offsetof(struct policy_config, max_moves_auto) },
	{ "max_migrate_mib", PF_MIB, 0, 1 << 30, offsetof(struct policy_config, max_migrate_bytes), "MiB",
	  offsetof(struct policy_config, max_migrate_auto) },
	{ "min_free_mib", PF_MIB, 0, 1 << 30, offsetof(struct policy_config, min_free_bytes), "MiB", 0 },
	{ "min_free_share", PF_PCT, 0, 100, offsetof(struct policy_config, min_free_share), "percent", 0 },
};
#define NR_PFIELDS (sizeof(pfields) / sizeof(pfields[0]))

struct policy_put {
	struct api *a;
	json_t *body;                /* the request, borrowed: what the settings file keeps */
	bool persisted;              /* out: kept in the state directory */
	bool has_mode, has_interval, has_rev, has_sched;
	struct schedule sched;       /* replaces the windows when has_sched */
	enum agent_mode mode;
	double interval_s;
	bool has[NR_PFIELDS];
	struct policy_config pc;     /* the fields with has[] set */
	char rev[17];
	/* out */
	char err[400];
	bool save_failed;
	struct api_policy now;
	char changed[400];
};

static void pfield_set(struct policy_config *dst, const struct pfield *f, const struct policy_config *src)
{
	if (f->auto_off) {
		bool a = *(const bool *)((const char *)src + f->auto_off);

		*(bool *)((char *)dst + f->auto_off) = a;
		/* auto keeps the number as its fallback (policy.h) */
		if (a)
			return;
	}
	memcpy((char *)dst + f->off, (const char *)src + f->off,
	       f->kind == PF_SEC ? sizeof(int64_t) : f->kind == PF_COUNT ? sizeof(unsigned) :
	       f->kind == PF_MIB ? sizeof(uint64_t) : sizeof(double));
}

static void api_policy_from(struct api_policy *p, const struct agent_config *c)
{
	api_policy_fill(p, c->mode, c->interval_s, &c->policy, &c->schedule);
}

/* PP's fields over NC. */
static void policy_to_config(const struct policy_put *pp, struct agent_config *nc)
{
	if (pp->has_mode)
		nc->mode = pp->mode;
	if (pp->has_interval)
		nc->interval_s = pp->interval_s;
	for (unsigned i = 0; i < NR_PFIELDS; i++)
		if (pp->has[i])
			pfield_set(&nc->policy, &pfields[i], &pp->pc);
	if (pp->has_sched) {
		sched_clear(&nc->schedule);
		sched_copy(&nc->schedule, &pp->sched);
	}
}

static int policy_parse(json_t *body, struct policy_put *pp, struct jreq_err *err);

int api_settings_apply(json_t *settings, struct agent_config *cfg, char *err, size_t errsz)
{
	struct policy_put *pp = xcalloc(1, sizeof(*pp));
	struct jreq_err jerr;
	int r = policy_parse(settings, pp, &jerr);

	if (r < 0)
		snprintf(err, errsz, "%s", jerr.msg);
	else
		policy_to_config(pp, cfg);
	sched_clear(&pp->sched);
	free(pp);
	return r < 0 ? r : config_validate(cfg, err, errsz);
}

static int policy_put_engine(struct engine *e, void *ctx)
{
	struct policy_put *pp = ctx;
	const struct agent_config *cur = engine_config(e);
	struct api_policy before, after;
	struct agent_config nc;
	char rev[17];
	json_t *jb, *ja, *saved = NULL;
	const char *key;
	json_t *val;
	size_t n = 0;
	int dfd = engine_state_dir_fd(e), r;

	api_policy_from(&before, cur);
	if (pp->has_rev) {
		api_policy_revision(&before, rev);
		if (strcmp(rev, pp->rev) != 0) {
			snprintf(pp->err, sizeof(pp->err),
				 "revision: the policy changed since revision %s (now %s); read it again", pp->rev, rev);
			return -ESTALE;
		}
	}
	config_copy(&nc, cur);
	policy_to_config(pp, &nc);
	r = config_validate(&nc, pp->err, sizeof(pp->err));
	/* The file first, as for the per-guest policies: a setting the next
	 * reload or start would forget must not be acknowledged. */
	if (r == 0 && dfd >= 0) {
		char why[300];
		json_t *merged;

		if (setoverlay_load_at(dfd, &saved, why, sizeof(why)) < 0)
			log_warn("%s; replacing it", why);
		merged = setoverlay_merge(saved, pp->body);
		r = setoverlay_save_at(dfd, merged);
		json_decref(merged);
		if (r < 0) {
			log_errno(LOG_LEVEL_ERROR, r, "cannot save the settings in %s", SETOVERLAY_FILE);
			pp->save_failed = true;
		}
	}
	if (r == 0) {
		r = engine_apply_config(e, &nc);
		/* Not in force: not kept either. */
		if (r < 0 && dfd >= 0 && (saved ? setoverlay_save_at(dfd, saved) : setoverlay_remove_at(dfd)) < 0)
			log_error("the settings file %s holds a change that could not be applied", SETOVERLAY_FILE);
	}
	json_decref(saved);
	if (r < 0) {
		config_clear(&nc);
		return r;
	}
	pp->persisted = dfd >= 0;
	api_policy_from(&after, &nc);
	config_clear(&nc);

	/* engine_apply_config republished the view: a GET from now on
	 * shows these values. */
	pp->now = after;

	/* The audit trail: what changed, old and new. */
	jb = api_policy_json(&before);
	ja = api_policy_json(&after);
	json_object_foreach(ja, key, val) {
		json_t *old = json_object_get(jb, key);
		char *os, *ns;

		if (json_equal(old, val))
			continue;
		os = json_dumps(old, JSON_ENCODE_ANY);
		ns = json_dumps(val, JSON_ENCODE_ANY);
		if (n < sizeof(pp->changed))
			n += (size_t)snprintf(pp->changed + n, sizeof(pp->changed) - n, "%s%s %s -> %s",
					      n ? ", " : "", key, os ? os : "?", ns ? ns : "?");
		free(os);
		free(ns);
	}
	json_decref(jb);
	json_decref(ja);
	if (n)
		log_info("policy changed through the API: %s", pp->changed);
	/* The timer was armed with the old interval (an hour, say): a cycle
	 * now re-arms it with the new one. A new mode (advise to enforce,
	 * say) is acted on now too, not at the next interval: an operator
	 * switching the agent on expects it to act. */
	if (before.interval_s != after.interval_s || before.mode != after.mode)
		engine_trigger(e);
	return 0;
}

/* BODY (a PUT /v1/policy request, or the settings file's object) into
 * PP's fields. -EINVAL with ERR filled. */
static int policy_parse(json_t *body, struct policy_put *pp, struct jreq_err *err)
{
	static const char *const allowed[] = {
		"mode", "interval", "revision", "locality_target", "cpu_headroom", "mem_headroom",
		"less_busy_margin", "max_util", "rebalance_util", "min_cpu", "cooldown", "max_moves",
		"max_migrate_mib", "min_free_mib", "min_free_share", "schedule", NULL,
	};
	const char *s;
	int ret;

	if (jreq_only(body, allowed, err) < 0)
		return -EINVAL;
	ret = jreq_string(body, "mode", 16, &s, err);
	if (ret < 0)
		return -EINVAL;
	if (ret > 0) {
		if (agent_mode_parse(s, &pp->mode) < 0) {
			jreq_fail(err, "mode", "must be enforce, advise or off");
			return -EINVAL;
		}
		pp->has_mode = true;
	}
	ret = jreq_number(body, "interval", 0.1, 86400, "seconds", &pp->interval_s, err);
	if (ret < 0)
		return -EINVAL;
	pp->has_interval = ret > 0;
	ret = jreq_string(body, "revision", 16, &s, err);
	if (ret < 0)
		return -EINVAL;
	if (ret > 0) {
		if (strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16) {
			jreq_fail(err, "revision", "must be the 16 hex digits GET /v1/policy returned");
			return -EINVAL;
		}
		memcpy(pp->rev, s, 17);
		pp->has_rev = true;
	}
	for (unsigned i = 0; i < NR_PFIELDS; i++) {
		const struct pfield *f = &pfields[i];
		char *dst = (char *)&pp->pc + f->off;
		json_t *jv = json_object_get(body, f->name);
		double d;
		int64_t n;

		if (f->auto_off && json_is_string(jv) && strcmp(json_string_value(jv), "auto") == 0) {
			*(bool *)((char *)&pp->pc + f->auto_off) = true;
			pp->has[i] = true;
			continue;
		}
		if (f->auto_off && json_is_string(jv)) {
			jreq_fail(err, f->name, "must be \"auto\" or a number%s%s", f->unit ? " of " : "",
				  f->unit ? f->unit : "");
			return -EINVAL;
		}
		if (f->kind == PF_COUNT || f->kind == PF_MIB)
			ret = jreq_int(body, f->name, (int64_t)f->lo, (int64_t)f->hi, f->unit, &n, err);
		else
			ret = jreq_number(body, f->name, f->lo, f->hi, f->unit, &d, err);
		if (ret < 0)
			return -EINVAL;
		if (ret == 0)
			continue;
		pp->has[i] = true;
		switch (f->kind) {
		case PF_PCT: *(double *)dst = d / 100.0; break;
		case PF_NUM: *(double *)dst = d; break;
		case PF_SEC: *(int64_t *)dst = (int64_t)llround(d * 1e9); break;
		case PF_COUNT: *(unsigned *)dst = (unsigned)n; break;
		case PF_MIB: *(uint64_t *)dst = (uint64_t)n * MIB; break;
		}
	}

	/* "schedule": the whole list of windows, replacing the old one. */
	{
		json_t *w = json_object_get(body, "schedule"), *item;
		size_t i;

		if (w) {
			if (!json_is_array(w)) {
				jreq_fail(err, "schedule", "must be an array of window strings, e.g. "
					  "[\"Mon-Fri 08:00-18:00 mode=advise\"]");
				return -EINVAL;
			}
			if (json_array_size(w) > SCHED_MAX_ENTRIES) {
				jreq_fail(err, "schedule", "at most %d windows", SCHED_MAX_ENTRIES);
				return -EINVAL;
			}
			pp->has_sched = true;
			json_array_foreach(w, i, item) {
				struct sched_entry se;
				char field[32], why[256];

				snprintf(field, sizeof(field), "schedule[%zu]", i);
				if (!json_is_string(item) ||
				    strlen(json_string_value(item)) != json_string_length(item)) {
					jreq_fail(err, field, "must be a string without NUL");
					return -EINVAL;
				}
				if (sched_parse(json_string_value(item), &se, why, sizeof(why)) < 0) {
					jreq_fail(err, field, "%s", why);
					return -EINVAL;
				}
				sched_add(&pp->sched, &se);
			}
		}
	}

	return 0;
}

void h_policy_put(struct rq *r)
{
	struct policy_put *pp = xcalloc(1, sizeof(*pp));
	struct jreq_err err;
	json_t *o, *changed;
	char rev[17];
	int ret;

	pp->a = r->a;
	pp->body = r->body;
	if (policy_parse(r->body, pp, &err) < 0)
		goto bad;
	ret = api_engine_run(r->a, policy_put_engine, pp);
	if (ret == -ESTALE) {
		problem(r, 409, "conflict", "revision", "%s", pp->err);
	} else if (ret == -EINVAL && pp->err[0]) {
		problem(r, 409, "conflict", NULL, "the policy would be inconsistent: %s", pp->err);
	} else if (ret < 0 && pp->save_failed) {
		problem(r, 500, "internal", NULL, "cannot store the settings in the state directory (%s): %s; "
			"nothing was changed", SETOVERLAY_FILE, strerror(-ret));
	} else if (ret < 0) {
		engine_failure(r, ret, "the new policy could not be applied (the old one stays)");
	} else {
		o = api_policy_json(&pp->now);
		api_policy_revision(&pp->now, rev);
		json_object_set_new(o, "revision", json_string(rev));
		changed = json_string(pp->changed[0] ? pp->changed : "nothing");
		api_reply_json(r, 200, json_pack("{s:o, s:o, s:s, s:b}", "policy", o, "changed", changed, "applies",
					     "from the next cycle", "persisted", pp->persisted));
	}
	sched_clear(&pp->sched);
	free(pp);
	return;
bad:
	problem_jerr(r, &err);
	sched_clear(&pp->sched);
	free(pp);
}

/* ---- DELETE /v1/policy: drop the settings set through the API --------- */

struct policy_reset {
	struct api *a;
	bool had;                    /* out: there was a settings file */
	struct api_policy now;       /* out */
};

static int policy_reset_engine(struct engine *e, void *ctx)
{
	struct policy_reset *pr = ctx;
	int dfd = engine_state_dir_fd(e), r;
	char why[300];
	json_t *old = NULL;

	if (dfd >= 0) {
		r = setoverlay_load_at(dfd, &old, why, sizeof(why));
		pr->had = old || r < 0;
		json_decref(old);
		r = setoverlay_remove_at(dfd);
		if (r < 0)
			return log_errno(LOG_LEVEL_ERROR, r, "cannot remove %s", SETOVERLAY_FILE);
	}
	log_info("policy: the settings set through the API dropped; reloading the configuration file");
	/* The file and the command line again, now: what a SIGHUP does. */
	r = engine_reload(e);
	if (r < 0 && r != -ENOENT)
		return r;
	/* engine_apply_config republished the view: GET shows this at once. */
	api_policy_from(&pr->now, engine_config(e));
	engine_trigger(e);
	return 0;
}

void h_policy_delete(struct rq *r)
{
	struct policy_reset pr = { .a = r->a };
	char rev[17];
	json_t *o;
	int ret = api_engine_run(r->a, policy_reset_engine, &pr);

	if (ret == -EINVAL) {
		problem(r, 409, "conflict", NULL, "the settings set through the API were dropped, but the "
			"configuration file could not be loaded (the log says why); the settings in force stay "
			"until a reload succeeds");
	} else if (ret < 0 && ret != -EBUSY && ret != -ESHUTDOWN) {
		problem(r, 500, "internal", NULL, "cannot remove %s from the state directory: %s; nothing was changed",
			SETOVERLAY_FILE, strerror(-ret));
	} else if (ret < 0) {
		engine_failure(r, ret, "reset the policy");
	} else {
		o = api_policy_json(&pr.now);
		api_policy_revision(&pr.now, rev);
		json_object_set_new(o, "revision", json_string(rev));
		api_reply_json(r, 200, json_pack("{s:o, s:b, s:s}", "policy", o, "dropped", pr.had, "applies",
					     "from the next cycle"));
	}
}

/* ---- PUT/DELETE /v1/guests/{id}/policy ------------------------------- */

struct gpol_put {
	struct api *a;
	char id[GUEST_ID_MAX];
	bool clear;
	struct guest_policy pol;
	struct gpol_record rec;    /* out */
};

static int gpol_engine(struct engine *e, void *ctx)
{
	struct gpol_put *gp = ctx;
	int r;

	/* The file first: an override the agent would forget at its next
	 * start must not be acknowledged. */
	r = gpolstore_set(gp->a->gs, gp->id, gp->clear ? NULL : &gp->pol, clock_real_ns());
	if (r < 0)
		return r;
	if (gp->clear) {
		log_info("guest policy of %s cleared through the API", gp->id);
	} else {
		char nodes[NODELIST_BUFSZ] = "";

		mask_format(&gp->pol.nodes, nodes, sizeof(nodes));
		log_info("guest policy of %s set through the API: %s%s%s%s%s", gp->id, gpol_mode_name(gp->pol.mode),
			 nodes[0] ? " " : "", nodes, gp->pol.devices != GPOL_DEV_PREFER ? ", devices " : "",
			 gp->pol.devices != GPOL_DEV_PREFER ? gpol_devices_name(gp->pol.devices) : "");
		gpolstore_get(gp->a->gs, gp->id, &gp->rec);
	}
	/* An operator's order is acted on in a second or so, not at the
	 * next interval (15 s by default): a cycle now, no sooner than
	 * ENGINE_TRIGGER_GAP_S after the last, so a client's stream of
	 * changes costs at most one cycle a second. */
	engine_trigger(e);
	return 0;
}

/* "0-1,3" or [0, 1, 3] into OUT, field FIELD's value. */
static int parse_nodes_of(json_t *v, const char *field, nodemask_t *out, struct jreq_err *err)
{
	char got[64];

	mask_zero(out);
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (!*s || strspn(s, "0123456789,-") != strlen(s) || mask_parse(s, out) < 0) {
			jreq_show(v, got, sizeof(got));
			jreq_fail(err, field, "must be a node list such as \"0-1,3\" (node ids 0..%d), got %s",
				  MASK_MAX_NODES - 1, got);
			return -EINVAL;
		}
		return 0;
	}
	if (json_is_array(v) && json_array_size(v) > 0 && json_array_size(v) <= MASK_MAX_NODES) {
		size_t i;
		json_t *x;

		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) >= MASK_MAX_NODES)
				goto bad;
			mask_set(out, (unsigned)json_integer_value(x));
		}
		return 0;
	}
bad:
	jreq_show(v, got, sizeof(got));
	jreq_fail(err, field, "must be a node list string such as \"0-1\" or an array of node ids, got %s", got);
	return -EINVAL;
}

/* "0-1,3" or [0, 1, 3] into OUT. */
static int parse_nodes(json_t *v, nodemask_t *out, struct jreq_err *err)
{
	return parse_nodes_of(v, "nodes", out, err);
}

void h_guest_policy_put(struct rq *r)
{
	static const char *const allowed[] = { "mode", "nodes", "devices", "provision", NULL };
	struct gpol_put *gp;
	struct engine_view *v;
	const struct snap_guest *g;
	struct jreq_err err;
	const char *mode, *devices = NULL;
	json_t *nodes;
	bool provision = false;
	int ret;

	if (jreq_only(r->body, allowed, &err) < 0 || jreq_bool(r->body, "provision", &provision, &err) < 0 ||
	    jreq_string(r->body, "devices", 16, &devices, &err) < 0 ||
	    (ret = jreq_string(r->body, "mode", 16, &mode, &err)) < 0) {
		problem_jerr(r, &err);
		return;
	}
	if (ret == 0) {
		problem(r, 400, "invalid-field", "mode", "mode: required (auto, pinned or ignore)");
		return;
	}
	gp = xcalloc(1, sizeof(*gp));
	gp->a = r->a;
	snprintf(gp->id, sizeof(gp->id), "%s", r->id);
	gp->pol.source = GPOL_SRC_API;
	if (gpol_mode_parse(mode, &gp->pol.mode) < 0) {
		problem(r, 400, "invalid-field", "mode", "mode: must be auto, pinned or ignore");
		goto out;
	}
	if (devices && gpol_devices_parse(devices, &gp->pol.devices) < 0) {
		problem(r, 400, "invalid-field", "devices", "devices: must be prefer, require or ignore");
		goto out;
	}
	nodes = json_object_get(r->body, "nodes");
	if (gp->pol.mode == GPOL_PINNED && !nodes) {
		problem(r, 400, "invalid-field", "nodes", "nodes: required with mode pinned");
		goto out;
	}
	if (gp->pol.mode != GPOL_PINNED && nodes) {
		problem(r, 400, "invalid-field", "nodes", "nodes: only with mode pinned");
		goto out;
	}
	if (nodes && parse_nodes(nodes, &gp->pol.nodes, &err) < 0) {
		problem_jerr(r, &err);
		goto out;
	}
	/* Pins are checked against the host as it is now: a node it does not
	 * have, or one without CPUs, could never be honoured. */
	v = need_view(r);
	if (!v)
		goto out;
	g = snap_find_guest(v->snap, r->id);
	/* A mistyped id stored silently would wait for a guest that never
	 * comes: a guest not seen by the last cycle needs the caller to say
	 * it is one yet to start. */
	if (!g && !provision) {
		problem(r, 404, "not-found", "id",
			"no guest %s on this host (as of cycle #%llu); to set a policy for a guest yet to "
			"start, send \"provision\": true (numaorchctl guest-policy --provision)", r->id,
			(unsigned long long)v->snap->seq);
		goto out;
	}
	if (gp->pol.mode == GPOL_PINNED) {
		nodemask_t cpu_nodes;
		char have[NODELIST_BUFSZ], want[NODELIST_BUFSZ];

		mask_zero(&cpu_nodes);
		for (unsigned n = 0; n < v->snap->nr_nodes; n++)
			if (v->snap->nodes[n].nr_cpus)
				mask_set(&cpu_nodes, v->snap->nodes[n].id);
		if (!mask_subset(&gp->pol.nodes, &cpu_nodes)) {
			mask_format(&cpu_nodes, have, sizeof(have));
			mask_format(&gp->pol.nodes, want, sizeof(want));
			problem(r, 409, "conflict", "nodes",
				"nodes: %s are not all NUMA nodes with CPUs on this host (those are %s)", want, have);
			goto out;
		}
		/* Only the pinned nodes that have memory must be allowed memory
		 * nodes: a memory-less CPU node takes its memory elsewhere. */
		nodemask_t mem_part;

		mask_zero(&mem_part);
		for (unsigned n = 0; n < v->snap->nr_nodes; n++)
			if (v->snap->nodes[n].mem_total && mask_test(&gp->pol.nodes, v->snap->nodes[n].id))
				mask_set(&mem_part, v->snap->nodes[n].id);
		if (g && !mask_empty(&g->allowed_mems) && !mask_subset(&mem_part, &g->allowed_mems)) {
			mask_format(&g->allowed_mems, have, sizeof(have));
			mask_format(&mem_part, want, sizeof(want));
			problem(r, 409, "conflict", "nodes",
				"nodes: memory nodes %s are outside what the guest's parent cgroup allows (%s)",
				want, have);
			goto out;
		}
	}
	ret = api_engine_run(r->a, gpol_engine, gp);
	if (ret == -ENOSPC)
		problem(r, 409, "conflict", NULL, "too many per-guest policies (at most %u); clear some first",
			GPOLSTORE_MAX);
	else if (ret < 0 && ret != -EBUSY && ret != -ESHUTDOWN)
		problem(r, 500, "internal", NULL, "cannot store the policy in %s: %s; nothing was changed",
			gpolstore_path(r->a->gs) ? gpolstore_path(r->a->gs) : "(no state directory)",
			strerror(-ret));
	else if (ret < 0)
		engine_failure(r, ret, "set policy");
	else
		api_reply_json(r, 200, api_gpol_record_json(&gp->rec, g != NULL));
out:
	free(gp);
}

void h_guest_policy_delete(struct rq *r)
{
	struct gpol_put *gp = xcalloc(1, sizeof(*gp));
	int ret;

	gp->a = r->a;
	gp->clear = true;
	snprintf(gp->id, sizeof(gp->id), "%s", r->id);
	ret = api_engine_run(r->a, gpol_engine, gp);
	if (ret == -ENOENT) {
		problem(r, 404, "not-found", "id", "no per-guest policy is set for %s", r->id);
	} else if (ret == -EBUSY || ret == -ESHUTDOWN) {
		engine_failure(r, ret, "clear policy");
	} else if (ret < 0) {
		problem(r, 500, "internal", NULL, "cannot update %s: %s; nothing was changed",
			gpolstore_path(r->a->gs) ? gpolstore_path(r->a->gs) : "(no state directory)",
			strerror(-ret));
	} else {
		api_set_body(r->resp, 204, NULL, xstrdup(""), 0);
	}
	free(gp);
}

/* ---- POST /v1/rebalance -------------------------------------------- */

/* Requests coalesce: one that arrives while another with the same
 * dry_run waits for the engine joins it and gets the same cycle's
 * answer, so a burst of requests costs one cycle, not one each. The
 * fields below the line are under a->rb_lock. */
struct rebalance {
	struct api *a;
	bool dry_run;
	struct cycle_report rep;     /* written by the cycle, then read-only */
	/* --- */
	unsigned refs;
	bool started, done;
	int ret;
};

static int rebalance_engine(struct engine *e, void *ctx)
{
	struct rebalance *rb = ctx;
	struct api *a = rb->a;

	pthread_mutex_lock(&a->rb_lock);
	rb->started = true;
	if (a->rb_pending[rb->dry_run] == rb)
		a->rb_pending[rb->dry_run] = NULL;
	pthread_mutex_unlock(&a->rb_lock);
	return engine_cycle(e, rb->dry_run, &rb->rep);
}

/* The pending request for DRY_RUN joined, or a new one run; its result. */
static int rebalance_run(struct api *a, bool dry_run, struct rebalance **out)
{
	struct rebalance *rb;
	int ret;

	pthread_mutex_lock(&a->rb_lock);
	rb = a->rb_pending[dry_run];
	if (rb && !rb->started) {
		rb->refs++;
		a->rb_joined++;
		while (!rb->done)
			pthread_cond_wait(&a->rb_cond, &a->rb_lock);
		ret = rb->ret;
		pthread_mutex_unlock(&a->rb_lock);
		*out = rb;
		return ret;
	}
	rb = xcalloc(1, sizeof(*rb));
	rb->a = a;
	rb->dry_run = dry_run;
	rb->refs = 1;
	a->rb_pending[dry_run] = rb;
	pthread_mutex_unlock(&a->rb_lock);
	ret = api_engine_run(a, rebalance_engine, rb);
	pthread_mutex_lock(&a->rb_lock);
	if (a->rb_pending[dry_run] == rb)
		a->rb_pending[dry_run] = NULL;
	rb->done = true;
	rb->ret = ret;
	pthread_cond_broadcast(&a->rb_cond);
	pthread_mutex_unlock(&a->rb_lock);
	*out = rb;
	return ret;
}

static void rebalance_put(struct rebalance *rb)
{
	struct api *a = rb->a;
	bool last;

	pthread_mutex_lock(&a->rb_lock);
	last = --rb->refs == 0;
	pthread_mutex_unlock(&a->rb_lock);
	if (last) {
		cycle_report_clear(&rb->rep);
		free(rb);
	}
}

void h_rebalance(struct rq *r)
{
	static const char *const allowed[] = { "dry_run", "verbose", NULL };
	struct rebalance *rb;
	struct jreq_err err;
	bool verbose = false, dry_run = false;
	unsigned moved = 0, failed = 0, skipped = 0, planned = 0;
	const struct plan *p;
	json_t *o, *res, *plan = json_null();
	int ret;

	if (jreq_only(r->body, allowed, &err) < 0 || jreq_bool(r->body, "dry_run", &dry_run, &err) < 0 ||
	    jreq_bool(r->body, "verbose", &verbose, &err) < 0) {
		problem_jerr(r, &err);
		return;
	}
	ret = rebalance_run(r->a, dry_run, &rb);
	if (ret < 0) {
		engine_failure(r, ret, "the cycle failed (see the agent's log)");
		rebalance_put(rb);
		return;
	}
	p = rb->rep.view ? rb->rep.view->plan : NULL;
	res = json_array();
	for (unsigned i = 0; p && i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		if (it->kind == PLAN_MOVE)
			planned++;
		if (i >= rb->rep.nr_results || !rb->rep.attempted[i])
			continue;
		const struct apply_result *ar = &rb->rep.results[i];

		if (ar->status == APPLY_DONE)
			moved++;
		else if (ar->status == APPLY_FAILED || ar->status == APPLY_FAILED_PARTIAL ||
			 ar->status == APPLY_REFUSED)
			failed++;
		else
			skipped++;
		json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:o, s:o}",
			"guest", it->guest_id, "outcome", apply_status_name(ar->status),
			"message", ar->msg, "duration_s", snapj_real_or_null(ar->duration_s),
			"locality_after", snapj_real_or_null(ar->locality_after)));
	}
	if (p) {
		json_t *items;
		size_t i;
		json_t *x;

		plan = plan_to_json(p);
		items = json_object_get(plan, "items");
		/* Settled guests are most of a healthy host: only on request. */
		for (i = json_array_size(items); !verbose && i-- > 0;) {
			x = json_array_get(items, i);
			if (strcmp(json_string_value(json_object_get(x, "kind")), "settled") == 0)
				json_array_remove(items, i);
		}
	}
	o = json_pack("{s:b, s:b, s:s, s:I, s:o, s:o, s:o, s:{s:i, s:i, s:i, s:i}}",
		      "dry_run", dry_run || !rb->rep.applied, "applied", rb->rep.applied,
		      "mode", agent_mode_name(rb->rep.view ? rb->rep.view->mode : MODE_OFF),
		      "seq", (json_int_t)(rb->rep.view && rb->rep.view->snap ? rb->rep.view->snap->seq : 0),
		      "duration_s", snapj_real_or_null(rb->rep.view ? rb->rep.view->stats.last_cycle_s : NAN),
		      "plan", plan, "results", res,
		      "summary", "planned_moves", (int)planned, "moved", (int)moved, "failed", (int)failed,
		      "skipped", (int)skipped);
	rebalance_put(rb);
	api_reply_json(r, 200, o);
}

/* ---- POST /v1/placements ------------------------------------------- */

struct placement {
	double cpus;
	uint64_t mem_bytes;
	unsigned busy_threads;    /* 0: not given */
	nodemask_t dev_nodes;     /* its devices' nodes (device_nodes) */
	enum gpol_devices devices;
	bool devices_given;       /* else the host's [policy] devices */
	double reserve_s;
	char label[GUEST_ID_MAX];
	/* out */
	struct advice adv;
	struct engine_view *view;
	uint64_t res_id;
	unsigned nr_res;
};

static int placement_engine(struct engine *e, void *ctx)
{
	struct placement *pl = ctx;
	const struct advice_reservation *res;
	struct advice_request req;
	int r;

	pl->view = engine_view_get(e);
	if (!pl->view || !pl->view->snap)
		return -EAGAIN;
	memset(&req, 0, sizeof(req));
	req.cpus = pl->cpus;
	req.mem_bytes = pl->mem_bytes;
	req.busy_threads = pl->busy_threads;
	req.dev_nodes = pl->dev_nodes;
	req.nr_devices = mask_count(&pl->dev_nodes);
	req.devices = pl->devices_given ? pl->devices : engine_config(e)->policy.devices;
	req.nr_reservations = engine_reservations(e, &res);
	req.reservations = res;
	r = engine_policy(e)->advise(&engine_config(e)->policy, pl->view->snap, &req, &pl->adv);
	if (r < 0)
		return r;
	if (pl->adv.ok && pl->reserve_s > 0) {
		struct advice_reservation ar = { .cpus = pl->cpus, .mem_bytes = pl->mem_bytes };

		/* CPU nodes and memory nodes both: the guest's memory lands on
		 * the latter, which may be memory-only nodes. */
		mask_or(&ar.nodes, &pl->adv.nodes, &pl->adv.mems);
		pl->res_id = engine_reserve_placement(e, &ar, &pl->adv.nodes, &pl->adv.mems, pl->reserve_s,
						      pl->label[0] ? pl->label : NULL);
	}
	pl->nr_res = engine_reservations(e, &res);
	return 0;
}

void h_placements(struct rq *r)
{
	static const char *const allowed[] = { "vcpus", "memory_mib", "busy_threads", "reserve_seconds", "label",
					       "device_nodes", "devices", NULL };
	struct placement *pl = xcalloc(1, sizeof(*pl));
	struct jreq_err err;
	int64_t vcpus, mib, thr = 0;
	const char *label = NULL, *devices = NULL;
	json_t *dn;
	double reserve = 0;
	int ret;

	if (jreq_only(r->body, allowed, &err) < 0 ||
	    (ret = jreq_int(r->body, "vcpus", 1, MASK_MAX_CPUS, "CPUs", &vcpus, &err)) < 0)
		goto bad;
	if (ret == 0) {
		jreq_fail(&err, "vcpus", "required");
		goto bad;
	}
	if ((ret = jreq_int(r->body, "memory_mib", 0, 1LL << 30, "MiB", &mib, &err)) < 0)
		goto bad;
	if (ret == 0) {
		jreq_fail(&err, "memory_mib", "required");
		goto bad;
	}
	/* Its busy threads (a VM: its vCPUs): counted against free cores
	 * and last-level caches where the host shows them. */
	if (jreq_int(r->body, "busy_threads", 1, MASK_MAX_CPUS, "threads", &thr, &err) < 0)
		goto bad;
	if (jreq_number(r->body, "reserve_seconds", 0, 86400, "seconds", &reserve, &err) < 0 ||
	    jreq_string(r->body, "label", GUEST_ID_MAX - 1, &label, &err) < 0 ||
	    jreq_string(r->body, "devices", 16, &devices, &err) < 0)
		goto bad;
	/* The nodes of the devices it will have (a PCI function's
	 * /sys/bus/pci/devices/ADDR/numa_node; numaorchctl advise --device
	 * reads it), and what they weigh. */
	dn = json_object_get(r->body, "device_nodes");
	if (dn && !json_is_null(dn) && parse_nodes_of(dn, "device_nodes", &pl->dev_nodes, &err) < 0)
		goto bad;
	if (devices && gpol_devices_parse(devices, &pl->devices) < 0) {
		jreq_fail(&err, "devices", "must be prefer, require or ignore");
		goto bad;
	}
	pl->devices_given = devices != NULL;
	pl->cpus = (double)vcpus;
	pl->mem_bytes = (uint64_t)mib * MIB;
	pl->busy_threads = (unsigned)thr;
	pl->reserve_s = reserve;
	if (label)
		snprintf(pl->label, sizeof(pl->label), "%s", label);
	if (!need_view(r))
		goto out;
	ret = api_engine_run(r->a, placement_engine, pl);
	if (ret == -EAGAIN) {
		need_view(r);
	} else if (ret < 0) {
		engine_failure(r, ret, "placement advice failed");
	} else {
		const struct snapshot *s = pl->view->snap;
		cpumask_t cpus;
		json_t *o;

		snap_nodes_to_cpus(s, &pl->adv.nodes, &cpus);
		o = json_pack("{s:b, s:s, s:I}", "ok", pl->adv.ok, "detail", pl->adv.detail,
			      "seq", (json_int_t)s->seq);
		if (pl->adv.ok) {
			json_object_set_new(o, "nodes", snapj_nodemask(&pl->adv.nodes));
			json_object_set_new(o, "mems", snapj_nodemask(&pl->adv.mems));
			json_object_set_new(o, "cpus", snapj_cpumask(&cpus));
			json_object_set_new(o, "load_after", snapj_real_or_null(pl->adv.load_after));
			json_object_set_new(o, "mem_free_after_mib",
					    json_integer((json_int_t)(pl->adv.mem_free_after / MIB)));
		}
		if (pl->res_id)
			json_object_set_new(o, "reservation",
					    json_pack("{s:I, s:f, s:o}", "id", (json_int_t)pl->res_id,
						      "seconds", reserve,
						      "label", pl->label[0] ? json_string(pl->label) : json_null()));
		else
			json_object_set_new(o, "reservation", json_null());
		json_object_set_new(o, "active_reservations", json_integer(pl->nr_res));
		api_reply_json(r, 200, o);
	}
	goto out;
bad:
	problem_jerr(r, &err);
out:
	engine_view_unref(pl->view);
	free(pl);
}

/* ---- POST /v1/events ------------------------------------------------ */

static bool uuid_valid(const char *s)
{
	if (strlen(s) != 36)
		return false;
	for (unsigned i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	}
	return true;
}

/* A libvirt hook (or anything that knows a guest just started or went
 * away) asks for a prompt cycle. It answers at once; the hook must not
 * wait on the agent (libvirt blocks on its hooks). */
void h_events(struct rq *r)
{
	static const char *const allowed[] = { "source", "event", "domain", "uuid", NULL };
	const char *source, *event, *domain, *uuid = NULL;
	struct jreq_err err;
	int ev = -1, ret;

	if (jreq_only(r->body, allowed, &err) < 0 ||
	    (ret = jreq_string(r->body, "source", 64, &source, &err)) < 0)
		goto bad;
	if (ret == 0) {
		jreq_fail(&err, "source", "required (who sends the event, e.g. \"libvirt-hook\")");
		goto bad;
	}
	if ((ret = jreq_string(r->body, "event", 16, &event, &err)) < 0)
		goto bad;
	for (unsigned i = 0; ret > 0 && i < API_NR_EVENTS; i++)
		if (strcmp(event, api_event_names[i]) == 0)
			ev = (int)i;
	if (ev < 0) {
		jreq_fail(&err, "event", "must be started, stopped, release or reconnect");
		goto bad;
	}
	if ((ret = jreq_string(r->body, "domain", 255, &domain, &err)) < 0)
		goto bad;
	if (ret == 0) {
		jreq_fail(&err, "domain", "required (the domain's name)");
		goto bad;
	}
	if (jreq_string(r->body, "uuid", 36, &uuid, &err) < 0)
		goto bad;
	if (uuid && !uuid_valid(uuid)) {
		jreq_fail(&err, "uuid", "must be a UUID such as 4dea22b3-1d52-d8f3-2516-782e98ab3fa0");
		goto bad;
	}
	__atomic_add_fetch(&r->a->events[ev], 1, __ATOMIC_RELAXED);
	{
		char src[80], dom[270];
		json_t *j1 = api_json_tame(source, 64), *j2 = api_json_tame(domain, 255);

		snprintf(src, sizeof(src), "%s", json_string_value(j1));
		snprintf(dom, sizeof(dom), "%s", json_string_value(j2));
		json_decref(j1);
		json_decref(j2);
		/* Only the event that asked for the cycle is logged at info: a
		 * flood that rides on a pending cycle must not fill the log. */
		if (engine_trigger(r->a->e))
			log_info("event from %s: domain %s %s%s%s; cycle requested", src, dom, event,
				 uuid ? " uuid " : "", uuid ? uuid : "");
		else
			log_debug("event from %s: domain %s %s%s%s; a cycle is already pending", src, dom,
				  event, uuid ? " uuid " : "", uuid ? uuid : "");
	}
	api_reply_json(r, 202, json_pack("{s:b}", "accepted", 1));
	return;
bad:
	problem_jerr(r, &err);
}
