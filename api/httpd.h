/* httpd.h — the REST API's listeners (libmicrohttpd): a unix socket
 * (default; its file mode 0660 and group are the access control) and an
 * optional TCP listener (bearer token, optional TLS through MHD's GnuTLS
 * support). Every request is answered by api_handle().
 *
 * Thread per connection: a request waiting for the engine (a policy
 * change while a migration runs) holds only its own connection. Bounded:
 * a connection limit per listener, an idle timeout, a body limit.
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
	unsigned max_connections;   /* per listener; 0: 64 */
	unsigned idle_timeout_s;    /* 0: 30 */
};

/* Start listening; on error nothing is left behind and ERR says what
 * failed (-EADDRINUSE when another agent holds the socket). Call after
 * engine_prepare_loop(): the listener threads inherit its blocked
 * signals, so SIGTERM/SIGHUP reach the engine. */
int httpd_start(struct api *a, const struct httpd_opts *o, struct httpd **out, char *err, size_t errsz);
/* Stop accepting, finish or drop open connections, remove the socket
 * file (if it is still ours). Accepts NULL. */
void httpd_stop(struct httpd *h);

#endif
