/* nrtx.c — numaorch-nrt-export's pure parts (nrtx.h). */
#include "nrtx.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NRT_API_VERSION "topology.node.k8s.io/v1alpha2"

json_t *nrtx_object(const json_t *agent, const char *node, const char *rv, char *err, size_t errsz)
{
	json_t *zones = json_object_get(agent, "zones"), *attrs = json_object_get(agent, "attributes");
	json_t *pol = json_object_get(agent, "topologyPolicies"), *meta, *obj;

	if (!json_is_object(agent) || !json_is_array(zones) || !json_array_size(zones)) {
		snprintf(err, errsz, "the agent's /v1/topology reply has no zones");
		return NULL;
	}
	if (!node || !*node) {
		snprintf(err, errsz, "no node name");
		return NULL;
	}
	meta = json_pack("{s:s, s:{s:s}}", "name", node, "labels", "app.kubernetes.io/managed-by", NRTX_MANAGED_BY);
	if (rv)
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	obj = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", NRT_API_VERSION, "kind", "NodeResourceTopology",
			"metadata", meta, "zones", zones);
	/* topologyPolicies is required by the v1alpha2 schema, even empty. */
	json_object_set_new(obj, "topologyPolicies", json_is_array(pol) ? json_copy(pol) : json_array());
	if (json_is_array(attrs))
		json_object_set(obj, "attributes", attrs);
	return obj;
}

/* Attributes that differ between any two readings of an idle host. */
static int volatile_attr(const char *name)
{
	static const char *const names[] = { "numaorch.io/measured-at", "numaorch.io/snapshot-seq",
					     "numaorch.io/sample-window-seconds" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

/* A copy of O without metadata and the volatile top-level attributes. */
static json_t *content(const json_t *o)
{
	json_t *c = json_deep_copy(o), *attrs, *kept = json_array(), *a;
	size_t i;

	if (!json_is_object(c)) {
		json_decref(kept);
		return c;
	}
	json_object_del(c, "metadata");
	attrs = json_object_get(c, "attributes");
	json_array_foreach(attrs, i, a) {
		const char *name = json_string_value(json_object_get(a, "name"));

		if (!name || !volatile_attr(name))
			json_array_append(kept, a);
	}
	json_object_set_new(c, "attributes", kept);
	return c;
}

int nrtx_same(const json_t *a, const json_t *b)
{
	json_t *ca, *cb;
	int same;

	if (!a || !b)
		return !a && !b;
	ca = content(a);
	cb = content(b);
	same = json_equal(ca, cb);
	json_decref(ca);
	json_decref(cb);
	return same;
}

enum nrtx_why nrtx_decide(const struct nrtx_sched *s, int changed, uint64_t now_ns, uint64_t heartbeat_ns)
{
	if (s->failures)
		return now_ns >= s->retry_at_ns ? NRTX_RETRY : NRTX_SKIP;
	if (!s->written)
		return NRTX_FIRST;
	if (changed)
		return NRTX_CHANGED;
	if (now_ns - s->last_write_ns >= heartbeat_ns)
		return NRTX_HEARTBEAT;
	return NRTX_SKIP;
}

const char *nrtx_why_name(enum nrtx_why w)
{
	static const char *const names[] = { [NRTX_SKIP] = "skip", [NRTX_FIRST] = "first",
					     [NRTX_CHANGED] = "changed", [NRTX_HEARTBEAT] = "heartbeat",
					     [NRTX_RETRY] = "retry" };

	return (unsigned)w < sizeof(names) / sizeof(names[0]) ? names[w] : NULL;
}

uint64_t nrtx_backoff(unsigned failures, uint64_t base_ns, uint64_t max_ns)
{
	uint64_t d = base_ns;

	for (unsigned i = 1; i < failures && d < max_ns; i++)
		d *= 2;
	return d < max_ns ? d : max_ns;
}

static int ok(long status)
{
	return status == 200 || status == 201;
}

enum nrtx_step nrtx_next(enum nrtx_step step, long status, int *retried)
{
	switch (step) {
	case NRTX_GET:
		if (status == 200)
			return NRTX_PUT;
		return status == 404 ? NRTX_POST : NRTX_FAIL;
	case NRTX_POST:
	case NRTX_PUT:
		if (ok(status))
			return NRTX_DONE;
		/* 409: written (or, for a POST, created) by someone else since
		 * our GET; 404 on a PUT: deleted since. Either way what we read
		 * is stale: read again, once. */
		if ((status == 409 || (step == NRTX_PUT && status == 404)) && !*retried) {
			*retried = 1;
			return NRTX_GET;
		}
		return NRTX_FAIL;
	default:
		return NRTX_FAIL;
	}
}

const char *nrtx_step_method(enum nrtx_step s)
{
	static const char *const names[] = { [NRTX_GET] = "GET", [NRTX_POST] = "POST", [NRTX_PUT] = "PUT" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : NULL;
}

int nrtx_resource_version(const char *body, char *buf, size_t sz)
{
	json_t *j = json_loads(body, 0, NULL);
	const char *rv = json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
	int r = -EINVAL;

	if (rv && *rv && strlen(rv) < sz) {
		snprintf(buf, sz, "%s", rv);
		r = 0;
	}
	json_decref(j);
	return r;
}

void nrtx_server_message(const char *body, char *buf, size_t sz)
{
	json_t *j = json_loads(body ? body : "", 0, NULL);
	const char *msg = json_string_value(json_object_get(j, "message"));
	const char *reason = json_string_value(json_object_get(j, "reason"));

	if (msg && reason && *reason)
		snprintf(buf, sz, "%s (%s)", msg, reason);
	else if (msg)
		snprintf(buf, sz, "%s", msg);
	else if (body && *body)
		snprintf(buf, sz, "%.*s", (int)strcspn(body, "\r\n"), body);
	else
		snprintf(buf, sz, "(empty reply)");
	json_decref(j);
}
