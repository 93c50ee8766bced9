#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.h"
#include "../orchestrator/fs.h"
#include "../orchestrator/log.h"

/* A client that keeps sending past the body limit is dropped after this
 * much: the 413 waits for the end of the body, which must come. */
#define DRAIN_MAX (1u << 20)

struct listener {
	struct httpd *h;
	struct MHD_Daemon *d;
	enum api_transport transport;
};

struct httpd {
	struct api *api;
	struct listener unix_l, tcp_l;
	char *socket_path;
	dev_t sock_dev;
	ino_t sock_ino;
	unsigned tcp_port;
};

/* Per request. Created by the URI callback, which sees the raw target
 * before MHD splits and unescapes it: routing and id checks work on
 * what the client sent. */
struct conn {
	struct listener *l;
	char *target;
	char *body;
	size_t len, cap, dropped;
	bool too_large, started;
};

static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *cn = xcalloc(1, sizeof(*cn));

	cn->l = cls;
	cn->target = xstrdup(uri);
	return cn;
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	if (!cn)
		return;
	free(cn->target);
	free(cn->body);
	free(cn);
	*con_cls = NULL;
}

/* MHD unescapes the path in place by default; routing uses the raw target
 * instead, so MHD's copy is left alone. */
static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_debug("http: %s", buf);
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static void fill_request(struct api_request *req, struct conn *cn, struct MHD_Connection *c, const char *method)
{
	const char *cl = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n;

	memset(req, 0, sizeof(*req));
	req->method = method;
	req->target = cn->target;
	req->content_type = header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	req->authorization = header(c, MHD_HTTP_HEADER_AUTHORIZATION);
	req->content_length = -1;
	if (cl && parse_u64(cl, &n) == 0)
		req->content_length = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	req->body = cn->body;
	req->body_len = cn->len;
	req->body_too_large = cn->too_large;
	req->transport = cn->l->transport;
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct api_response *resp)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char ra[16];

	if (resp->body_len) {
		r = MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
		if (r)
			resp->body = NULL; /* MHD frees it */
	} else {
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!r) {
		api_response_clear(resp);
		return MHD_NO;
	}
	if (resp->content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (resp->allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, resp->allow);
	if (resp->retry_after) {
		snprintf(ra, sizeof(ra), "%u", resp->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (resp->www_authenticate)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"numaorch\"");
	ret = MHD_queue_response(c, resp->status, r);
	MHD_destroy_response(r);
	api_response_clear(resp);
	return ret;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				 const char *version, const char *upload_data, size_t *upload_data_size,
				 void **con_cls)
{
	struct conn *cn = *con_cls;
	struct api *api = ((struct listener *)cls)->h->api;
	struct api_request req;
	struct api_response resp;

	if (!cn)
		return MHD_NO; /* cannot happen: the URI callback always runs */
	if (!cn->started) {
		/* Headers are in: refuse what the body cannot change (bad
		 * token, unknown route, declared body too big) before reading
		 * a byte of it. */
		cn->started = true;
		fill_request(&req, cn, c, method);
		if (api_preflight(api, &req, &resp))
			return send_response(c, &resp);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		if (!cn->too_large && cn->len + n <= API_BODY_MAX) {
			if (cn->len + n + 1 > cn->cap) {
				cn->cap = cn->len + n + 1 > 4096 ? cn->len + n + 1 : 4096;
				cn->body = xrealloc(cn->body, cn->cap);
			}
			memcpy(cn->body + cn->len, upload_data, n);
			cn->len += n;
			cn->body[cn->len] = '\0';
		} else {
			cn->too_large = true;
			cn->dropped += n;
			if (cn->dropped > DRAIN_MAX)
				return MHD_NO;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	fill_request(&req, cn, c, method);
	api_handle(api, &req, &resp);
	return send_response(c, &resp);
}

static int start_daemon(struct listener *l, int fd, const struct httpd_opts *o, const char *cert,
			const char *key, char *err, size_t errsz)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	unsigned maxc = o->max_connections ? o->max_connections : 64;
	unsigned tmo = o->idle_timeout_s ? o->idle_timeout_s : 30;
	struct MHD_OptionItem tls[3] = { { MHD_OPTION_END, 0, NULL } };

	if (cert) {
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key };
		tls[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	}
	/* Port 0 with LISTEN_SOCKET: MHD takes the socket as it is. */
	l->d = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, l,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_URI_LOG_CALLBACK, uri_cb, l,
				MHD_OPTION_NOTIFY_COMPLETED, completed_cb, NULL,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_CONNECTION_LIMIT, maxc,
				MHD_OPTION_CONNECTION_TIMEOUT, tmo,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				l->transport == API_TCP ? (maxc > 32 ? maxc / 2 : maxc) : 0u,
				MHD_OPTION_ARRAY, tls,
				MHD_OPTION_END);
	if (!l->d) {
		snprintf(err, errsz, "libmicrohttpd could not start the %s listener%s",
			 l->transport == API_TCP ? "TCP" : "unix socket",
			 cert ? " (is the certificate and key pair valid?)" : "");
		close(fd);
		return -EIO;
	}
	return 0;
}

/* The socket's directory, created as mkdir -p would (0755). */
static int mkdir_parents(const char *path)
{
	char *p = xstrdup(path), *slash = strrchr(p, '/');
	int r = 0;

	if (slash && slash != p) {
		*slash = '\0';
		r = fs_mkdir_p(p, 0755);
	}
	free(p);
	return r;
}

static int open_unix(struct httpd *h, const char *path, const char *group, char *err, size_t errsz)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	gid_t gid = (gid_t)-1;
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errsz, "API socket path %s is longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	/* Startup, one thread: getgrnam's static buffer is fine here. */
	if (group) {
		struct group *g = getgrnam(group);

		if (!g) {
			snprintf(err, errsz, "API socket group %s does not exist", group);
			return -ENOENT;
		}
		gid = g->gr_gid;
	} else {
		struct group *g = getgrnam("numaorch");

		if (g)
			gid = g->gr_gid;
	}
	r = mkdir_parents(path);
	if (r < 0) {
		snprintf(err, errsz, "cannot create the directory of API socket %s: %s", path, strerror(-r));
		return r;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errsz, "socket: %s", strerror(-r));
		return r;
	}
	if (lstat(path, &st) == 0) {
		/* A socket left by an agent that died can go; one that answers
		 * belongs to a running agent, and anything else is not ours. */
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			snprintf(err, errsz, "API socket path %s exists and is not a socket", path);
			return -EEXIST;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			snprintf(err, errsz, "another process is listening on API socket %s", path);
			return -EADDRINUSE;
		}
		close(fd);
		unlink(path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			snprintf(err, errsz, "socket: %s", strerror(-r));
			return r;
		}
	}
	/* Created 0660 from the start: no moment when others may connect. */
	old = umask(0117);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (r < 0) {
		snprintf(err, errsz, "cannot bind API socket %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0)
		r = -errno;
	if (r == 0 && chmod(path, 0660) < 0)
		r = -errno;
	if (r == 0 && listen(fd, 64) < 0)
		r = -errno;
	if (r == 0 && stat(path, &st) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errsz, "cannot listen on API socket %s: %s", path, strerror(-r));
		close(fd);
		unlink(path);
		return r;
	}
	h->socket_path = xstrdup(path);
	h->sock_dev = st.st_dev;
	h->sock_ino = st.st_ino;
	return fd;
}

static int open_tcp(struct httpd *h, const char *listen_s, char *err, size_t errsz)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char *host = xstrdup(listen_s), *port = strrchr(host, ':');
	char *hp = host;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, r;

	if (!port || !port[1]) {
		snprintf(err, errsz, "listen %s: must be ADDR:PORT", listen_s);
		free(host);
		return -EINVAL;
	}
	*port++ = '\0';
	if (hp[0] == '[' && hp[strlen(hp) - 1] == ']') {
		hp++;
		hp[strlen(hp) - 1] = '\0';
	}
	r = getaddrinfo(*hp && strcmp(hp, "*") ? hp : NULL, port, &hints, &ai);
	if (r != 0) {
		snprintf(err, errsz, "listen %s: %s", listen_s, gai_strerror(r));
		free(host);
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		r = -errno;
		snprintf(err, errsz, "cannot listen on %s: %s", listen_s, strerror(-r));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		free(host);
		return r;
	}
	h->tcp_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
			    ((struct sockaddr_in *)&ss)->sin_port);
	freeaddrinfo(ai);
	free(host);
	return fd;
}

int httpd_start(struct api *a, const struct httpd_opts *o, struct httpd **out, char *err, size_t errsz)
{
	struct httpd *h = xcalloc(1, sizeof(*h));
	char *cert = NULL, *key = NULL;
	size_t len;
	int fd, r = 0;

	h->api = a;
	h->unix_l = (struct listener){ .h = h, .transport = API_UNIX };
	h->tcp_l = (struct listener){ .h = h, .transport = API_TCP };
	if (o->tls_cert || o->tls_key) {
		if (!o->tls_cert || !o->tls_key || !o->listen) {
			snprintf(err, errsz, "TLS needs a certificate, a key and a TCP listener");
			r = -EINVAL;
			goto fail;
		}
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errsz, "this libmicrohttpd was built without TLS support");
			r = -EOPNOTSUPP;
			goto fail;
		}
		if ((r = fs_read_file(o->tls_cert, 1 << 20, &cert, &len)) < 0) {
			snprintf(err, errsz, "TLS certificate %s: %s", o->tls_cert, strerror(-r));
			goto fail;
		}
		if ((r = fs_read_file(o->tls_key, 1 << 20, &key, &len)) < 0) {
			snprintf(err, errsz, "TLS key %s: %s", o->tls_key, strerror(-r));
			goto fail;
		}
	}
	if (o->socket_path && *o->socket_path) {
		fd = open_unix(h, o->socket_path, o->socket_group, err, errsz);
		if (fd < 0 || (r = start_daemon(&h->unix_l, fd, o, NULL, NULL, err, errsz)) < 0) {
			r = fd < 0 ? fd : r;
			goto fail;
		}
		log_info("API listening on unix socket %s", o->socket_path);
	}
	if (o->listen && *o->listen) {
		fd = open_tcp(h, o->listen, err, errsz);
		if (fd < 0 || (r = start_daemon(&h->tcp_l, fd, o, cert, key, err, errsz)) < 0) {
			r = fd < 0 ? fd : r;
			goto fail;
		}
		log_info("API listening on %s %s (port %u), bearer token required", cert ? "https" : "http",
			 o->listen, h->tcp_port);
	}
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	*out = h;
	return 0;
fail:
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	httpd_stop(h);
	return r < 0 ? r : -EIO;
}

void httpd_stop(struct httpd *h)
{
	struct stat st;

	if (!h)
		return;
	if (h->tcp_l.d)
		MHD_stop_daemon(h->tcp_l.d);
	if (h->unix_l.d)
		MHD_stop_daemon(h->unix_l.d);
	/* Remove the socket only if it is still the one we made: a newer
	 * agent may already have replaced it. */
	if (h->socket_path && lstat(h->socket_path, &st) == 0 && st.st_dev == h->sock_dev &&
	    st.st_ino == h->sock_ino)
		unlink(h->socket_path);
	free(h->socket_path);
	free(h);
}

