#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <microhttpd.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

/* A client that keeps sending past the body limit is dropped after this
 * much: the 413 waits for the end of the body, which must come. */
#define DRAIN_MAX (1u << 20)
/* Connection threads run api_handle (jansson, a few KiB of locals) and
 * GnuTLS; 8 MiB each would be address space for nothing. */
#define HTTPD_THREAD_STACK (256u * 1024u)
/* Accepting is fast; a deep backlog keeps a local client's connect()
 * from failing (EAGAIN on a unix socket) while a flood is accepted and
 * pushed out. */
#define HTTPD_BACKLOG 1024

/* One open connection, from MHD's "started" notification to its "closed"
 * one. The connection table is what keeps the API available to the
 * clients that use it when others hold connections open: MHD's own idle
 * timeout restarts at every byte (a header line every 10 s keeps a
 * connection forever) and its connection limit refuses newcomers, so a
 * few dozen idle sockets took the API away. Here every connection has a
 * deadline for its whole next request, and a newcomer beyond the soft
 * limit pushes out the connection that has waited longest without
 * finishing a request, never one whose request is being answered. */
enum cstate {
	CS_WAITING = 0,   /* between requests, or reading one (headers, body) */
	CS_HANDLING,      /* complete: api_handle runs (may wait for the engine) */
};

struct cslot {
	struct listener *l;
	struct cslot *prev, *next;
	int fd;
	int64_t ready_ns;         /* accepted, or the last reply sent: its next request starts here */
	enum cstate st;
	bool authed;              /* TCP: a request on it carried the valid token */
	bool evicted;             /* shut down by us; MHD closes it */
	bool in_request;          /* a request line came, no reply queued for it yet */
	char client[64];          /* "uid:0", "ip:127.0.0.1": per-client limits */
};

struct listener {
	struct httpd *h;
	struct MHD_Daemon *d;
	enum api_transport transport;
	bool tls;
	pthread_mutex_t lock;
	struct cslot *head;
	unsigned live;             /* slots not evicted */
	unsigned soft;             /* past this many, the longest-waiting is pushed out */
	uint64_t evicted_full, evicted_late;
};

struct httpd {
	struct api *api;
	struct listener unix_l, tcp_l;
	char *socket_path;
	dev_t sock_dev;
	ino_t sock_ino;
	unsigned tcp_port;
	int64_t request_ns, unauth_ns;
	pthread_t reaper;
	bool reaper_started, reaper_stop;
	pthread_mutex_t reaper_lock;
	pthread_cond_t reaper_cond;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Under L's lock. MHD sees end-of-file and closes the connection itself;
 * the slot stays until its "closed" notification, which MHD sends before
 * it closes the descriptor, so FD is never someone else's here. */
static void evict(struct listener *l, struct cslot *s)
{
	if (s->evicted)
		return;
	s->evicted = true;
	l->live--;
	shutdown(s->fd, SHUT_RDWR);
}

/* A request cut at its deadline gets an answer, not just a closed socket:
 * 408 problem+json, written straight to the socket. That is safe only
 * while nobody else writes it: MHD writes nothing while it reads a
 * request (IN_REQUEST: our reply is not queued yet), and never on TLS,
 * whose stream raw bytes would break. Non-blocking: a client that does
 * not read does not get it. Under L's lock, before evict(). */
static void send_timeout(struct listener *l, struct cslot *s, int64_t limit_ns)
{
	char body[400], msg[600];
	int n, m;

	if (l->tls || !s->in_request || s->fd < 0)
		return;
	n = snprintf(body, sizeof(body),
		     "{\"detail\":\"the request was not complete within %lld s of the connection being "
		     "accepted or last answered (headers and body); the connection is closed\",\"status\":408,"
		     "\"title\":\"Request Timeout\",\"type\":\"urn:numaorch:problem:request-timeout\"}\n",
		     (long long)(limit_ns / 1000000000LL));
	m = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/problem+json\r\n"
		     "Cache-Control: no-store\r\nContent-Length: %d\r\n\r\n%s", n, body);
	if (send(s->fd, msg, (size_t)m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("http: 408 not sent: %s", strerror(errno));
}

/* The connection that waited longest without finishing a request; NULL
 * when every one is being answered. */
static struct cslot *oldest_waiting(struct listener *l)
{
	struct cslot *best = NULL;

	for (struct cslot *s = l->head; s; s = s->next)
		if (!s->evicted && s->st == CS_WAITING && (!best || s->ready_ns < best->ready_ns))
			best = s;
	return best;
}

static void client_key(struct listener *l, struct MHD_Connection *c, int fd, char *out, size_t sz)
{
	const union MHD_ConnectionInfo *ci;

	snprintf(out, sz, "unknown");
	if (l->transport == API_UNIX) {
		struct ucred uc;
		socklen_t n = sizeof(uc);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &n) == 0)
			snprintf(out, sz, "uid:%u", (unsigned)uc.uid);
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr) {
		char a[INET6_ADDRSTRLEN] = "?";
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
		snprintf(out, sz, "ip:%s", a);
	}
}

/* MHD_OPTION_NOTIFY_CONNECTION: runs on the listener's accept thread
 * (started) and as connections are cleaned up (closed). */
static void notify_conn_cb(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code)
{
	struct listener *l = cls;
	struct cslot *s = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!s)
			return;
		pthread_mutex_lock(&l->lock);
		if (s->prev)
			s->prev->next = s->next;
		else
			l->head = s->next;
		if (s->next)
			s->next->prev = s->prev;
		if (!s->evicted)
			l->live--;
		pthread_mutex_unlock(&l->lock);
		free(s);
		*socket_context = NULL;
		return;
	}
	{
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct cslot *v;

		s = xcalloc(1, sizeof(*s));
		s->l = l;
		s->fd = ci ? ci->connect_fd : -1;
		s->ready_ns = mono_ns();
		client_key(l, c, s->fd, s->client, sizeof(s->client));
		*socket_context = s;
		pthread_mutex_lock(&l->lock);
		s->next = l->head;
		if (l->head)
			l->head->prev = s;
		l->head = s;
		l->live++;
		/* Past the listener's limit, the connection that waited longest
		 * goes, whoever's it is (a per-address share would make a flood
		 * from one address push out that address's real clients too).
		 * The newcomer is the youngest, so it is the last candidate. */
		if (l->live > l->soft && (v = oldest_waiting(l))) {
			evict(l, v);
			l->evicted_full++;
		}
		pthread_mutex_unlock(&l->lock);
	}
}

static struct cslot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void slot_set(struct cslot *s, enum cstate st, bool restart)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->l->lock);
	s->st = st;
	if (restart)
		s->ready_ns = mono_ns();
	pthread_mutex_unlock(&s->l->lock);
}

/* Deadlines: a TCP connection that has not shown the token must finish
 * its request within unauth_ns, any other within request_ns, counted
 * from when it was accepted or last answered — headers, body, sending
 * the reply, and idling between keep-alive requests alike. */
static void reap(struct httpd *h, struct listener *l, int64_t now)
{
	if (!l->d)
		return;
	pthread_mutex_lock(&l->lock);
	for (struct cslot *s = l->head; s; s = s->next) {
		int64_t limit = l->transport == API_TCP && !s->authed ? h->unauth_ns : h->request_ns;

		if (!s->evicted && s->st == CS_WAITING && now - s->ready_ns > limit) {
			send_timeout(l, s, limit);
			evict(l, s);
			l->evicted_late++;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

static void *reaper_main(void *arg)
{
	struct httpd *h = arg;

	pthread_mutex_lock(&h->reaper_lock);
	while (!h->reaper_stop) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 100 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->reaper_cond, &h->reaper_lock, &until);
		if (h->reaper_stop)
			break;
		pthread_mutex_unlock(&h->reaper_lock);
		reap(h, &h->unix_l, mono_ns());
		reap(h, &h->tcp_l, mono_ns());
		pthread_mutex_lock(&h->reaper_lock);
	}
	pthread_mutex_unlock(&h->reaper_lock);
	return NULL;
}

/* Per request. Created by the URI callback, which sees the raw target
 * before MHD splits and unescapes it: routing and id checks work on
 * what the client sent. */
struct conn {
	struct listener *l;
	struct cslot *slot;          /* NULL only if MHD gave none */
	char *target;
	char *body;
	size_t len, cap, dropped;
	bool too_large, started;
	bool heavy;                  /* its reply holds a large-answer slot */
};

static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *cn = xcalloc(1, sizeof(*cn));

	cn->l = cls;
	cn->slot = slot_of(c);
	cn->target = xstrdup(uri);
	if (cn->slot) {
		pthread_mutex_lock(&cn->l->lock);
		cn->slot->in_request = true;
		pthread_mutex_unlock(&cn->l->lock);
	}
	return cn;
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	if (!cn)
		return;
	/* The reply is sent (or the request failed): the next one starts. */
	if (cn->slot) {
		pthread_mutex_lock(&cn->l->lock);
		cn->slot->in_request = false;
		pthread_mutex_unlock(&cn->l->lock);
	}
	slot_set(cn->slot, CS_WAITING, true);
	if (cn->heavy)
		api_heavy_release(cn->l->h->api, cn->l->transport);
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

/* fmt comes from libmicrohttpd itself; the attribute lets the compiler check
 * the va_list use here instead of warning about a non-literal format. */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

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
	req->client = cn->slot ? cn->slot->client : NULL;
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct conn *cn, struct api_response *resp)
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
	/* A TCP client without the token gets its answer and loses the
	 * connection: holding one open costs it a new handshake each time. */
	if (cn->l->transport == API_TCP && (resp->status == 401 || resp->status == 403))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (cn->slot) {
		pthread_mutex_lock(&cn->l->lock);
		if (resp->authenticated)
			cn->slot->authed = true;
		/* From here MHD writes the socket: no 408 of ours may come. */
		cn->slot->in_request = false;
		pthread_mutex_unlock(&cn->l->lock);
	}
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
			return send_response(c, cn, &resp);
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
	/* Complete: no deadline while it is answered (a write may wait for
	 * the engine up to its own timeout); sending the reply gets one. */
	slot_set(cn->slot, CS_HANDLING, false);
	req.hold_heavy = true;
	api_handle(api, &req, &resp);
	cn->heavy = resp.heavy_slot;
	slot_set(cn->slot, CS_WAITING, true);
	return send_response(c, cn, &resp);
}

static void conn_stats(void *ctx, enum api_transport t, struct api_conn_stats *out)
{
	struct httpd *h = ctx;
	struct listener *l = t == API_TCP ? &h->tcp_l : &h->unix_l;

	memset(out, 0, sizeof(*out));
	if (!l->d)
		return;
	pthread_mutex_lock(&l->lock);
	out->open = l->live;
	out->pushed_out = l->evicted_full;
	out->timed_out = l->evicted_late;
	pthread_mutex_unlock(&l->lock);
}

/* TLS 1.2 and 1.3 only: 1.0 and 1.1 are deprecated (RFC 8996). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

static int start_daemon(struct listener *l, int fd, const struct httpd_opts *o, const char *cert,
			const char *key, char *err, size_t errsz)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	struct MHD_OptionItem tls[4] = { { MHD_OPTION_END, 0, NULL } };
	unsigned hard;

	l->soft = o->max_connections ? o->max_connections : HTTPD_MAX_CONNECTIONS;
	/* Both listeners at MHD's limit must fit in the descriptor limit,
	 * with room for the engine's files: EMFILE on accept would make MHD
	 * refuse everyone. */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
			rlim_t room = rl.rlim_cur > 512 ? (rl.rlim_cur - 256) / 3 : 64;

			if (l->soft > room) {
				log_warn("API %s listener: %u connections would not fit in the descriptor "
					 "limit (%llu); holding at most %llu", l->transport == API_TCP ? "TCP" :
					 "unix socket", l->soft, (unsigned long long)rl.rlim_cur,
					 (unsigned long long)room);
				l->soft = (unsigned)room;
			}
		}
	}
	/* MHD's own limit refuses, ours evicts: leave room above the soft
	 * limit for newcomers arriving while the evicted ones close. */
	hard = l->soft + l->soft / 2 + 16;
	pthread_mutex_init(&l->lock, NULL);
	if (cert) {
		l->tls = true;
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key };
		tls[2] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES };
		tls[3] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	}
	/* Port 0 with LISTEN_SOCKET: MHD takes the socket as it is. MHD's
	 * idle timeout stays as a backstop; the reaper's deadlines are the
	 * rule. */
	l->d = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, l,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_URI_LOG_CALLBACK, uri_cb, l,
				MHD_OPTION_NOTIFY_COMPLETED, completed_cb, NULL,
				MHD_OPTION_NOTIFY_CONNECTION, notify_conn_cb, l,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_CONNECTION_LIMIT, hard,
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)(l->h->request_ns / 1000000000LL) + 1,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)HTTPD_THREAD_STACK,
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

/* The socket's directory, created as mkdir -p would (0755), and trusted
 * like the state directory: root (or we) own it and nobody else may write
 * it, else another user could swap the stale socket this unlinks, or the
 * socket itself, for something else. */
static int mkdir_parents(const char *path, char *err, size_t errsz)
{
	char *p = xstrdup(path), *slash = strrchr(p, '/');
	int r = 0;

	if (slash && slash != p) {
		*slash = '\0';
		r = fs_mkdir_trusted("API socket directory", p, 0755, err, errsz);
		if (r >= 0) {
			close(r);
			r = 0;
		}
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
	r = mkdir_parents(path, err, errsz);
	if (r < 0)
		return r;
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
	if (r == 0 && listen(fd, HTTPD_BACKLOG) < 0)
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
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, HTTPD_BACKLOG) < 0 ||
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

/* The TLS key: a regular file (never blocking on a FIFO) that others
 * cannot read, checked like the token file. */
static int read_key(const char *path, char **out, char *err, size_t errsz)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd = fs_open_regular("TLS key", path, &st, err, errsz), r = 0;

	if (fd < 0)
		return fd;
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(err, errsz, "TLS key %s is accessible to others (mode %04o): chmod o-rwx it", path,
			 (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_size > (1 << 20)) {
		snprintf(err, errsz, "TLS key %s: larger than 1 MiB", path);
		close(fd);
		return -EFBIG;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			snprintf(err, errsz, "TLS key %s: %s", path, n < 0 ? strerror(-r) : "shorter than its size");
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (r < 0) {
		explicit_bzero(buf, len);
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}

int httpd_start(struct api *a, const struct httpd_opts *o, struct httpd **out, char *err, size_t errsz)
{
	struct httpd *h = xcalloc(1, sizeof(*h));
	char *cert = NULL, *key = NULL;
	size_t len;
	int fd, r = 0;

	h->api = a;
	/* Thread per connection: glibc would give the threads up to 8 arenas
	 * per core, each keeping what its requests freed (tens of MiB more
	 * RSS under concurrent readers of a full policy store, which
	 * test_api_limits.py bounds). Two arenas keep lock contention low
	 * enough. */
	mallopt(M_ARENA_MAX, 2);
	pthread_mutex_init(&h->reaper_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&h->reaper_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
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
		if ((r = fs_read_regular("TLS certificate", o->tls_cert, 1 << 20, &cert, &len, err, errsz)) < 0 ||
		    (r = read_key(o->tls_key, &key, err, errsz)) < 0)
			goto fail;
	}
	h->request_ns = (int64_t)(o->request_timeout_s ? o->request_timeout_s : HTTPD_REQUEST_TIMEOUT_S) *
			1000000000LL;
	h->unauth_ns = (int64_t)(o->unauth_timeout_s ? o->unauth_timeout_s : HTTPD_UNAUTH_TIMEOUT_S) *
		       1000000000LL;
	if (h->unauth_ns > h->request_ns)
		h->unauth_ns = h->request_ns;
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
	if ((r = -pthread_create(&h->reaper, NULL, reaper_main, h)) < 0) {
		snprintf(err, errsz, "cannot start the API's connection reaper: %s", strerror(-r));
		httpd_stop(h);
		return r;
	}
	h->reaper_started = true;
	api_set_conn_stats(a, conn_stats, h);
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
	api_set_conn_stats(h->api, NULL, NULL);
	if (h->reaper_started) {
		pthread_mutex_lock(&h->reaper_lock);
		h->reaper_stop = true;
		pthread_cond_signal(&h->reaper_cond);
		pthread_mutex_unlock(&h->reaper_lock);
		pthread_join(h->reaper, NULL);
	}
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
	if (h->unix_l.d || h->unix_l.soft)
		pthread_mutex_destroy(&h->unix_l.lock);
	if (h->tcp_l.d || h->tcp_l.soft)
		pthread_mutex_destroy(&h->tcp_l.lock);
	pthread_mutex_destroy(&h->reaper_lock);
	pthread_cond_destroy(&h->reaper_cond);
	free(h);
}

