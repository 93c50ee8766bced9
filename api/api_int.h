/* api_int.h — shared by api*.c only: the api object, the request being
 * answered, reply helpers and the route handlers. Nothing outside api/
 * includes this.
 */
#ifndef NUMAORCH_API_INT_H
#define NUMAORCH_API_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "jreq.h"
#include "urlq.h"
#include "../orchestrator/store/config.h"
#include "../orchestrator/engine/engine.h"
#include "../orchestrator/store/gpolstore.h"
#include "../orchestrator/model/snapshot.h"

enum api_route_id {
	R_HEALTH = 0,
	R_STATUS,
	R_NODES,
	R_GUESTS,
	R_GUEST,
	R_GUEST_POLICY,
	R_GUEST_POLICIES,
	R_GUEST_HISTORY,
	R_POLICY,
	R_REBALANCE,
	R_DECISIONS,
	R_PLACEMENTS,
	R_EVENTS,
	R_METRICS,
	R_MIGRATIONS,
	R_MIGRATION,
	R_TOPOLOGY,
	R_NONE,          /* no route matched (404) or the request was refused first */
	API_NR_ROUTES,
};

#define API_NR_CODES 600
#define API_NR_BUCKETS 14
extern const double api_buckets[API_NR_BUCKETS];

enum api_event { EV_STARTED = 0, EV_STOPPED, EV_RELEASE, EV_RECONNECT, API_NR_EVENTS };
extern const char *const api_event_names[API_NR_EVENTS];

/* The global policy as the API shows and takes it. */
struct api_policy {
	enum agent_mode mode;
	double interval_s;
	struct policy_config pc;
	unsigned nsched;                      /* [schedule] windows, as written */
	char sched[SCHED_MAX_ENTRIES][SCHED_TEXT_MAX + 1];
};

/* Write requests per client (token bucket): RATE a second, BURST at once. */
#define API_WRITE_RATE 20.0
#define API_WRITE_BURST 100.0
#define API_RL_SLOTS 256

struct api_rl {
	char client[64];           /* "" : free */
	double tokens;
	int64_t t_ns;              /* last refill */
};

struct api {
	struct engine *e;
	struct gpolstore *gs;
	char *version;
	pthread_mutex_t token_lock;  /* token is replaced on SIGHUP */
	char *token;
	char *socket_path, *listen;
	bool tls;
	unsigned timeout_ms;
	int64_t start_real_ns, start_mono_ns;
	size_t metrics_len;          /* the last /metrics text's length (atomic) */

	/* GET /v1/guests without filters, serialised once per view and
	 * per-guest policy generation: the common poll of dashboards. */
	pthread_mutex_t cache_lock;
	pthread_cond_t cache_cond;   /* signalled when a build finishes */
	bool cache_building;
	struct engine_view *cache_view;
	uint64_t cache_gen;
	char *cache_body;
	size_t cache_len;

	/* POST /v1/rebalance: the request waiting for the engine, per
	 * dry_run (api_write.c). */
	pthread_mutex_t rb_lock;
	pthread_cond_t rb_cond;
	struct rebalance *rb_pending[2];
	uint64_t rb_joined;

	/* httpd's connection counts (api_set_conn_stats). */
	pthread_mutex_t cs_lock;
	api_conn_stats_fn cs_fn;
	void *cs_ctx;

	/* Large answers in flight (api.c heavy_take). */
	pthread_mutex_t heavy_lock;
	pthread_cond_t heavy_cond;
	unsigned heavy_n[2];          /* by transport */
	uint64_t heavy_refused;

	/* Write rate limits, per client (httpd's "uid:N" / "ip:ADDR"). */
	pthread_mutex_t rl_lock;
	double rl_rate, rl_burst;
	struct api_rl rl[API_RL_SLOTS];
	uint64_t rl_refused;

	/* Counters for /metrics (atomic adds). */
	uint64_t req_count[API_NR_ROUTES][API_NR_CODES];
	uint64_t req_bucket[API_NR_ROUTES][API_NR_BUCKETS + 1];
	uint64_t req_ns[API_NR_ROUTES];
	uint64_t events[API_NR_EVENTS];
	/* [api] guest_metrics (config.h's meaning; atomic: a reload sets it). */
	unsigned guest_metrics;
};

/* Large answers (lists, /metrics, rebalance plans) built or being sent
 * at once, and how long a request waits for its turn (then 503). */
#define API_HEAVY_MAX 32u
#define API_HEAVY_LOCAL 8u          /* of which TCP never takes the last 8 */
#define API_HEAVY_WAIT_MS 2000u

/* Paginated lists (?limit=&after=): the default and largest page. */
#define API_PAGE_DEFAULT 1000u
#define API_PAGE_MAX 1000u

struct rq;
typedef void (*api_handler)(struct rq *r);

/* The request being answered. */
struct rq {
	struct api *a;
	const struct api_request *req;
	struct api_response *resp;
	enum api_route_id route;
	struct urlq url;
	char id[GUEST_ID_MAX];       /* the {id} of the route, validated */
	json_t *body;                /* the parsed object, routes that take one */
	struct engine_view *view;    /* taken by need_view() */
};

/* Replies. api_reply_json takes O. problem() formats DETAIL; FIELD names the
 * input it is about (NULL: none). CODE is the problem type's last part. */
void api_reply_json(struct rq *r, unsigned status, json_t *o);
void problem(struct rq *r, unsigned status, const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void problem_jerr(struct rq *r, const struct jreq_err *e);
/* The view with a snapshot, or NULL after replying 503. */
struct engine_view *need_view(struct rq *r);

/* Run FN(e, CTX) on the engine thread. Returns FN's value, -EBUSY when
 * the engine did not start it within the api's timeout (it then never
 * runs), -ESHUTDOWN when stopping. CTX is the caller's and may be freed
 * as soon as this returns. */
int api_engine_run(struct api *a, int (*fn)(struct engine *e, void *ctx), void *ctx);
/* The reply: STATUS, CTYPE (NULL: none) and TEXT[0..LEN), which it takes
 * (malloc'd), replacing any body set before. */
void api_set_body(struct api_response *resp, unsigned status, const char *ctype, char *text, size_t len);

/* Reply 503 for -EBUSY/-ESHUTDOWN, 500 otherwise. */
void engine_failure(struct rq *r, int err, const char *what);

/* P from its parts: GET shows it from the engine's view, PUT compares
 * the revision of the same fields from the configuration, so both fill
 * it here. */
void api_policy_fill(struct api_policy *p, enum agent_mode mode, double interval_s,
		     const struct policy_config *pc, const struct schedule *s);
/* The policy the API shows now, from view V (the engine republishes it at
 * every change). false: no view yet. */
bool api_current_policy(struct api *a, struct engine_view *v, struct api_policy *out);
json_t *api_policy_json(const struct api_policy *p);
/* A stable hash of what api_policy_json shows, as 16 hex digits. */
void api_policy_revision(const struct api_policy *p, char out[17]);

/* A stored per-guest policy as the API shows it. */
json_t *api_gpol_record_json(const struct gpol_record *rec, bool present);

/* JSON string of untrusted text: printable ASCII kept, the rest '?',
 * at most MAX bytes. */
json_t *api_json_tame(const char *s, size_t max);

/* Handlers. */
void h_health(struct rq *r);
void h_status(struct rq *r);
void h_nodes(struct rq *r);
void h_topology(struct rq *r);
void h_guests(struct rq *r);
void h_guest(struct rq *r);
void h_guest_policy_get(struct rq *r);
void h_guest_policies(struct rq *r);
void h_guest_history(struct rq *r);
void h_policy_get(struct rq *r);
void h_decisions(struct rq *r);
void h_metrics(struct rq *r);
void h_guest_policy_put(struct rq *r);
void h_guest_policy_delete(struct rq *r);
void h_policy_put(struct rq *r);
void h_policy_delete(struct rq *r);
void h_rebalance(struct rq *r);
void h_placements(struct rq *r);
void h_events(struct rq *r);
void h_migrations(struct rq *r);
void h_migration_delete(struct rq *r);
/* One mover job as the API shows it. */
struct mover_job_info;
json_t *api_migration_json(const struct mover_job_info *j);

/* Route names as /metrics labels them ("/v1/guests/{id}"). */
const char *api_route_name(enum api_route_id id);
/* true if the route answers GET. */
bool api_route_has_get(enum api_route_id id);

#endif
