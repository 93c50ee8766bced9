#include "vmsrc.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include "vmproc.h"
#include "../orchestrator/clock.h"
#include "../orchestrator/xalloc.h"
#include "../orchestrator/log.h"

#define BACKOFF_MIN_NS  250000000LL   /* first retry after a failed connect */
#define BACKOFF_MAX_NS 2000000000LL   /* a unix connect that fails is cheap */
#define REFRESH_NS    60000000000LL   /* re-read a domain's settings at least this often */
#define PENDING_TTL_NS 30000000000LL  /* a start event whose domain never showed up */

/* ---- pure helpers -------------------------------------------------------- */

enum vmsrc_action vmsrc_event_action(int event, int detail)
{
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		/* booted, migrated in, restored, from snapshot, woken up:
		 * in every case a QEMU process now runs the domain. */
		return VMSRC_PLACE;
	case VIR_DOMAIN_EVENT_RESUMED:
		/* An incoming migration is running only from here on; place
		 * it (once per instance: a STARTED before does not repeat). */
		return detail == VIR_DOMAIN_EVENT_RESUMED_MIGRATED ? VMSRC_PLACE : VMSRC_RESCAN;
	case VIR_DOMAIN_EVENT_STOPPED:
		return VMSRC_FORGET;
	case VIR_DOMAIN_EVENT_CRASHED:
		return VMSRC_RESCAN;
	default:
		/* defined, undefined, suspended, shutdown (STOPPED follows),
		 * pmsuspended: nothing a placement depends on. */
		return VMSRC_NONE;
	}
}

const char *vmsrc_action_name(enum vmsrc_action a)
{
	switch (a) {
	case VMSRC_PLACE: return "place";
	case VMSRC_RESCAN: return "rescan";
	case VMSRC_FORGET: return "forget";
	case VMSRC_REFRESH: return "refresh";
	default: return "none";
	}
}

void vmsrc_guest_id(char out[GUEST_ID_MAX], const char *uuid)
{
	snap_make_id(out, "vm", uuid);
}

static const char *event_name(int event)
{
	static const char *const names[] = { "defined", "undefined", "started", "suspended",
					     "resumed", "stopped", "shutdown", "pmsuspended", "crashed" };

	return event >= 0 && (size_t)event < sizeof(names) / sizeof(names[0]) ? names[event] : "?";
}

static const char *numa_mode_name(int m)
{
	switch (m) {
	case VIR_DOMAIN_NUMATUNE_MEM_STRICT: return "strict";
	case VIR_DOMAIN_NUMATUNE_MEM_PREFERRED: return "preferred";
	case VIR_DOMAIN_NUMATUNE_MEM_INTERLEAVE: return "interleave";
	case VIR_DOMAIN_NUMATUNE_MEM_RESTRICTIVE: return "restrictive";
	default: return "?";
	}
}

/* ---- state ---------------------------------------------------------------- */

struct vm_event {
	char uuid[VIR_UUID_STRING_BUFLEN];
	int domid;
	enum vmsrc_action action;
	int64_t t_ns;
};

/* One running domain instance, as the engine thread knows it. */
struct vm_dom {
	char uuid[VIR_UUID_STRING_BUFLEN];
	char id[GUEST_ID_MAX];
	int domid;
	struct vmxml_info x;
	char numa_mode[16];          /* live, from virDomainGetNumaParameters */
	char numa_nodeset[64];
	pid_t pid;
	uint64_t start;              /* process start time (ticks) */
	char *threads_base;          /* libvirt's thread cgroups, or NULL */
	char *cgroup;                /* the domain's cgroup, or NULL */
	char *mem_cg;                /* its memory cgroup, or NULL */
	bool dirty, seen, warned;
	int64_t refreshed_ns;

	/* initial placement */
	bool place_pending, offered;
	int64_t place_event_ns;

	/* CPU time of the last sample */
	uint64_t prev_cpu_ns;
	int64_t prev_t_ns;
	unsigned nr_prev_vcpu;
	pid_t *prev_vcpu_tid;
	uint64_t *prev_vcpu_ns;
};

struct vmsrc {
	unsigned refs;               /* owner + each libvirt registration holding it */

	/* Fixed at creation. */
	char *uri;
	int ka_interval;
	unsigned ka_count;
	unsigned nr_scopes;
	char **scopes;
	struct host_paths hp;
	struct cg_hier h;
	vmsrc_notify_fn notify;
	void *notify_ctx;

	/* Shared with the event loop thread: under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool dead;
	virConnectPtr conn;
	int cb_ids[3];
	int timer;
	bool lost, first_done, resync, ever_connected, logged_fail;
	int64_t next_try_ns, backoff_ns, lost_at_ns;
	char last_error[256];
	struct vmsrc_status st;
	struct vm_event *evq;
	unsigned nr_evq, cap_evq;

	/* Engine thread only. */
	struct vm_dom *doms;
	unsigned nr_doms, cap_doms;
	bool synced;                 /* one full listing done */
	struct vm_event *pending;    /* start events not yet matched to a listing */
	unsigned nr_pending;
	struct vmsrc_placement *offer;
	unsigned nr_offer;
};

static void vs_ref(struct vmsrc *vs)
{
	__atomic_add_fetch(&vs->refs, 1, __ATOMIC_RELAXED);
}

static void vs_unref(void *opaque)
{
	struct vmsrc *vs = opaque;

	if (__atomic_sub_fetch(&vs->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	free(vs->uri);
	for (unsigned i = 0; i < vs->nr_scopes; i++)
		free(vs->scopes[i]);
	free(vs->scopes);
	free(vs->evq);
	pthread_mutex_destroy(&vs->lock);
	pthread_cond_destroy(&vs->cond);
	free(vs);
}

/* ---- libvirt's event loop (one per process) ------------------------------ */

static pthread_once_t ev_once = PTHREAD_ONCE_INIT;
static int ev_err;

/* libvirt reports every error through this as well as through the
 * per-thread last error; by default it prints to stderr. Callers log
 * what matters, once. */
static void quiet_errors(void *ud, virErrorPtr err)
{
	(void)ud;
	(void)err;
}

static void *ev_loop(void *arg)
{
	(void)arg;
	for (;;)
		if (virEventRunDefaultImpl() < 0)
			usleep(100000); /* should not happen; never spin */
	return NULL;
}

static void ev_init(void)
{
	sigset_t all, old;
	pthread_t t;

	if (virInitialize() < 0) {
		ev_err = -EIO;
		return;
	}
	virSetErrorFunc(NULL, quiet_errors);
	/* Must precede virConnectOpen: a connection opened without an event
	 * implementation gets neither events nor keepalive. */
	if (virEventRegisterDefaultImpl() < 0) {
		ev_err = -EIO;
		return;
	}
	/* The engine takes SIGTERM/SIGHUP through a signalfd: this thread
	 * must never be the one a signal is delivered to. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ev_err = -pthread_create(&t, NULL, ev_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ev_err == 0)
		pthread_detach(t);
}

static void last_error(char *buf, size_t sz)
{
	const char *m = virGetLastErrorMessage();

	snprintf(buf, sz, "%s", m && *m ? m : "unknown libvirt error");
}

/* ---- connection ----------------------------------------------------------- */

static void notify_locked(struct vmsrc *vs)
{
	if (!vs->dead && vs->notify)
		vs->notify(vs->notify_ctx);
}

static void push_event(struct vmsrc *vs, const char *uuid, int domid, enum vmsrc_action a)
{
	if (vs->nr_evq == vs->cap_evq) {
		/* A burst of events while the engine is busy: keep the
		 * newest; a lost note only delays a refresh to the listing. */
		if (vs->cap_evq >= 4096) {
			memmove(vs->evq, vs->evq + 1, (vs->nr_evq - 1) * sizeof(*vs->evq));
			vs->nr_evq--;
		} else {
			vs->cap_evq = vs->cap_evq ? vs->cap_evq * 2 : 16;
			vs->evq = xrealloc(vs->evq, vs->cap_evq * sizeof(*vs->evq));
		}
	}
	struct vm_event *ev = &vs->evq[vs->nr_evq++];

	snprintf(ev->uuid, sizeof(ev->uuid), "%s", uuid);
	ev->domid = domid;
	ev->action = a;
	ev->t_ns = clock_mono_ns();
}

static int lifecycle_cb(virConnectPtr c, virDomainPtr dom, int event, int detail, void *opaque)
{
	struct vmsrc *vs = opaque;
	enum vmsrc_action a = vmsrc_event_action(event, detail);
	char uuid[VIR_UUID_STRING_BUFLEN];

	(void)c;
	if (a == VMSRC_NONE || virDomainGetUUIDString(dom, uuid) < 0)
		return 0;
	log_debug("libvirt: domain %s (%s) %s (detail %d): %s", virDomainGetName(dom), uuid,
		  event_name(event), detail, vmsrc_action_name(a));
	pthread_mutex_lock(&vs->lock);
	if (!vs->dead) {
		push_event(vs, uuid, (int)virDomainGetID(dom), a);
		notify_locked(vs);
	}
	pthread_mutex_unlock(&vs->lock);
	return 0;
}

/* Settings changed: re-read them next cycle; with NOW, run that cycle at
 * once (a new policy should act now; pinning changes are mostly our own
 * moves echoing back and can wait). */
static void note_refresh(struct vmsrc *vs, virDomainPtr dom, bool now)
{
	char uuid[VIR_UUID_STRING_BUFLEN];

	if (virDomainGetUUIDString(dom, uuid) < 0)
		return;
	pthread_mutex_lock(&vs->lock);
	if (!vs->dead) {
		push_event(vs, uuid, (int)virDomainGetID(dom), VMSRC_REFRESH);
		if (now)
			notify_locked(vs);
	}
	pthread_mutex_unlock(&vs->lock);
}

static int tunable_cb(virConnectPtr c, virDomainPtr dom, virTypedParameterPtr params, int n,
		      void *opaque)
{
	(void)c;
	(void)params;
	(void)n;
	note_refresh(opaque, dom, false);
	return 0;
}

static int metadata_cb(virConnectPtr c, virDomainPtr dom, int type, const char *nsuri, void *opaque)
{
	(void)c;
	(void)type;
	(void)nsuri;
	note_refresh(opaque, dom, true);
	return 0;
}

/* May run on any thread that noticed the loss (the event loop, or the
 * engine thread inside a call): only note it and wake the loop. */
static void close_cb(virConnectPtr c, int reason, void *opaque)
{
	struct vmsrc *vs = opaque;

	(void)c;
	pthread_mutex_lock(&vs->lock);
	if (!vs->dead && vs->conn == c) {
		static const char *const why[] = { "error", "end of file", "keepalive timeout", "closed by client" };

		vs->lost = true;
		snprintf(vs->last_error, sizeof(vs->last_error), "%s",
			 reason >= 0 && reason < 4 ? why[reason] : "closed");
		if (vs->timer >= 0)
			virEventUpdateTimeout(vs->timer, 0);
	}
	pthread_mutex_unlock(&vs->lock);
}

static void teardown(virConnectPtr conn, const int *ids)
{
	if (!conn)
		return;
	for (unsigned i = 0; i < 3; i++)
		if (ids[i] >= 0)
			virConnectDomainEventDeregisterAny(conn, ids[i]);
	virConnectUnregisterCloseCallback(conn, close_cb);
	virConnectClose(conn);
}

static virConnectPtr do_connect(struct vmsrc *vs, int ids[3], char *err, size_t errsz)
{
	virConnectPtr conn = virConnectOpen(vs->uri);

	ids[0] = ids[1] = ids[2] = -1;
	if (!conn) {
		last_error(err, errsz);
		return NULL;
	}
	/* 1: the server does not support keepalive (not libvirtd). */
	if (virConnectSetKeepAlive(conn, vs->ka_interval, vs->ka_count) < 0)
		log_debug("libvirt: no keepalive on %s", vs->uri);
	vs_ref(vs);
	if (virConnectRegisterCloseCallback(conn, close_cb, vs, vs_unref) < 0) {
		vs_unref(vs);
		goto fail;
	}
	vs_ref(vs);
	ids[0] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
						  VIR_DOMAIN_EVENT_CALLBACK(lifecycle_cb), vs, vs_unref);
	if (ids[0] < 0) {
		vs_unref(vs);
		goto fail;
	}
	vs_ref(vs);
	ids[1] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_TUNABLE,
						  VIR_DOMAIN_EVENT_CALLBACK(tunable_cb), vs, vs_unref);
	if (ids[1] < 0)
		vs_unref(vs); /* old servers: pinning changes are then seen by polling */
	vs_ref(vs);
	ids[2] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
						  VIR_DOMAIN_EVENT_CALLBACK(metadata_cb), vs, vs_unref);
	if (ids[2] < 0)
		vs_unref(vs);
	return conn;
fail:
	last_error(err, errsz);
	teardown(conn, ids);
	ids[0] = ids[1] = ids[2] = -1;
	return NULL;
}

static void arm_locked(struct vmsrc *vs, int64_t now)
{
	int ms = -1;

	if (vs->timer < 0 || vs->dead)
		return;
	if (!vs->conn) {
		int64_t d = vs->next_try_ns - now;

		ms = d <= 0 ? 0 : (int)((d + 999999) / 1000000);
		if (ms == 0)
			ms = 1; /* 0 would fire on every loop turn */
	}
	virEventUpdateTimeout(vs->timer, ms);
}

/* The event loop's timer: handle a lost connection, (re)connect. */
static void tick(int timer, void *opaque)
{
	struct vmsrc *vs = opaque;
	virConnectPtr old = NULL, conn;
	int old_ids[3], ids[3];
	char err[256];
	int64_t now = clock_mono_ns();

	(void)timer;
	pthread_mutex_lock(&vs->lock);
	if (vs->dead) {
		pthread_mutex_unlock(&vs->lock);
		return;
	}
	if (vs->lost && vs->conn) {
		old = vs->conn;
		memcpy(old_ids, vs->cb_ids, sizeof(old_ids));
		vs->conn = NULL;
		vs->lost = false;
		vs->lost_at_ns = now;
		vs->st.connected = false;
		vs->st.losses++;
		vs->next_try_ns = now;
		vs->backoff_ns = BACKOFF_MIN_NS;
		log_warn("libvirt: connection to %s lost (%s); reconnecting", vs->uri, vs->last_error);
	}
	if (vs->conn || now < vs->next_try_ns) {
		arm_locked(vs, now);
		pthread_mutex_unlock(&vs->lock);
		teardown(old, old_ids);
		return;
	}
	pthread_mutex_unlock(&vs->lock);
	teardown(old, old_ids);

	conn = do_connect(vs, ids, err, sizeof(err));

	pthread_mutex_lock(&vs->lock);
	now = clock_mono_ns();
	if (vs->dead) {
		pthread_mutex_unlock(&vs->lock);
		teardown(conn, ids);
		return;
	}
	if (conn) {
		vs->conn = conn;
		memcpy(vs->cb_ids, ids, sizeof(ids));
		vs->st.connected = true;
		vs->st.connects++;
		vs->backoff_ns = BACKOFF_MIN_NS;
		vs->logged_fail = false;
		if (vs->ever_connected) {
			vs->st.last_reconnect_s = (double)(now - vs->lost_at_ns) / 1e9;
			log_info("libvirt: reconnected to %s %.2f s after the loss; resyncing", vs->uri,
				 vs->st.last_reconnect_s);
		} else {
			log_info("libvirt: connected to %s", vs->uri);
		}
		vs->ever_connected = true;
		vs->resync = true;
		notify_locked(vs);
	} else {
		if (!vs->logged_fail)
			log_info("libvirt: cannot connect to %s (%s); retrying in the background", vs->uri, err);
		else
			log_debug("libvirt: cannot connect to %s (%s)", vs->uri, err);
		vs->logged_fail = true;
		snprintf(vs->last_error, sizeof(vs->last_error), "%s", err);
		vs->next_try_ns = now + vs->backoff_ns;
		vs->backoff_ns = vs->backoff_ns * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : vs->backoff_ns * 2;
	}
	vs->first_done = true;
	pthread_cond_broadcast(&vs->cond);
	arm_locked(vs, now);
	pthread_mutex_unlock(&vs->lock);
}

int vmsrc_new(const struct vmsrc_config *cfg, const struct host_paths *hp, const struct cg_hier *h,
	      vmsrc_notify_fn notify, void *ctx, struct vmsrc **out)
{
	struct vmsrc *vs;
	pthread_condattr_t ca;
	struct timespec until;
	int timer;

	pthread_once(&ev_once, ev_init);
	if (ev_err < 0)
		return ev_err;
	vs = xcalloc(1, sizeof(*vs));
	vs->refs = 1;
	vs->uri = xstrdup(cfg->uri);
	vs->ka_interval = cfg->keepalive_interval;
	vs->ka_count = cfg->keepalive_count;
	for (unsigned i = 0; i < cfg->nr_scopes; i++) {
		vs->scopes = xrealloc(vs->scopes, (i + 1) * sizeof(char *));
		vs->scopes[i] = xstrdup(cfg->scopes[i]);
		vs->nr_scopes = i + 1;
	}
	vs->hp = *hp;
	vs->h = *h;
	vs->notify = notify;
	vs->notify_ctx = ctx;
	vs->cb_ids[0] = vs->cb_ids[1] = vs->cb_ids[2] = -1;
	vs->backoff_ns = BACKOFF_MIN_NS;
	vs->st.last_reconnect_s = NAN;
	pthread_mutex_init(&vs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&vs->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&vs->lock);
	vs->timer = -1;
	vs_ref(vs);
	timer = virEventAddTimeout(1, tick, vs, vs_unref);
	if (timer < 0) {
		pthread_mutex_unlock(&vs->lock);
		vs_unref(vs);
		vs_unref(vs);
		return -EIO;
	}
	vs->timer = timer;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)cfg->connect_wait_s;
	until.tv_nsec += (long)((cfg->connect_wait_s - floor(cfg->connect_wait_s)) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!vs->first_done)
		if (pthread_cond_timedwait(&vs->cond, &vs->lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&vs->lock);
	*out = vs;
	return 0;
}

static void dom_clear(struct vm_dom *d)
{
	free(d->threads_base);
	free(d->cgroup);
	free(d->mem_cg);
	free(d->prev_vcpu_tid);
	free(d->prev_vcpu_ns);
	memset(d, 0, sizeof(*d));
}

void vmsrc_free(struct vmsrc *vs)
{
	virConnectPtr conn;
	int ids[3];

	if (!vs)
		return;
	pthread_mutex_lock(&vs->lock);
	vs->dead = true;
	conn = vs->conn;
	vs->conn = NULL;
	memcpy(ids, vs->cb_ids, sizeof(ids));
	if (vs->timer >= 0)
		virEventRemoveTimeout(vs->timer);
	vs->timer = -1;
	pthread_mutex_unlock(&vs->lock);
	teardown(conn, ids);
	for (unsigned i = 0; i < vs->nr_doms; i++)
		dom_clear(&vs->doms[i]);
	free(vs->doms);
	free(vs->pending);
	free(vs->offer);
	vs->doms = NULL;
	vs->pending = NULL;
	vs->offer = NULL;
	/* The event loop may still hold references (a callback in flight);
	 * the last one frees the rest. */
	vs_unref(vs);
}

virConnectPtr vmsrc_conn(struct vmsrc *vs)
{
	virConnectPtr c;

	pthread_mutex_lock(&vs->lock);
	c = vs->lost ? NULL : vs->conn;
	if (c)
		virConnectRef(c);
	pthread_mutex_unlock(&vs->lock);
	return c;
}

void vmsrc_get_status(struct vmsrc *vs, struct vmsrc_status *st)
{
	pthread_mutex_lock(&vs->lock);
	*st = vs->st;
	pthread_mutex_unlock(&vs->lock);
}

/* ---- the domain cache (engine thread) ------------------------------------- */

static struct vm_dom *dom_find(struct vmsrc *vs, const char *uuid)
{
	for (unsigned i = 0; i < vs->nr_doms; i++)
		if (strcmp(vs->doms[i].uuid, uuid) == 0)
			return &vs->doms[i];
	return NULL;
}

static struct vm_dom *dom_add(struct vmsrc *vs, const char *uuid, int domid)
{
	struct vm_dom *d;

	if (vs->nr_doms == vs->cap_doms) {
		vs->cap_doms = vs->cap_doms ? vs->cap_doms * 2 : 16;
		vs->doms = xrealloc(vs->doms, vs->cap_doms * sizeof(*vs->doms));
	}
	d = &vs->doms[vs->nr_doms++];
	memset(d, 0, sizeof(*d));
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	vmsrc_guest_id(d->id, uuid);
	d->domid = domid;
	d->dirty = true;
	return d;
}

static void dom_remove(struct vmsrc *vs, unsigned i)
{
	dom_clear(&vs->doms[i]);
	vs->nr_doms--;
	if (i != vs->nr_doms)
		vs->doms[i] = vs->doms[vs->nr_doms];
}

int vmsrc_facts(struct vmsrc *vs, const char *uuid, struct vmsrc_facts *out)
{
	const struct vm_dom *d = dom_find(vs, uuid);

	if (!d)
		return -ENOENT;
	out->domid = d->domid;
	out->x = d->x;
	return 0;
}

void vmsrc_mark_dirty(struct vmsrc *vs, const char *uuid)
{
	struct vm_dom *d = dom_find(vs, uuid);

	if (d)
		d->dirty = true;
}

static bool pending_take(struct vmsrc *vs, const char *uuid, int domid, int64_t *t)
{
	bool found = false;

	for (unsigned i = 0; i < vs->nr_pending;) {
		struct vm_event *p = &vs->pending[i];

		if (strcmp(p->uuid, uuid) == 0 && (p->domid < 0 || p->domid == domid)) {
			if (!found)
				*t = p->t_ns;
			found = true;
			vs->pending[i] = vs->pending[--vs->nr_pending];
		} else {
			i++;
		}
	}
	return found;
}

/* Events queued by the loop thread, applied on the engine thread. */
static bool drain_events(struct vmsrc *vs)
{
	struct vm_event *q;
	unsigned n;
	bool resync;

	pthread_mutex_lock(&vs->lock);
	q = vs->evq;
	n = vs->nr_evq;
	vs->evq = NULL;
	vs->nr_evq = vs->cap_evq = 0;
	resync = vs->resync;
	vs->resync = false;
	pthread_mutex_unlock(&vs->lock);

	for (unsigned i = 0; i < n; i++) {
		struct vm_dom *d = dom_find(vs, q[i].uuid);

		switch (q[i].action) {
		case VMSRC_PLACE:
			if (d && d->domid == q[i].domid && d->offered)
				break; /* this instance was placed already */
			vs->pending = xrealloc(vs->pending, (vs->nr_pending + 1) * sizeof(*vs->pending));
			vs->pending[vs->nr_pending++] = q[i];
			break;
		case VMSRC_FORGET:
			if (d && (q[i].domid < 0 || d->domid == q[i].domid || !d->seen))
				dom_remove(vs, (unsigned)(d - vs->doms));
			break;
		case VMSRC_REFRESH:
		case VMSRC_RESCAN:
			if (d)
				d->dirty = true;
			break;
		default:
			break;
		}
	}
	free(q);
	if (resync)
		for (unsigned i = 0; i < vs->nr_doms; i++)
			vs->doms[i].dirty = true;
	return resync;
}

static int get_numa_params(virDomainPtr dom, char mode[16], char nodeset[64])
{
	virTypedParameterPtr p = NULL;
	int n = 0;

	if (virDomainGetNumaParameters(dom, NULL, &n, VIR_DOMAIN_AFFECT_LIVE) < 0 || n <= 0)
		return -EIO;
	p = xcalloc((size_t)n, sizeof(*p));
	if (virDomainGetNumaParameters(dom, p, &n, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		free(p);
		return -EIO;
	}
	mode[0] = nodeset[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(p[i].field, VIR_DOMAIN_NUMA_MODE) == 0 && p[i].type == VIR_TYPED_PARAM_INT)
			snprintf(mode, 16, "%s", numa_mode_name(p[i].value.i));
		else if (strcmp(p[i].field, VIR_DOMAIN_NUMA_NODESET) == 0 &&
			 p[i].type == VIR_TYPED_PARAM_STRING && p[i].value.s)
			snprintf(nodeset, 64, "%s", p[i].value.s);
	}
	virTypedParamsClear(p, n);
	free(p);
	return 0;
}

static bool dom_gone_error(void)
{
	virErrorPtr e = virGetLastError();

	return e && (e->code == VIR_ERR_NO_DOMAIN || e->code == VIR_ERR_OPERATION_INVALID);
}

/* Re-read a domain's settings and find its process. Returns 0, -ESRCH if
 * the domain is gone, or another negative errno (warned). */
static int refresh(struct vmsrc *vs, struct vm_dom *d, virDomainPtr dom, struct snapshot *snap,
		   int64_t now)
{
	char *xml, err[200], *cg = NULL;
	struct vmxml_info x;
	uint64_t start;
	int r;

	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml) {
		if (dom_gone_error())
			return -ESRCH;
		last_error(err, sizeof(err));
		snap_warn(snap, "libvirt: domain %s: cannot read its XML: %s", d->uuid, err);
		return -EIO;
	}
	r = vmxml_parse(xml, strlen(xml), &x, err, sizeof(err));
	free(xml);
	if (r < 0) {
		snap_warn(snap, "libvirt: domain %s: %s", d->uuid, err);
		return r;
	}
	d->x = x;
	d->warned = false;
	if (get_numa_params(dom, d->numa_mode, d->numa_nodeset) < 0) {
		if (dom_gone_error())
			return -ESRCH;
		snprintf(d->numa_mode, sizeof(d->numa_mode), "%s", x.numatune_mode);
		snprintf(d->numa_nodeset, sizeof(d->numa_nodeset), "%s", x.numatune_nodeset);
	}

	/* The process: kept while pid and start time still match. */
	if (!d->pid || vmproc_start_time(&vs->hp, d->pid, &start) < 0 || start != d->start) {
		pid_t pid;

		d->pid = 0;
		r = vmproc_find_qemu(&vs->hp, d->uuid, &pid, &start);
		if (r < 0) {
			snap_warn(snap, "libvirt: domain %s (%s): no QEMU process with -uuid %s under %s: "
				  "not reported", x.name, d->uuid, d->uuid, vs->hp.procfs);
			return r;
		}
		d->pid = pid;
		d->start = start;
		free(d->threads_base);
		free(d->cgroup);
		free(d->mem_cg);
		d->threads_base = d->cgroup = d->mem_cg = NULL;
		if (vmproc_cgroup_of(&vs->hp, pid, vs->h.v2[CGC_CPUSET] ? NULL : "cpuset", &cg) == 0) {
			vmproc_domain_cgroup(cg, &d->threads_base, &d->cgroup);
			free(cg);
			cg = NULL;
			if (strcmp(d->cgroup, "/") == 0) {
				/* libvirt without cgroups: no domain group */
				free(d->cgroup);
				d->cgroup = NULL;
			}
		}
		if (vmproc_cgroup_of(&vs->hp, pid, vs->h.v2[CGC_MEMORY] ? NULL : "memory", &cg) == 0) {
			char *tb = NULL;

			vmproc_domain_cgroup(cg, &tb, &d->mem_cg);
			free(tb);
			free(cg);
			if (strcmp(d->mem_cg, "/") == 0) {
				free(d->mem_cg);
				d->mem_cg = NULL;
			}
		}
	}
	d->dirty = false;
	d->refreshed_ns = now;
	return 0;
}

static bool in_scope(const struct vmsrc *vs, const char *cg)
{
	if (!vs->nr_scopes)
		return true;
	if (!cg)
		return false;
	for (unsigned i = 0; i < vs->nr_scopes; i++)
		if (cgh_rel_under(cg, vs->scopes[i]))
			return true;
	return false;
}

static double rate(uint64_t now_v, uint64_t prev_v, int64_t dt_ns)
{
	if (dt_ns <= 0 || now_v < prev_v)
		return NAN;
	return (double)(now_v - prev_v) / (double)dt_ns;
}

/* One domain into SNAP. Returns false if its process is gone. */
static bool measure(struct vmsrc *vs, struct vm_dom *d, struct snapshot *snap, int64_t now)
{
	struct vmproc_threads t;
	struct snap_guest *g;
	struct snap_vm *vm;
	uint64_t cpu_ns = 0, *vns;
	bool have_cpu;
	unsigned nv = d->x.vcpus ? d->x.vcpus : 1;
	int r;

	if (!d->pid)
		return true;
	if (!in_scope(vs, d->cgroup))
		return true;
	r = vmproc_threads(&vs->hp, &vs->h, d->pid, d->threads_base, nv, &t);
	if (r < 0)
		return false;
	have_cpu = vmproc_process_cpu_ns(&vs->hp, d->pid, &cpu_ns) == 0;

	g = snap_add_guest(snap);
	vm = xcalloc(1, sizeof(*vm));
	g->vm = vm;
	memcpy(g->id, d->id, sizeof(g->id));
	g->kind = GUEST_VM;
	snprintf(g->runtime, sizeof(g->runtime), "libvirt");
	snprintf(g->name, sizeof(g->name), "%s", d->x.name);
	g->cgroup = d->cgroup ? xstrdup(d->cgroup) : NULL;
	g->nr_threads = t.nr_threads;
	g->nr_procs = 1;
	g->main_pid = d->pid;
	g->cpu_usage_ns = cpu_ns;
	g->cpu_use = have_cpu && d->prev_t_ns ? rate(cpu_ns, d->prev_cpu_ns, now - d->prev_t_ns) : NAN;
	if (have_cpu) {
		d->prev_cpu_ns = cpu_ns;
	}

	snprintf(vm->uuid, sizeof(vm->uuid), "%s", d->uuid);
	snprintf(vm->name, sizeof(vm->name), "%s", d->x.name);
	vm->qemu_pid = d->pid;
	vm->nr_vcpus = t.nr_vcpus;
	vm->vcpu_tids = t.vcpu_tids;
	t.vcpu_tids = NULL;
	vm->vcpu_use = xcalloc(nv, sizeof(double));
	vm->nr_emulator_tids = t.nr_emulator;
	vm->emulator_tids = t.emulator_tids;
	t.emulator_tids = NULL;
	vm->nr_iothreads = t.nr_iothreads;
	vm->iothread_ids = t.iothread_ids;
	vm->iothread_tids = t.iothread_tids;
	t.iothread_ids = NULL;
	t.iothread_tids = NULL;
	if (d->x.has_numatune) {
		snprintf(vm->numatune_mode, sizeof(vm->numatune_mode), "%s",
			 d->numa_mode[0] ? d->numa_mode : d->x.numatune_mode);
		snprintf(vm->numatune_nodeset, sizeof(vm->numatune_nodeset), "%s",
			 d->numa_nodeset[0] ? d->numa_nodeset : d->x.numatune_nodeset);
	}

	/* Per-vCPU CPU use, against the same thread's last sample. */
	vns = xcalloc(nv, sizeof(uint64_t));
	for (unsigned i = 0; i < nv; i++) {
		vm->vcpu_use[i] = NAN;
		if (!vm->vcpu_tids[i] || vmproc_thread_cpu_ns(&vs->hp, d->pid, vm->vcpu_tids[i], &vns[i]) < 0)
			continue;
		if (i < d->nr_prev_vcpu && d->prev_vcpu_tid[i] == vm->vcpu_tids[i] && d->prev_t_ns) {
			vm->vcpu_use[i] = rate(vns[i], d->prev_vcpu_ns[i], now - d->prev_t_ns);
			/* Every vCPU is measured: the policy counts busy ones. */
			g->busy_measured = g->busy_measured || !isnan(vm->vcpu_use[i]);
			g->busy_threads += vm->vcpu_use[i] >= SNAP_BUSY_THREAD_CPU;
		}
	}
	free(d->prev_vcpu_ns);
	free(d->prev_vcpu_tid);
	d->prev_vcpu_ns = vns;
	d->prev_vcpu_tid = xcalloc(nv, sizeof(pid_t));
	memcpy(d->prev_vcpu_tid, vm->vcpu_tids, nv * sizeof(pid_t));
	d->nr_prev_vcpu = nv;
	d->prev_t_ns = now;

	/* Where it runs: the affinity the kernel enforces on its threads.
	 * g->mems is the union of their Mems_allowed. */
	{
		cpumask_t cpus;
		nodemask_t on;

		r = vmproc_vm_affinity(&vs->hp, vm, &cpus, &g->mems);
		g->cpus = snap_cpumask(snap, &cpus);
		if (r < 0)
			snap_warn(snap, "libvirt: domain %s: cannot read its threads' affinity", d->x.name);
		/* Spread over several nodes: which of them carry its load
		 * (only there does the policy need it). */
		snap_cpus_to_nodes(snap, g->cpus, &on);
		if (mask_count(&on) > 1)
			g->cpu_node = vmproc_vcpu_nodes(&vs->hp, snap, vm, g->cpu_use);
	}

	/* Memory per node: the domain cgroup's memory.numa_stat counts what
	 * is charged to the domain (QEMU and its children) without walking
	 * page tables; numa_maps only where the domain has no memory cgroup
	 * (libvirt without the memory controller, or no cgroups at all). */
	r = d->mem_cg ? vmproc_numa_stat(&vs->h, d->mem_cg, snap, g->mem_node) : -ENOENT;
	if (r == 0) {
		snprintf(vm->mem_source, sizeof(vm->mem_source), "numa_stat");
	} else if (vmproc_numa_maps(&vs->hp, d->pid, snap, g->mem_node) == 0) {
		snprintf(vm->mem_source, sizeof(vm->mem_source), "numa_maps");
	} else {
		snap_warn(snap, "libvirt: domain %s: memory per node unknown (no memory.numa_stat, "
			  "numa_maps unreadable)", d->x.name);
	}

	/* libvirt owns the domain's cgroups and checks a nodeset against the
	 * host itself (refusing, e.g., "NUMA node 1 is unavailable"), so the
	 * bound offered to the policy is the host: its online CPUs and its
	 * nodes with memory. */
	{
		cpumask_t allowed;

		mask_zero(&allowed);
		for (unsigned n = 0; n < snap->nr_nodes; n++) {
			mask_or(&allowed, &allowed, &snap->nodes[n].cpus);
			if (snap->nodes[n].mem_total)
				mask_set(&g->allowed_mems, snap->nodes[n].id);
		}
		g->allowed_cpus = snap_cpumask(snap, &allowed);
	}

	g->policy.mode = GPOL_AUTO;
	g->policy.source = GPOL_SRC_DEFAULT;
	if (d->x.has_policy)
		g->policy = d->x.policy;
	if (d->x.policy_error[0] && !d->warned)
		snap_warn(snap, "libvirt: domain %s: numaorch policy metadata ignored: %s", d->x.name,
			  d->x.policy_error);
	d->warned = true;

	if (d->place_pending && !d->offered) {
		vs->offer = xrealloc(vs->offer, (vs->nr_offer + 1) * sizeof(*vs->offer));
		struct vmsrc_placement *p = &vs->offer[vs->nr_offer++];

		memset(p, 0, sizeof(*p));
		memcpy(p->id, d->id, sizeof(p->id));
		snprintf(p->uuid, sizeof(p->uuid), "%s", d->uuid);
		snprintf(p->name, sizeof(p->name), "%s", d->x.name);
		p->nr_vcpus = nv;
		p->mem_bytes = d->x.mem_bytes;
		p->event_ns = d->place_event_ns;
	}
	vmproc_threads_free(&t);
	return true;
}

int vmsrc_scan(void *ctx, struct snapshot *snap, int64_t now)
{
	struct vmsrc *vs = ctx;
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	char err[256] = "";
	int n = -1;

	drain_events(vs);
	vs->nr_offer = 0;
	conn = vmsrc_conn(vs);
	if (conn) {
		n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
		if (n < 0) {
			last_error(err, sizeof(err));
			virConnectClose(conn);
			conn = NULL;
		}
	}
	if (conn) {
		for (unsigned i = 0; i < vs->nr_doms; i++)
			vs->doms[i].seen = false;
		for (int i = 0; i < n; i++) {
			char uuid[VIR_UUID_STRING_BUFLEN];
			int domid = (int)virDomainGetID(doms[i]);
			struct vm_dom *d;
			bool fresh = false;
			int64_t t = now;

			if (virDomainGetUUIDString(doms[i], uuid) < 0)
				goto next;
			d = dom_find(vs, uuid);
			if (d && d->domid != domid) {
				/* restarted: a new instance */
				dom_remove(vs, (unsigned)(d - vs->doms));
				d = NULL;
			}
			if (!d) {
				d = dom_add(vs, uuid, domid);
				fresh = true;
			}
			d->seen = true;
			if (pending_take(vs, uuid, domid, &t) && !d->offered) {
				d->place_pending = true;
				d->place_event_ns = t;
			} else if (fresh && vs->synced) {
				/* started while we were not told (hook-triggered
				 * cycle before the event, or while reconnecting) */
				d->place_pending = true;
				d->place_event_ns = now;
			}
			if (d->dirty || now - d->refreshed_ns > REFRESH_NS) {
				int r = refresh(vs, d, doms[i], snap, now);

				if (r == -ESRCH && !d->pid)
					d->seen = false;
			}
next:
			virDomainFree(doms[i]);
		}
		free(doms);
		for (unsigned i = 0; i < vs->nr_doms;)
			if (!vs->doms[i].seen)
				dom_remove(vs, i);
			else
				i++;
		vs->synced = true;
		for (unsigned i = 0; i < vs->nr_pending;)
			if (now - vs->pending[i].t_ns > PENDING_TTL_NS)
				vs->pending[i] = vs->pending[--vs->nr_pending];
			else
				i++;
		virConnectClose(conn);
	} else {
		/* libvirtd is away; QEMU is not. Keep what still runs. */
		for (unsigned i = 0; i < vs->nr_doms;) {
			struct vm_dom *d = &vs->doms[i];
			uint64_t start;

			if (d->pid && vmproc_start_time(&vs->hp, d->pid, &start) == 0 && start == d->start)
				i++;
			else
				dom_remove(vs, i);
		}
		bool was_connected;

		pthread_mutex_lock(&vs->lock);
		if (!err[0])
			snprintf(err, sizeof(err), "%s", vs->last_error[0] ? vs->last_error : "not connected");
		was_connected = vs->ever_connected;
		pthread_mutex_unlock(&vs->lock);
		/* A host without libvirtd at all is not worth a warning per cycle. */
		if (was_connected || vs->nr_doms)
			snap_warn(snap, "libvirt: not connected to %s (%s): %u domain%s reported as last seen",
				  vs->uri, err, vs->nr_doms, vs->nr_doms == 1 ? "" : "s");
	}
	for (unsigned i = 0; i < vs->nr_doms;)
		if (measure(vs, &vs->doms[i], snap, now))
			i++;
		else
			dom_remove(vs, i);
	return 0;
}

unsigned vmsrc_take_placements(struct vmsrc *vs, const struct snapshot *snap,
			       struct vmsrc_placement **out)
{
	struct vmsrc_placement *res = NULL;
	unsigned n = 0;

	for (unsigned i = 0; i < vs->nr_offer; i++) {
		struct vm_dom *d = dom_find(vs, vs->offer[i].uuid);

		if (!d || d->offered || !snap_find_guest(snap, vs->offer[i].id))
			continue;
		d->offered = true;
		d->place_pending = false;
		res = xrealloc(res, (n + 1) * sizeof(*res));
		res[n++] = vs->offer[i];
	}
	vs->nr_offer = 0;
	*out = res;
	return n;
}
