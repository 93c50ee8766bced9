/* vmsrc_loop.c — the libvirt VM source on libvirt's event loop thread:
 * the connection, reconnecting, keepalive and the domain events (see
 * vmsrc_int.h for what crosses to the engine thread's half, vmsrc.c), and
 * what an event means for the source (vmsrc_event_action). It calls
 * nothing in vmsrc.c: the engine half calls into this one, not back. */
#include "vmsrc_int.h"

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

#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/base/strtab.h"

#define BACKOFF_MIN_NS  250000000LL   /* first retry after a failed connect */
#define BACKOFF_MAX_NS 2000000000LL   /* a unix connect that fails is cheap */

/* ---- what an event means (pure) ------------------------------------------- */

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

static const char *const action_names[] = {
	[VMSRC_NONE] = "none",
	[VMSRC_PLACE] = "place",
	[VMSRC_RESCAN] = "rescan",
	[VMSRC_FORGET] = "forget",
	[VMSRC_REFRESH] = "refresh",
};
STRTAB_NAME(vmsrc_action_name, enum vmsrc_action, action_names)

/* ---- the loop's own state ------------------------------------------------- */

static const char *event_name(int event)
{
	static const char *const names[] = { "defined", "undefined", "started", "suspended",
					     "resumed", "stopped", "shutdown", "pmsuspended", "crashed" };

	return event >= 0 && (size_t)event < sizeof(names) / sizeof(names[0]) ? names[event] : "?";
}

static void vs_ref(struct vmsrc *vs)
{
	__atomic_add_fetch(&vs->refs, 1, __ATOMIC_RELAXED);
}

void vmsrc_loop_unref(void *opaque)
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

void vmsrc_libvirt_error(char *buf, size_t sz)
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
		vmsrc_libvirt_error(err, errsz);
		return NULL;
	}
	/* 1: the server does not support keepalive (not libvirtd). */
	if (virConnectSetKeepAlive(conn, vs->ka_interval, vs->ka_count) < 0)
		log_debug("libvirt: no keepalive on %s", vs->uri);
	vs_ref(vs);
	if (virConnectRegisterCloseCallback(conn, close_cb, vs, vmsrc_loop_unref) < 0) {
		vmsrc_loop_unref(vs);
		goto fail;
	}
	vs_ref(vs);
	ids[0] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
						  VIR_DOMAIN_EVENT_CALLBACK(lifecycle_cb), vs, vmsrc_loop_unref);
	if (ids[0] < 0) {
		vmsrc_loop_unref(vs);
		goto fail;
	}
	vs_ref(vs);
	ids[1] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_TUNABLE,
						  VIR_DOMAIN_EVENT_CALLBACK(tunable_cb), vs, vmsrc_loop_unref);
	if (ids[1] < 0)
		vmsrc_loop_unref(vs); /* old servers: pinning changes are then seen by polling */
	vs_ref(vs);
	ids[2] = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
						  VIR_DOMAIN_EVENT_CALLBACK(metadata_cb), vs, vmsrc_loop_unref);
	if (ids[2] < 0)
		vmsrc_loop_unref(vs);
	return conn;
fail:
	vmsrc_libvirt_error(err, errsz);
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
	timer = virEventAddTimeout(1, tick, vs, vmsrc_loop_unref);
	if (timer < 0) {
		pthread_mutex_unlock(&vs->lock);
		vmsrc_loop_unref(vs);
		vmsrc_loop_unref(vs);
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

bool vmsrc_loop_take_events(struct vmsrc *vs, struct vm_event **q, unsigned *n)
{
	bool resync;

	pthread_mutex_lock(&vs->lock);
	*q = vs->evq;
	*n = vs->nr_evq;
	vs->evq = NULL;
	vs->nr_evq = vs->cap_evq = 0;
	resync = vs->resync;
	vs->resync = false;
	pthread_mutex_unlock(&vs->lock);
	return resync;
}

bool vmsrc_loop_error(struct vmsrc *vs, char *err, size_t sz)
{
	bool was_connected;

	pthread_mutex_lock(&vs->lock);
	if (!err[0])
		snprintf(err, sz, "%s", vs->last_error[0] ? vs->last_error : "not connected");
	was_connected = vs->ever_connected;
	pthread_mutex_unlock(&vs->lock);
	return was_connected;
}

void vmsrc_loop_stop(struct vmsrc *vs)
{
	virConnectPtr conn;
	int ids[3];

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
}
