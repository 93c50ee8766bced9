/* api.c — routing, authentication, problem replies, engine calls and
 * request counters. The handlers are in api_read.c (answers from the
 * published view), api_write.c (changes, on the engine thread) and
 * api_metrics.c.
 */
#include "api_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

const double api_buckets[API_NR_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

const char *const api_event_names[API_NR_EVENTS] = { "started", "stopped", "release", "reconnect" };

enum {
	M_BODY = 1u << 0,          /* takes a JSON object body */
	M_BODY_OPTIONAL = 1u << 1, /* ... which may be empty */
	M_HEAVY = 1u << 2,         /* a large answer: one of API_HEAVY_MAX at a time */
};

struct method_entry {
	const char *method;
	api_handler fn;
	unsigned flags;
	const char *const *params;   /* query parameters it takes; NULL: none */
};

struct route {
	enum api_route_id id;
	const char *path;
	const char *segs[5];         /* "{id}" stands for a guest id */
	const char *allow;
	struct method_entry m[3];
};

static const char *const p_guests[] = { "kind", "runtime", "node", "limit", "after", NULL };
static const char *const p_decisions[] = { "since", "limit", "guest", NULL };
static const char *const p_page[] = { "limit", "after", NULL };

static const struct route routes[] = {
	{ R_HEALTH, "/v1/health", { "v1", "health" }, "GET, HEAD", { { "GET", h_health, 0, NULL } } },
	{ R_STATUS, "/v1/status", { "v1", "status" }, "GET, HEAD", { { "GET", h_status, 0, NULL } } },
	{ R_NODES, "/v1/nodes", { "v1", "nodes" }, "GET, HEAD", { { "GET", h_nodes, 0, NULL } } },
	{ R_TOPOLOGY, "/v1/topology", { "v1", "topology" }, "GET, HEAD", { { "GET", h_topology, 0, NULL } } },
	{ R_GUESTS, "/v1/guests", { "v1", "guests" }, "GET, HEAD", { { "GET", h_guests, M_HEAVY, p_guests } } },
	{ R_GUEST, "/v1/guests/{id}", { "v1", "guests", "{id}" }, "GET, HEAD",
	  { { "GET", h_guest, 0, NULL } } },
	{ R_GUEST_POLICY, "/v1/guests/{id}/policy", { "v1", "guests", "{id}", "policy" },
	  "GET, HEAD, PUT, DELETE",
	  { { "GET", h_guest_policy_get, 0, NULL },
	    { "PUT", h_guest_policy_put, M_BODY, NULL },
	    { "DELETE", h_guest_policy_delete, 0, NULL } } },
	{ R_GUEST_HISTORY, "/v1/guests/{id}/history", { "v1", "guests", "{id}", "history" }, "GET, HEAD",
	  { { "GET", h_guest_history, 0, NULL } } },
	{ R_GUEST_POLICIES, "/v1/guest-policies", { "v1", "guest-policies" }, "GET, HEAD",
	  { { "GET", h_guest_policies, M_HEAVY, p_page } } },
	{ R_POLICY, "/v1/policy", { "v1", "policy" }, "GET, HEAD, PUT, DELETE",
	  { { "GET", h_policy_get, 0, NULL }, { "PUT", h_policy_put, M_BODY, NULL },
	    { "DELETE", h_policy_delete, 0, NULL } } },
	{ R_REBALANCE, "/v1/rebalance", { "v1", "rebalance" }, "POST",
	  { { "POST", h_rebalance, M_BODY | M_BODY_OPTIONAL, NULL } } },
	{ R_DECISIONS, "/v1/decisions", { "v1", "decisions" }, "GET, HEAD",
	  { { "GET", h_decisions, M_HEAVY, p_decisions } } },
	{ R_PLACEMENTS, "/v1/placements", { "v1", "placements" }, "POST",
	  { { "POST", h_placements, M_BODY, NULL } } },
	{ R_EVENTS, "/v1/events", { "v1", "events" }, "POST", { { "POST", h_events, M_BODY, NULL } } },
	{ R_METRICS, "/metrics", { "metrics" }, "GET, HEAD", { { "GET", h_metrics, M_HEAVY, NULL } } },
	{ R_MIGRATIONS, "/v1/migrations", { "v1", "migrations" }, "GET, HEAD",
	  { { "GET", h_migrations, 0, NULL } } },
	{ R_MIGRATION, "/v1/migrations/{id}", { "v1", "migrations", "{id}" }, "DELETE",
	  { { "DELETE", h_migration_delete, 0, NULL } } },
};

#define NR_ROUTES (sizeof(routes) / sizeof(routes[0]))

const char *api_route_name(enum api_route_id id)
{
	for (unsigned i = 0; i < NR_ROUTES; i++)
		if (routes[i].id == id)
			return routes[i].path;
	return "other";
}

bool api_route_has_get(enum api_route_id id)
{
	for (unsigned i = 0; i < NR_ROUTES; i++)
		for (unsigned m = 0; routes[i].id == id && m < 3 && routes[i].m[m].method; m++)
			if (strcmp(routes[i].m[m].method, "GET") == 0)
				return true;
	return false;
}

void api_routes_foreach(void (*fn)(const char *method, const char *path, void *ctx), void *ctx)
{
	for (unsigned i = 0; i < NR_ROUTES; i++)
		for (unsigned m = 0; m < 3 && routes[i].m[m].method; m++)
			fn(routes[i].m[m].method, routes[i].path, ctx);
}

/* ---- replies ------------------------------------------------------- */

json_t *api_json_tame(const char *s, size_t max)
{
	char *buf = xmalloc(max + 4);
	size_t n = 0;
	json_t *j;

	for (; s && *s && n < max; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (s && *s) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	j = json_string(buf);
	free(buf);
	return j;
}

void api_set_body(struct api_response *resp, unsigned status, const char *ctype, char *text, size_t len)
{
	free(resp->body);
	resp->status = status;
	resp->content_type = ctype;
	resp->body = text;
	resp->body_len = len;
}

static void set_body(struct api_response *resp, unsigned status, const char *ctype, char *text)
{
	api_set_body(resp, status, ctype, text, strlen(text));
}

static char *dump(json_t *o)
{
	/* 10 significant digits: 0.0537, not 0.053699999999999998. */
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
	char *t;
	size_t n;

	if (!s)
		abort(); /* only on allocation failure: the OOM policy */
	n = strlen(s);
	t = xrealloc(s, n + 2);
	t[n] = '\n';
	t[n + 1] = '\0';
	return t;
}

void api_reply_json(struct rq *r, unsigned status, json_t *o)
{
	set_body(r->resp, status, "application/json", dump(o));
	json_decref(o);
}

static const char *status_title(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

static void vproblem(struct api_response *resp, const char *target, unsigned status, const char *code,
		     const char *field, const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

static void vproblem(struct api_response *resp, const char *target, unsigned status, const char *code,
		     const char *field, const char *fmt, va_list ap)
{
	char detail[600], type[80];
	json_t *o;
	const char *q = target ? strchr(target, '?') : NULL;
	char *path = target ? strndup(target, q ? (size_t)(q - target) : strlen(target)) : NULL;

	vsnprintf(detail, sizeof(detail), fmt, ap);
	snprintf(type, sizeof(type), "urn:numaorch:problem:%s", code);
	o = json_object();
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "title", json_string(status_title(status)));
	json_object_set_new(o, "status", json_integer(status));
	json_object_set_new(o, "detail", api_json_tame(detail, sizeof(detail)));
	if (path)
		json_object_set_new(o, "instance", api_json_tame(path, 200));
	if (field && *field)
		json_object_set_new(o, "field", api_json_tame(field, 64));
	free(path);
	set_body(resp, status, "application/problem+json", dump(o));
	json_decref(o);
}

static void problem_resp(struct api_response *resp, const char *target, unsigned status, const char *code,
			 const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void problem_resp(struct api_response *resp, const char *target, unsigned status, const char *code,
			 const char *field, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(resp, target, status, code, field, fmt, ap);
	va_end(ap);
}

void problem(struct rq *r, unsigned status, const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(r->resp, r->req->target, status, code, field, fmt, ap);
	va_end(ap);
}

void problem_jerr(struct rq *r, const struct jreq_err *e)
{
	problem(r, 400, e->unknown ? "unknown-field" : e->field[0] ? "invalid-field" : "malformed-body",
		e->field, "%s", e->msg);
}

struct engine_view *need_view(struct rq *r)
{
	if (!r->view)
		r->view = engine_view_get(r->a->e);
	if (!r->view || !r->view->snap) {
		r->resp->retry_after = 1;
		problem(r, 503, "no-snapshot", NULL,
			"the agent has not finished its first cycle yet; retry in a moment");
		return NULL;
	}
	return r->view;
}

void engine_failure(struct rq *r, int err, const char *what)
{
	if (err == -EBUSY) {
		r->resp->retry_after = (r->a->timeout_ms + 999) / 1000;
		problem(r, 503, "engine-busy", NULL,
			"the engine is busy (a cycle or a migration is running) and did not take the request "
			"within %.1f s; nothing was changed; retry later", r->a->timeout_ms / 1000.0);
	} else if (err == -ESHUTDOWN) {
		r->resp->retry_after = 5;
		problem(r, 503, "shutting-down", NULL, "the agent is stopping; nothing was changed");
	} else {
		problem(r, 500, "internal", NULL, "%s: %s", what, strerror(-err));
	}
}

/* ---- engine calls -------------------------------------------------- */

struct acall {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned refs;
	bool cancelled, started, finished;
	int ret;
	int (*fn)(struct engine *e, void *ctx);
	void *ctx;
};

static void acall_unref(struct acall *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

/* Runs on the engine thread. A call the API gave up on before it started
 * is dropped here, so "503, nothing was changed" stays true. */
static int acall_tramp(struct engine *e, void *arg)
{
	struct acall *c = arg;
	int ret = -ECANCELED;
	bool go;

	pthread_mutex_lock(&c->lock);
	go = !c->cancelled;
	c->started = go;
	pthread_mutex_unlock(&c->lock);
	if (go)
		ret = c->fn(e, c->ctx);
	pthread_mutex_lock(&c->lock);
	c->finished = true;
	c->ret = ret;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	acall_unref(c);
	return ret;
}

int api_engine_run(struct api *a, int (*fn)(struct engine *e, void *ctx), void *ctx)
{
	struct acall *c = xcalloc(1, sizeof(*c));
	int r;

	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->refs = 2;
	c->fn = fn;
	c->ctx = ctx;
	r = engine_call(a->e, acall_tramp, c, a->timeout_ms);
	pthread_mutex_lock(&c->lock);
	if (c->finished) {
		r = c->ret;
	} else if (r == -ETIMEDOUT && !c->started) {
		c->cancelled = true;
		r = -EBUSY;
	} else if (r == -ETIMEDOUT) {
		/* It started just in time: its result is what counts. */
		while (!c->finished)
			pthread_cond_wait(&c->cond, &c->lock);
		r = c->ret;
	} else {
		/* -ESHUTDOWN: never queued, or dropped unrun at shutdown; the
		 * trampoline will not run and drop its reference. */
		c->refs--;
	}
	pthread_mutex_unlock(&c->lock);
	acall_unref(c);
	return r;
}

/* ---- the global policy as shown -------------------------------------- */

void api_policy_fill(struct api_policy *p, enum agent_mode mode, double interval_s,
		     const struct policy_config *pc, const struct schedule *s)
{
	p->mode = mode;
	p->interval_s = interval_s;
	p->pc = *pc;
	p->nsched = s->n < SCHED_MAX_ENTRIES ? s->n : SCHED_MAX_ENTRIES;
	for (unsigned i = 0; i < p->nsched; i++)
		snprintf(p->sched[i], sizeof(p->sched[i]), "%s", s->e[i].text);
}

bool api_current_policy(struct api *a, struct engine_view *v, struct api_policy *out)
{
	if (!v)
		return false;
	/* The policy as configured, not as a schedule window has it now:
	 * that is what PUT /v1/policy changes. The engine republishes its
	 * view when a PUT or a reload changes it, so this is never stale. */
	api_policy_fill(out, v->base_mode, v->base_interval_s, &v->base_policy, &v->schedule);
	return true;
}

static double pct(double fraction)
{
	return round(fraction * 100.0 * 1e6) / 1e6;
}

json_t *api_policy_json(const struct api_policy *p)
{
	const struct policy_config *c = &p->pc;
	json_t *o = json_object();

	json_object_set_new(o, "mode", json_string(agent_mode_name(p->mode)));
	json_object_set_new(o, "interval", json_real(p->interval_s));
	json_object_set_new(o, "locality_target", json_real(pct(c->locality_target)));
	json_object_set_new(o, "cpu_headroom", json_real(pct(c->cpu_headroom)));
	json_object_set_new(o, "mem_headroom", json_real(pct(c->mem_headroom)));
	json_object_set_new(o, "min_cpu", json_real(c->min_cpu));
	json_object_set_new(o, "min_free_mib", json_integer((json_int_t)(c->min_free_bytes >> 20)));
	json_object_set_new(o, "min_free_share", json_real(pct(c->min_free_share)));
	json_object_set_new(o, "less_busy_margin", json_real(pct(c->less_busy_margin)));
	json_object_set_new(o, "max_util", json_real(pct(c->max_util)));
	json_object_set_new(o, "rebalance_util", json_real(pct(c->rebalance_util)));
	json_object_set_new(o, "cooldown", c->cooldown_auto ? json_string("auto") :
			    json_real((double)c->cooldown_ns / 1e9));
	json_object_set_new(o, "max_moves", c->max_moves_auto ? json_string("auto") : json_integer(c->max_moves));
	json_object_set_new(o, "max_migrate_mib", c->max_migrate_auto ? json_string("auto") :
			    json_integer((json_int_t)(c->max_migrate_bytes >> 20)));
	{
		json_t *w = json_array();

		for (unsigned i = 0; i < p->nsched; i++)
			json_array_append_new(w, json_string(p->sched[i]));
		json_object_set_new(o, "schedule", w);
	}
	return o;
}

void api_policy_revision(const struct api_policy *p, char out[17])
{
	json_t *o = api_policy_json(p);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	uint64_t h = 1469598103934665603ULL;

	for (const char *c = s ? s : ""; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	free(s);
	json_decref(o);
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ---- authentication ------------------------------------------------ */

bool api_token_equal(const char *expected, const char *given)
{
	size_t n = strlen(expected), g = strlen(given);
	unsigned char diff = (unsigned char)(n != g);

	/* Walk EXPECTED's length whatever GIVEN is: the time does not tell
	 * how many leading bytes matched. */
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(expected[i] ^ (i < g ? given[i] : 0));
	return diff == 0 && n > 0;
}

int api_token_load(const char *path, char **out, char *err, size_t errsz)
{
	char buf[4200], *nl;
	struct stat st;
	size_t len = 0;
	int fd, r = 0;

	/* Symlinks are fine (a Kubernetes secret is one); the file they lead
	 * to is what must not be readable by others. One fd for the check
	 * and the read: no swapping the file in between; a FIFO or a
	 * directory is refused without blocking. */
	fd = fs_open_regular("token file", path, &st, err, errsz);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(err, errsz, "token file %s is accessible to others (mode %04o): chmod o-rwx it",
			 path, (unsigned)(st.st_mode & 07777));
		r = -EPERM;
		goto out;
	}
	while (len < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(err, errsz, "token file %s: %s", path, strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	nl = buf + strcspn(buf, "\r\n");
	*nl = '\0';
	len = strlen(buf);
	if (len < 16 || len > 4096) {
		snprintf(err, errsz, "token file %s: the token (first line) must be 16..4096 characters, is %zu",
			 path, len);
		r = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] <= 0x20 || buf[i] >= 0x7f) {
			snprintf(err, errsz, "token file %s: the token must be printable ASCII without spaces",
				 path);
			r = -EINVAL;
			goto out;
		}
	*out = xstrdup(buf);
out:
	explicit_bzero(buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	return r;
}

static char *dup_opt(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void api_set_guest_metrics(struct api *a, unsigned n)
{
	__atomic_store_n(&a->guest_metrics, n, __ATOMIC_RELAXED);
}

void api_set_token(struct api *a, const char *token)
{
	char *n = dup_opt(token), *old;

	pthread_mutex_lock(&a->token_lock);
	old = a->token;
	a->token = n;
	pthread_mutex_unlock(&a->token_lock);
	if (old) {
		explicit_bzero(old, strlen(old));
		free(old);
	}
}

/* 0: authorised; otherwise the reply is made. */
static int authorise(struct api *a, const struct api_request *req, struct api_response *resp)
{
	const char *h = req->authorization;
	bool ok;

	if (req->transport != API_TCP)
		return 0;
	/* Health checks (load balancers, probes) carry no secrets. */
	if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0) {
		const char *t = req->target;

		if (strncmp(t, "/v1/health", 10) == 0 && (t[10] == '\0' || t[10] == '?'))
			return 0;
	}
	if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7]) {
		resp->www_authenticate = true;
		problem_resp(resp, req->target, 401, "unauthorized", NULL,
			     "this listener needs \"Authorization: Bearer <token>\"");
		return -EACCES;
	}
	h += 7;
	while (*h == ' ')
		h++;
	pthread_mutex_lock(&a->token_lock);
	ok = a->token && api_token_equal(a->token, h);
	pthread_mutex_unlock(&a->token_lock);
	if (!ok) {
		problem_resp(resp, req->target, 403, "forbidden", NULL, "the bearer token is not valid here");
		return -EPERM;
	}
	resp->authenticated = true;
	return 0;
}

/* ---- routing ------------------------------------------------------- */

static bool is_json_media_type(const char *ct)
{
	size_t n;

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	n = strcspn(ct, "; \t");
	if (n != 16 || strncasecmp(ct, "application/json", 16) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (!*ct)
		return true;
	if (*ct != ';')
		return false;
	/* Only charset=utf-8 is meaningful for JSON (RFC 8259: UTF-8). */
	ct++;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, "charset=utf-8", 13) == 0 && (ct[13] == '\0' || ct[13] == ' ') ;
}

static const char *id_rule = "1..127 bytes of A-Z a-z 0-9 . _ -, not starting with . or -";

/* Fill R->route/handler, or reply. true when replied. */
static bool route_request(struct rq *r, const struct method_entry **me, bool have_body)
{
	const struct api_request *req = r->req;
	const char *why = NULL, *method = req->method;
	const struct route *rt = NULL;
	int ret;

	if (authorise(r->a, req, r->resp) < 0)
		return true;
	ret = urlq_parse(req->target, &r->url, &why);
	if (ret == -ENOENT) {
		problem(r, 404, "not-found", NULL, "no such resource");
		return true;
	}
	if (ret < 0) {
		problem(r, 400, "malformed-request", "path", "%s", why ? why : "malformed request target");
		return true;
	}
	for (unsigned i = 0; i < NR_ROUTES && !rt; i++) {
		const struct route *c = &routes[i];
		unsigned n = 0;

		while (n < 5 && c->segs[n])
			n++;
		if (n != r->url.nr_segs)
			continue;
		for (unsigned s = 0; s < n; s++) {
			if (strcmp(c->segs[s], "{id}") == 0)
				continue;
			if (strcmp(c->segs[s], r->url.segs[s]) != 0)
				goto next;
		}
		rt = c;
next:;
	}
	if (!rt) {
		problem(r, 404, "not-found", NULL, "no such resource");
		return true;
	}
	r->route = rt->id;
	for (unsigned s = 0; rt->segs[s] && s < 5; s++) {
		if (strcmp(rt->segs[s], "{id}") != 0)
			continue;
		if (!snap_id_valid(r->url.segs[s])) {
			problem(r, 400, "invalid-field", "id", "not a valid guest id: %s", id_rule);
			return true;
		}
		snprintf(r->id, sizeof(r->id), "%s", r->url.segs[s]);
	}
	if (strcmp(method, "HEAD") == 0)
		method = "GET";
	*me = NULL;
	for (unsigned m = 0; m < 3 && rt->m[m].method; m++)
		if (strcmp(rt->m[m].method, method) == 0)
			*me = &rt->m[m];
	if (!*me) {
		r->resp->allow = rt->allow;
		problem(r, 405, "method-not-allowed", NULL, "%s %s is not served; this resource allows %s",
			req->method, rt->path, rt->allow);
		return true;
	}
	if (req->body_too_large || (req->content_length > (int64_t)API_BODY_MAX) ||
	    req->body_len > API_BODY_MAX) {
		problem(r, 413, "body-too-large", NULL, "the request body is larger than %u bytes", API_BODY_MAX);
		return true;
	}
	if (((*me)->flags & M_BODY) && (req->content_length > 0 || (have_body && req->body_len > 0)) &&
	    !is_json_media_type(req->content_type)) {
		problem(r, 415, "unsupported-media-type", "Content-Type",
			"the body must be sent as Content-Type: application/json");
		return true;
	}
	for (unsigned i = 0; i < r->url.nr_params; i++) {
		const char *k = r->url.params[i].key;
		bool ok = false;

		for (unsigned j = 0; (*me)->params && (*me)->params[j]; j++)
			if (strcmp((*me)->params[j], k) == 0)
				ok = true;
		if (!ok) {
			problem(r, 400, "unknown-field", k, "%.40s: unknown query parameter", k);
			return true;
		}
	}
	return false;
}

/* Take one write from CLIENT's bucket. 0, or the seconds until one is
 * there. The table holds the API_RL_SLOTS most recent clients; a new one
 * takes a free slot, else the one idle longest (a client gone that long
 * has a full bucket anyway, or close to it). */
static unsigned rate_take(struct api *a, const char *client)
{
	struct api_rl *b = NULL, *lru = NULL;
	int64_t now = clock_mono_ns();
	unsigned wait = 0;

	pthread_mutex_lock(&a->rl_lock);
	for (unsigned i = 0; i < API_RL_SLOTS && !b; i++) {
		struct api_rl *x = &a->rl[i];

		if (strcmp(x->client, client) == 0)
			b = x;
		else if (!lru || !x->client[0] || (lru->client[0] && x->t_ns < lru->t_ns))
			lru = x;
	}
	if (!b) {
		b = lru;
		snprintf(b->client, sizeof(b->client), "%s", client);
		b->tokens = a->rl_burst;
		b->t_ns = now;
	}
	b->tokens += a->rl_rate * (double)(now - b->t_ns) / 1e9;
	if (b->tokens > a->rl_burst)
		b->tokens = a->rl_burst;
	b->t_ns = now;
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
	} else {
		wait = (unsigned)ceil((1.0 - b->tokens) / a->rl_rate);
		a->rl_refused++;
	}
	pthread_mutex_unlock(&a->rl_lock);
	return wait;
}

/* Large answers (lists, metrics, plans) at most API_HEAVY_MAX at a time,
 * counted until their reply is sent: each holds up to a page of JSON
 * (guest-policies: ~100 KB, and its records and jansson tree while it is
 * built), and a thousand clients asking at once, or reading slowly, would
 * otherwise hold a thousand of them. A request waits up to
 * API_HEAVY_WAIT_MS for its turn. */
static bool heavy_fits(const struct api *a, enum api_transport t)
{
	unsigned total = a->heavy_n[API_UNIX] + a->heavy_n[API_TCP];

	/* TCP leaves API_HEAVY_LOCAL for the local socket (the probe's and
	 * the operator's way in). */
	return total < API_HEAVY_MAX && (t != API_TCP || a->heavy_n[API_TCP] < API_HEAVY_MAX - API_HEAVY_LOCAL);
}

static bool heavy_take(struct api *a, enum api_transport t)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)(API_HEAVY_WAIT_MS % 1000) * 1000000L;
	until.tv_sec += API_HEAVY_WAIT_MS / 1000 + until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&a->heavy_lock);
	while (!heavy_fits(a, t))
		if (pthread_cond_timedwait(&a->heavy_cond, &a->heavy_lock, &until) == ETIMEDOUT)
			break;
	ok = heavy_fits(a, t);
	if (ok)
		a->heavy_n[t]++;
	else
		a->heavy_refused++;
	pthread_mutex_unlock(&a->heavy_lock);
	return ok;
}

void api_set_conn_stats(struct api *a, api_conn_stats_fn fn, void *ctx)
{
	pthread_mutex_lock(&a->cs_lock);
	a->cs_fn = fn;
	a->cs_ctx = ctx;
	pthread_mutex_unlock(&a->cs_lock);
}

void api_heavy_release(struct api *a, enum api_transport t)
{
	pthread_mutex_lock(&a->heavy_lock);
	if (a->heavy_n[t])
		a->heavy_n[t]--;
	pthread_cond_broadcast(&a->heavy_cond);
	pthread_mutex_unlock(&a->heavy_lock);
}

static void count(struct api *a, enum api_route_id route, unsigned status, int64_t ns)
{
	unsigned b = 0;
	double s = (double)ns / 1e9;

	if (status >= API_NR_CODES)
		status = 0;
	__atomic_add_fetch(&a->req_count[route][status], 1, __ATOMIC_RELAXED);
	while (b < API_NR_BUCKETS && s > api_buckets[b])
		b++;
	__atomic_add_fetch(&a->req_bucket[route][b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->req_ns[route], (uint64_t)(ns > 0 ? ns : 0), __ATOMIC_RELAXED);
}

static void rq_init(struct rq *r, struct api *a, const struct api_request *req, struct api_response *resp)
{
	memset(r, 0, sizeof(*r));
	memset(resp, 0, sizeof(*resp));
	r->a = a;
	r->req = req;
	r->resp = resp;
	r->route = R_NONE;
}

static void rq_fini(struct rq *r)
{
	urlq_clear(&r->url);
	json_decref(r->body);
	engine_view_unref(r->view);
}

static bool sane_request(const struct api_request *req)
{
	return req && req->method && req->target && (req->body || req->body_len == 0);
}

bool api_preflight(struct api *a, const struct api_request *req, struct api_response *resp)
{
	const struct method_entry *me;
	int64_t t0 = clock_mono_ns();
	struct rq r;
	bool done;

	rq_init(&r, a, req, resp);
	if (!sane_request(req)) {
		problem_resp(resp, NULL, 400, "malformed-request", NULL, "malformed request");
		count(a, R_NONE, 400, clock_mono_ns() - t0);
		return true;
	}
	done = route_request(&r, &me, false);
	if (done)
		count(a, r.route, resp->status, clock_mono_ns() - t0);
	rq_fini(&r);
	return done;
}

void api_handle(struct api *a, const struct api_request *req, struct api_response *resp)
{
	const struct method_entry *me = NULL;
	int64_t t0 = clock_mono_ns();
	struct rq r;

	rq_init(&r, a, req, resp);
	if (!sane_request(req)) {
		problem_resp(resp, NULL, 400, "malformed-request", NULL, "malformed request");
		count(a, R_NONE, 400, clock_mono_ns() - t0);
		return;
	}
	if (route_request(&r, &me, true))
		goto out;
	/* Writes are limited per client, reads are not: every write may cost
	 * a cycle or a rewrite of the policy store. */
	if (req->client && strcmp(me->method, "GET") != 0) {
		unsigned wait = rate_take(a, req->client);

		if (wait) {
			resp->retry_after = wait;
			problem(&r, 429, "rate-limited", NULL,
				"more than %.0f changes a second (bursts of %.0f) from this client; retry in %u s",
				a->rl_rate, a->rl_burst, wait);
			goto out;
		}
	}
	if (me->flags & M_BODY) {
		struct jreq_err err;

		if (req->body_len == 0 && (me->flags & M_BODY_OPTIONAL)) {
			r.body = json_object();
		} else if (jreq_parse_object(req->body, req->body_len, &r.body, &err) < 0) {
			problem_jerr(&r, &err);
			goto out;
		}
	}
	if ((me->flags & M_HEAVY) && !heavy_take(a, req->transport)) {
		resp->retry_after = 1;
		problem(&r, 503, "server-busy", NULL,
			"%u large answers are being built or sent; retry in a moment", API_HEAVY_MAX);
		goto out;
	}
	if (me->flags & M_HEAVY) {
		/* The server gives it back once the reply is sent, if it can
		 * tell (req->hold_heavy); else it goes back here. */
		if (req->hold_heavy)
			resp->heavy_slot = true;
	}
	me->fn(&r);
	if ((me->flags & M_HEAVY) && !req->hold_heavy)
		api_heavy_release(a, req->transport);
	if (!resp->body)
		problem(&r, 500, "internal", NULL, "no answer was produced");
out:
	count(a, r.route, resp->status, clock_mono_ns() - t0);
	rq_fini(&r);
}

void api_response_clear(struct api_response *r)
{
	if (!r)
		return;
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* ---- lifetime ------------------------------------------------------ */

int api_new(struct engine *e, struct gpolstore *gs, const struct api_opts *o, struct api **out)
{
	struct api *a;

	if (!e || !gs || !o)
		return -EINVAL;
	a = xcalloc(1, sizeof(*a));
	a->e = e;
	a->gs = gs;
	a->version = xstrdup(o->version ? o->version : "unknown");
	a->token = dup_opt(o->token);
	pthread_mutex_init(&a->token_lock, NULL);
	pthread_mutex_init(&a->rl_lock, NULL);
	pthread_mutex_init(&a->rb_lock, NULL);
	pthread_mutex_init(&a->heavy_lock, NULL);
	pthread_mutex_init(&a->cs_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->heavy_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_cond_init(&a->rb_cond, NULL);
	a->rl_rate = o->write_rate > 0 ? o->write_rate : API_WRITE_RATE;
	a->rl_burst = o->write_burst >= 1 ? o->write_burst : API_WRITE_BURST;
	a->socket_path = dup_opt(o->socket_path);
	a->listen = dup_opt(o->listen);
	a->tls = o->tls;
	a->timeout_ms = o->engine_timeout_ms ? o->engine_timeout_ms : API_ENGINE_TIMEOUT_MS;
	a->start_real_ns = clock_real_ns();
	a->start_mono_ns = clock_mono_ns();
	a->guest_metrics = CONFIG_GUEST_METRICS_ALL;
	pthread_mutex_init(&a->cache_lock, NULL);
	pthread_cond_init(&a->cache_cond, NULL);
	*out = a;
	return 0;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	engine_view_unref(a->cache_view);
	free(a->cache_body);
	pthread_mutex_destroy(&a->token_lock);
	pthread_mutex_destroy(&a->rl_lock);
	pthread_mutex_destroy(&a->rb_lock);
	pthread_mutex_destroy(&a->heavy_lock);
	pthread_mutex_destroy(&a->cs_lock);
	pthread_cond_destroy(&a->heavy_cond);
	pthread_cond_destroy(&a->rb_cond);
	pthread_mutex_destroy(&a->cache_lock);
	pthread_cond_destroy(&a->cache_cond);
	free(a->version);
	if (a->token)
		explicit_bzero(a->token, strlen(a->token));
	free(a->token);
	free(a->socket_path);
	free(a->listen);
	free(a);
}
