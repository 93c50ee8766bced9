/* api.h — the REST API's request handling, without sockets: a request
 * (method, target, a few headers, body) in, a response (status, headers,
 * body) out. httpd.c feeds it from libmicrohttpd; the fuzzer and the unit
 * tests call it directly.
 *
 * Reads answer from the engine's latest published view (never blocking on
 * the host); changes run on the engine thread through engine_call, and
 * give 503 with Retry-After when the engine does not take them within
 * the timeout (busy with a long migration). Every error is an RFC 7807
 * problem+json body. See api/openapi.yaml for the routes.
 */
#ifndef NUMAORCH_API_H
#define NUMAORCH_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;
struct gpolstore;

/* Largest request body accepted (413 beyond). */
#define API_BODY_MAX (64u * 1024u)
#define API_ENGINE_TIMEOUT_MS 5000u
/* GET /v1/health answers 503 when the engine loop has not turned for
 * this long (it turns at least every second when idle). */
#define API_ENGINE_STALL_S 10.0

enum api_transport {
	API_UNIX = 0,  /* the unix socket: its mode and group are the access control */
	API_TCP,       /* every route but GET /v1/health needs the bearer token */
};

struct api_request {
	const char *method;
	const char *target;        /* raw request-target: path [? query], %-encoded */
	const char *content_type;  /* NULL: none */
	const char *authorization; /* NULL: none */
	int64_t content_length;    /* declared length, -1: none declared */
	const char *body;          /* may be NULL when body_len is 0 */
	size_t body_len;
	bool body_too_large;       /* more than API_BODY_MAX arrived (the rest was dropped) */
	enum api_transport transport;
	const char *client;        /* "uid:N" / "ip:ADDR": per-client rate limits; NULL: not limited */
	bool hold_heavy;           /* the caller calls api_heavy_release() when resp->heavy_slot
				    * and the reply is sent; false: api_handle releases it itself */
};

struct api_response {
	unsigned status;
	const char *content_type;  /* static string */
	char *body;                /* malloc'd, NUL-terminated */
	size_t body_len;
	const char *allow;         /* static; set for 405 (and OPTIONS-like answers) */
	unsigned retry_after;      /* seconds; 0: no Retry-After header */
	bool www_authenticate;     /* add WWW-Authenticate: Bearer */
	bool authenticated;        /* TCP: the request carried the valid token */
	bool heavy_slot;           /* holds a large-answer slot (see hold_heavy) */
};

struct api_opts {
	const char *version;
	const char *token;         /* bearer token for API_TCP; NULL: TCP requests are refused */
	unsigned engine_timeout_ms;/* 0: API_ENGINE_TIMEOUT_MS */
	double write_rate;         /* writes a second per client; 0: API_WRITE_RATE (api_int.h) */
	double write_burst;        /* 0: API_WRITE_BURST */
	/* Shown by GET /v1/status; may be NULL. */
	const char *socket_path;
	const char *listen;
	bool tls;
};

struct api;

/* E and GS must outlive the api. */
int api_new(struct engine *e, struct gpolstore *gs, const struct api_opts *o, struct api **out);
void api_free(struct api *a);

/* Answer REQ into RESP (every outcome is a response). Thread-safe. */
void api_handle(struct api *a, const struct api_request *req, struct api_response *resp);
/* The part of api_handle that needs no body: authentication, route,
 * method, declared length and content type. true (RESP filled, and the
 * request counted) when that already decides the answer, so the server
 * can reply before reading a body it would drop anyway. */
bool api_preflight(struct api *a, const struct api_request *req, struct api_response *resp);
void api_response_clear(struct api_response *r);
/* The server's connection counts, for /metrics. */
struct api_conn_stats {
	unsigned open;             /* connections held now */
	uint64_t pushed_out;       /* closed to make room past the listener's limit */
	uint64_t timed_out;        /* closed at their request deadline */
};
typedef void (*api_conn_stats_fn)(void *ctx, enum api_transport t, struct api_conn_stats *out);
/* Set (FN non-NULL) or clear the source of those counts. */
void api_set_conn_stats(struct api *a, api_conn_stats_fn fn, void *ctx);

/* Give back the large-answer slot a response to a request on transport T
 * held (resp->heavy_slot), once its reply was sent or dropped. */
void api_heavy_release(struct api *a, enum api_transport t);

/* Every (method, path template) the router serves, in table order. */
void api_routes_foreach(void (*fn)(const char *method, const char *path, void *ctx), void *ctx);

/* Read a bearer token from PATH: refused (-EPERM, ERR says why) when
 * others may read the file; the token is its first line, 16..4096
 * printable characters. *OUT is the caller's to free(). */
int api_token_load(const char *path, char **out, char *err, size_t errsz);
/* Replace the bearer token (SIGHUP re-reads the token file): requests
 * after this call are checked against TOKEN (copied; NULL refuses all). */
void api_set_token(struct api *a, const char *token);
/* Which guests have per-guest series on /metrics: agent_config's
 * api_guest_metrics (0 none, CONFIG_GUEST_METRICS_ALL all, else the N
 * with the most memory). Every guest until set. */
void api_set_guest_metrics(struct api *a, unsigned n);
/* Lay SETTINGS (the settings file's object, setoverlay.h: PUT /v1/policy
 * fields) over CFG, as PUT /v1/policy would, and validate the result.
 * 0, or -EINVAL with ERR saying what is wrong (CFG is then half changed:
 * the caller drops it). */
struct agent_config;
struct json_t;
int api_settings_apply(struct json_t *settings, struct agent_config *cfg, char *err, size_t errsz);
/* Compare in time that depends only on EXPECTED's length. */
bool api_token_equal(const char *expected, const char *given);

#endif
