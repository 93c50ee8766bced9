/* numaorch-nrt-export — keeps this node's NodeResourceTopology object in
 * the cluster's API server up to date with what the local numaorchd
 * measures (its GET /v1/topology), so the scheduler's topology-aware
 * plugins see it. It runs beside the agent (a sidecar in the DaemonSet),
 * reads the agent on its unix socket and writes through the API server's
 * REST API as its service account, verifying the server with the
 * account's CA. One thread: read, decide (nrtx.c), write, sleep.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>

#include "ctl_http.h"
#include "nrtx.h"

#define PROG "numaorch-nrt-export"
#define DEFAULT_SOCKET "/run/numaorch/api.sock"
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define NS_PER_S 1000000000ull

struct opts {
	const char *socket, *node, *server, *token_file, *cacert;
	unsigned interval_s, heartbeat_s, backoff_max_s;
	long timeout_ms;
	int once;
	char server_buf[512];
};

/* The bearer token as last read, and what the file looked like then:
 * projected service account tokens are rotated by the kubelet, which
 * swaps the file (a symlink into a new directory) under us. */
struct token {
	char *value;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
};

struct exporter {
	struct opts o;
	struct token tok;
	struct nrtx_sched sched;
	json_t *last;          /* the agent's reply last written */
	char last_err[1024];   /* the last failure logged, to log a repeat once */
};

static void logmsg(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logmsg(const char *level, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s%s", PROG, level, *level ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void token_wipe(struct token *t)
{
	if (t->value) {
		memset(t->value, 0, strlen(t->value));
		free(t->value);
	}
	t->value = NULL;
}

/* Re-read the token file when it is not the file read last. Returns 0
 * (the token current), or -errno with ERR filled. */
static int token_refresh(struct token *t, const char *path, char *err, size_t errsz)
{
	char buf[8192];
	struct stat st;
	int r;

	if (stat(path, &st) < 0) {
		r = -errno;
		snprintf(err, errsz, "token file %s: %s", path, strerror(-r));
		return r;
	}
	if (t->value && st.st_dev == t->dev && st.st_ino == t->ino && st.st_size == t->size &&
	    st.st_mtim.tv_sec == t->mtime.tv_sec && st.st_mtim.tv_nsec == t->mtime.tv_nsec)
		return 0;
	r = ctl_read_token(path, buf, sizeof(buf), err, errsz);
	if (r < 0)
		return r;
	if (t->value)
		logmsg("", "token file %s changed: using the new token", path);
	token_wipe(t);
	t->value = strdup(buf);
	if (!t->value)
		abort(); /* the project's OOM policy */
	memset(buf, 0, sizeof(buf));
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->size = st.st_size;
	t->mtime = st.st_mtim;
	return 0;
}

/* GET /v1/topology from the agent, parsed. */
static json_t *read_agent(const struct opts *o, char *err, size_t errsz)
{
	struct ctl_conn c = { .socket = o->socket, .timeout_ms = o->timeout_ms, .agent = PROG };
	struct ctl_reply rep;
	json_error_t je;
	json_t *j;

	if (ctl_request(&c, "GET", "/v1/topology", NULL, CTL_JSON_MAX, &rep, err, errsz) < 0)
		return NULL;
	if (rep.status != 200) {
		char msg[256];

		nrtx_server_message(rep.body, msg, sizeof(msg));
		snprintf(err, errsz, "numaorchd on %s: GET /v1/topology: %ld: %s", o->socket, rep.status, msg);
		ctl_reply_free(&rep);
		return NULL;
	}
	j = json_loads(rep.body, 0, &je);
	if (!j)
		snprintf(err, errsz, "numaorchd on %s: GET /v1/topology: not JSON: %s", o->socket, je.text);
	ctl_reply_free(&rep);
	return j;
}

/* What to tell the operator an error status means. */
static const char *status_hint(long status)
{
	switch (status) {
	case 401:
		return " (the API server refused the token: is it the service account's, and current?)";
	case 403:
		return " (the service account may not write noderesourcetopologies: see the ClusterRole in "
		       "deploy/kubernetes/nrt/)";
	case 404:
		return " (is the NodeResourceTopology CRD, topology.node.k8s.io/v1alpha2, installed?)";
	default:
		return "";
	}
}

/* One request of the exchange; the reply's status in *STATUS and its
 * body in REP. Returns 0, or -1 with ERR filled (no answer at all). */
static int api_call(struct exporter *x, enum nrtx_step step, const char *body, struct ctl_reply *rep,
		    char *err, size_t errsz)
{
	struct ctl_conn c = { .url = x->o.server, .token = x->tok.value, .cacert = x->o.cacert,
			      .timeout_ms = x->o.timeout_ms, .peer = "the API server", .agent = PROG };
	char path[1024], *node = ctl_escape(x->o.node);
	int r;

	if (step == NRTX_POST)
		snprintf(path, sizeof(path), "%s", NRTX_API_PATH);
	else
		snprintf(path, sizeof(path), "%s/%s", NRTX_API_PATH, node);
	free(node);
	r = ctl_request(&c, nrtx_step_method(step), path, body, CTL_JSON_MAX, rep, err, errsz);
	return r < 0 ? -1 : 0;
}

/* GET, then POST or PUT (nrtx_next), for the agent's reading AGENT.
 * Returns 0 with *DONE_BY the method that wrote and RV the object's new
 * resourceVersion, or -1 with ERR saying what failed. */
static int exchange(struct exporter *x, const json_t *agent, const char **done_by, char *rv, size_t rvsz,
		    char *err, size_t errsz)
{
	enum nrtx_step step = NRTX_GET, next;
	int retried = 0;

	rv[0] = '\0';
	while (step != NRTX_DONE) {
		struct ctl_reply rep;
		char *body = NULL;

		if (step != NRTX_GET) {
			json_t *obj = nrtx_object(agent, x->o.node, step == NRTX_PUT ? rv : NULL, err, errsz);

			if (!obj)
				return -1;
			body = json_dumps(obj, JSON_COMPACT);
			json_decref(obj);
		}
		if (api_call(x, step, body, &rep, err, errsz) < 0) {
			free(body);
			return -1;
		}
		free(body);
		next = nrtx_next(step, rep.status, &retried);
		if (next == NRTX_FAIL) {
			char msg[384];

			nrtx_server_message(rep.body, msg, sizeof(msg));
			snprintf(err, errsz, "%s noderesourcetopologies/%s: %ld: %s%s", nrtx_step_method(step),
				 x->o.node, rep.status, msg, status_hint(rep.status));
			ctl_reply_free(&rep);
			return -1;
		}
		if (step == NRTX_GET && next == NRTX_PUT && nrtx_resource_version(rep.body, rv, rvsz) < 0) {
			snprintf(err, errsz, "GET noderesourcetopologies/%s: the object has no resourceVersion",
				 x->o.node);
			ctl_reply_free(&rep);
			return -1;
		}
		if (next == NRTX_GET)
			logmsg("", "%s noderesourcetopologies/%s: %ld (written by someone else meanwhile): reading it "
			       "again", nrtx_step_method(step), x->o.node, rep.status);
		if (next == NRTX_DONE) {
			*done_by = step == NRTX_POST ? "created" : "updated";
			if (nrtx_resource_version(rep.body, rv, rvsz) < 0)
				snprintf(rv, rvsz, "?");
		}
		ctl_reply_free(&rep);
		step = next;
	}
	return 0;
}

/* Log a failure; the same failure again only once it changed, so a long
 * outage is one line, not one per attempt. */
static void note_failure(struct exporter *x, const char *err, uint64_t retry_in_ns)
{
	if (strcmp(err, x->last_err) != 0)
		logmsg("error", "%s; retrying in %llu s", err, (unsigned long long)(retry_in_ns / NS_PER_S));
	snprintf(x->last_err, sizeof(x->last_err), "%s", err);
}

/* One round: read the agent, decide, write when due. Returns 0 when the
 * object is current, -1 on a failure (logged). */
static int sync_once(struct exporter *x)
{
	char err[1024], rv[128];
	const char *done_by = NULL;
	uint64_t now = mono_ns(), wait;
	enum nrtx_why why;
	json_t *agent;

	agent = read_agent(&x->o, err, sizeof(err));
	if (agent) {
		why = nrtx_decide(&x->sched, !nrtx_same(agent, x->last), now, x->o.heartbeat_s * NS_PER_S);
		if (why == NRTX_SKIP) {
			json_decref(agent);
			return 0;
		}
		if (token_refresh(&x->tok, x->o.token_file, err, sizeof(err)) == 0 &&
		    exchange(x, agent, &done_by, rv, sizeof(rv), err, sizeof(err)) == 0) {
			logmsg("", "noderesourcetopologies/%s %s (%s), resourceVersion %s", x->o.node, done_by,
			       nrtx_why_name(why), rv);
			json_decref(x->last);
			x->last = agent;
			x->sched = (struct nrtx_sched){ .written = 1, .last_write_ns = now };
			x->last_err[0] = '\0';
			return 0;
		}
		json_decref(agent);
	}
	x->sched.failures++;
	wait = nrtx_backoff(x->sched.failures, (uint64_t)x->o.interval_s * NS_PER_S,
			    (uint64_t)x->o.backoff_max_s * NS_PER_S);
	x->sched.retry_at_ns = now + wait;
	note_failure(x, err, wait);
	return -1;
}

/* Sleep until DEADLINE_NS (monotonic) or a signal to stop. Returns 1 on
 * such a signal. */
static int sleep_until(const sigset_t *stop, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = mono_ns();
		struct timespec ts;
		int sig;

		if (now >= deadline_ns)
			return 0;
		ts.tv_sec = (time_t)((deadline_ns - now) / NS_PER_S);
		ts.tv_nsec = (long)((deadline_ns - now) % NS_PER_S);
		sig = sigtimedwait(stop, NULL, &ts);
		if (sig > 0)
			return 1;
		if (errno != EINTR && errno != EAGAIN)
			return 1;
		if (errno == EAGAIN)
			return 0;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options]\n"
		"Keep this node's NodeResourceTopology object (topology.node.k8s.io/v1alpha2) up to date\n"
		"from the local numaorchd's GET /v1/topology.\n\n"
		"  -s, --socket PATH      the agent's unix socket (default " DEFAULT_SOCKET ", or $NUMAORCH_SOCKET)\n"
		"  -n, --node NAME        the node's name (default $NODE_NAME)\n"
		"      --server URL       the API server (default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)\n"
		"      --token-file FILE  bearer token (default " SA_DIR "/token), re-read when it changes\n"
		"      --cacert FILE      CA to verify the API server with (default " SA_DIR "/ca.crt)\n"
		"      --interval S       read the agent every S seconds (default 30)\n"
		"      --heartbeat S      write at least every S seconds, changed or not (default 300)\n"
		"      --backoff-max S    longest wait after failures in a row (default 300)\n"
		"      --timeout S        per request (default 10)\n"
		"      --once             one round, then exit: 0 when the object is current\n"
		"  -h, --help\n");
}

static int parse_uint(const char *arg, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

enum { O_SERVER = 256, O_TOKEN, O_CACERT, O_INTERVAL, O_HEARTBEAT, O_BACKOFF, O_TIMEOUT, O_ONCE };

static int parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },     { "node", required_argument, NULL, 'n' },
		{ "server", required_argument, NULL, O_SERVER }, { "token-file", required_argument, NULL, O_TOKEN },
		{ "cacert", required_argument, NULL, O_CACERT }, { "interval", required_argument, NULL, O_INTERVAL },
		{ "heartbeat", required_argument, NULL, O_HEARTBEAT },
		{ "backoff-max", required_argument, NULL, O_BACKOFF },
		{ "timeout", required_argument, NULL, O_TIMEOUT }, { "once", no_argument, NULL, O_ONCE },
		{ "help", no_argument, NULL, 'h' },             { NULL, 0, NULL, 0 },
	};
	unsigned t = 10;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "s:n:h", lopts, NULL)) != -1) {
		switch (c) {
		case 's': o->socket = optarg; break;
		case 'n': o->node = optarg; break;
		case O_SERVER: o->server = optarg; break;
		case O_TOKEN: o->token_file = optarg; break;
		case O_CACERT: o->cacert = optarg; break;
		case O_INTERVAL: bad |= parse_uint(optarg, 1, 86400, &o->interval_s); break;
		case O_HEARTBEAT: bad |= parse_uint(optarg, 1, 86400 * 7, &o->heartbeat_s); break;
		case O_BACKOFF: bad |= parse_uint(optarg, 1, 86400, &o->backoff_max_s); break;
		case O_TIMEOUT: bad |= parse_uint(optarg, 1, 600, &t); break;
		case O_ONCE: o->once = 1; break;
		case 'h': usage(stdout); exit(EX_OK);
		default: usage(stderr); return EX_USAGE;
		}
		if (bad) {
			fprintf(stderr, PROG ": %s: not a number of seconds in range\n", optarg);
			return EX_USAGE;
		}
	}
	o->timeout_ms = (long)t * 1000;
	if (optind < argc) {
		usage(stderr);
		return EX_USAGE;
	}
	return 0;
}

/* What the flags left unset, from the pod's environment. */
static int fill_defaults(struct opts *o)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");

	if (!o->node)
		o->node = getenv("NODE_NAME");
	if (!o->node || !*o->node) {
		fprintf(stderr, PROG ": no node name: set NODE_NAME (the DaemonSet's fieldRef spec.nodeName) "
				"or --node\n");
		return EX_USAGE;
	}
	if (!o->server) {
		if (!host || !*host) {
			fprintf(stderr, PROG ": no API server: not in a pod (KUBERNETES_SERVICE_HOST unset); "
					"give --server\n");
			return EX_USAGE;
		}
		/* An IPv6 service address goes in brackets in a URL. */
		snprintf(o->server_buf, sizeof(o->server_buf), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
			 host, port && *port ? port : "443");
		o->server = o->server_buf;
	}
	if (strncmp(o->server, "https://", 8) != 0) {
		fprintf(stderr, PROG ": --server %s: only https (the token must not travel in clear)\n", o->server);
		return EX_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct exporter x = { .o = { .socket = getenv("NUMAORCH_SOCKET") ? getenv("NUMAORCH_SOCKET") : DEFAULT_SOCKET,
				     .token_file = SA_DIR "/token", .cacert = SA_DIR "/ca.crt",
				     .interval_s = 30, .heartbeat_s = 300, .backoff_max_s = 300 } };
	sigset_t stop;
	int r;

	setvbuf(stderr, NULL, _IOLBF, 0);
	if ((r = parse_args(&x.o, argc, argv)) || (r = fill_defaults(&x.o)))
		return r;
	/* Signals to stop are taken synchronously, in the sleep between
	 * rounds; a round in flight ends within its requests' timeout. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	logmsg("", "node %s: agent %s, API server %s (CA %s), every %u s, heartbeat %u s", x.o.node, x.o.socket,
	       x.o.server, x.o.cacert, x.o.interval_s, x.o.heartbeat_s);
	for (;;) {
		uint64_t next;

		r = sync_once(&x);
		if (x.o.once)
			break;
		next = mono_ns() + (uint64_t)x.o.interval_s * NS_PER_S;
		if (x.sched.failures && x.sched.retry_at_ns > next)
			next = x.sched.retry_at_ns;
		if (sleep_until(&stop, next)) {
			logmsg("", "stopping");
			r = 0;
			break;
		}
	}
	json_decref(x.last);
	token_wipe(&x.tok);
	return r < 0 ? 1 : 0;
}
