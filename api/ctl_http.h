/* ctl_http.h — numaorchctl's HTTP client (libcurl): the agent's unix
 * socket, or TCP/TLS with a bearer token.
 */
#ifndef NUMAORCH_CTL_HTTP_H
#define NUMAORCH_CTL_HTTP_H

#include <stddef.h>

struct ctl_conn {
	const char *socket;   /* unix socket path (used when url is NULL) */
	const char *url;      /* "http(s)://host:port", NULL: the socket */
	const char *token;    /* bearer token, NULL: none */
	const char *cacert;   /* CA bundle for https, NULL: the system's */
	long timeout_ms;
	const char *peer;     /* who the server is, for messages; NULL: numaorchd */
	const char *agent;    /* User-Agent; NULL: numaorchctl */
};

struct ctl_reply {
	long status;
	char *body;           /* NUL-terminated */
	size_t len;
	char content_type[128];
};

/* Pages of a paged list (GET /v1/guests, /v1/guest-policies) followed at
 * most: 1000 pages of 1000 are a million guests, and a server that keeps
 * sending "next" past that is not paging forward. */
#define CTL_PAGES_MAX 1000u

/* The largest reply taken. A JSON reply is parsed into a tree several
 * times its size, and the agent's largest is far smaller than this: a
 * page of 1000 guests is under 1 MiB, GET /v1/nodes lists every guest's
 * id. /metrics is text, not paged, and grows with the guests (about 1 KiB
 * each on 8 nodes). */
#define CTL_JSON_MAX (16u << 20)
#define CTL_TEXT_MAX (64u << 20)

/* One request. PATH starts with "/" and is already escaped; BODY (JSON)
 * may be NULL; a reply of more than MAX bytes is refused (read no
 * further, -EFBIG). Returns 0 with *OUT filled, or -1 (-EFBIG) with ERR
 * saying why nothing came back (cannot connect, timeout, TLS, too
 * large). */
int ctl_request(const struct ctl_conn *c, const char *method, const char *path, const char *body, size_t max,
		struct ctl_reply *out, char *err, size_t errsz);
void ctl_reply_free(struct ctl_reply *r);
/* S %-escaped for a path segment or query value; free() it. */
char *ctl_escape(const char *s);
/* A bearer token file's first line, without its line end, into BUF (a
 * token longer than BUFSZ - 1 is cut there). Returns 0, or -errno with
 * ERR saying what (unreadable, empty). */
int ctl_read_token(const char *path, char *buf, size_t bufsz, char *err, size_t errsz);

#endif
