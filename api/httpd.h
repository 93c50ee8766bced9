/* httpd.h — the REST API's listeners (libmicrohttpd): a unix socket
 * (default; its file mode 0660 and group are the access control) and an
 * optional TCP listener (bearer token, optional TLS through MHD's GnuTLS
 * support). Every request is answered by api_handle().
 *
 * Thread per connection: a request waiting for the engine (a policy
 * change while a migration runs) holds only its own connection. Bounded
 * against clients that hold connections open: each connection has a
 * deadline for its whole next request (headers, body, reply, keep-alive
 * idling), a shorter one on TCP until it has shown the token, and past
 * a listener's connection limit a newcomer pushes out the connection
 * that has waited longest;
 * connections being answered are never pushed out. The unix socket and
 * TCP have separate limits, so a TCP flood leaves the local socket alone.
 */
#ifndef NUMAORCH_HTTPD_H
#define NUMAORCH_HTTPD_H

#include <stddef.h>

struct api;
struct httpd;

struct httpd_opts {
	const char *socket_path;    /* NULL or "": no unix socket */
	const char *socket_group;   /* NULL: group "numaorch" if it exists, else unchanged */
	const char *listen;         /* "ADDR:PORT" or "[ADDR6]:PORT"; NULL: no TCP */
	const char *tls_cert;       /* PEM files; both or neither */
	const char *tls_key;
	unsigned max_connections;   /* per listener; 0: HTTPD_MAX_CONNECTIONS */
	unsigned request_timeout_s; /* 0: HTTPD_REQUEST_TIMEOUT_S */
	unsigned unauth_timeout_s;  /* TCP before the token; 0: HTTPD_UNAUTH_TIMEOUT_S */
};

/* Idle connections cost a blocked thread and its memory each: enough
 * that a thousand held by one client leave room for the rest, few enough
 * to bound threads and memory (test_api_flood.py holds them). */
#define HTTPD_MAX_CONNECTIONS 1024
#define HTTPD_REQUEST_TIMEOUT_S 10
#define HTTPD_UNAUTH_TIMEOUT_S 2

/* Start listening; on error nothing is left behind and ERR says what
 * failed (-EADDRINUSE when another agent holds the socket). Call after
 * engine_prepare_loop(): the listener threads inherit its blocked
 * signals, so SIGTERM/SIGHUP reach the engine. */
int httpd_start(struct api *a, const struct httpd_opts *o, struct httpd **out, char *err, size_t errsz);
/* Stop accepting, finish or drop open connections, remove the socket
 * file (if it is still ours). Accepts NULL. */
void httpd_stop(struct httpd *h);

#endif
