/* vmsrc_int.h — the libvirt VM source's two halves and what crosses
 * between them (private to agents/vmsrc.c and agents/vmsrc_loop.c).
 *
 * vmsrc_loop.c runs on libvirt's event loop thread (one per process,
 * started on first use): the connection and its reconnecting with
 * backoff, keepalive, the close callback and the domain events. vmsrc.c
 * runs on the engine thread: the domain cache, listing, refreshing and
 * measuring domains, initial placements (vmsrc_scan and the actuator's
 * calls).
 *
 * What crosses, always under vs->lock:
 *   loop → engine  the event queue (evq: uuid, domain id, what it means,
 *                  when) and the resync flag after a (re)connect, taken
 *                  together by vmsrc_loop_take_events(); the connection
 *                  (a new reference: vmsrc_conn()); the status counters
 *                  (vmsrc_get_status()); the last connect error and
 *                  whether it ever connected (vmsrc_loop_error()).
 *   engine → loop  nothing but its end: vmsrc_loop_stop() marks the
 *                  source dead (no callback calls NOTIFY after it) and
 *                  removes the timer; the last reference
 *                  (vmsrc_loop_unref) frees what both halves share.
 * The loop calls NOTIFY (the engine's engine_trigger) when a cycle
 * should see something; it never touches the domain cache.
 *
 * Calls go one way: vmsrc.c calls the functions below (defined in
 * vmsrc_loop.c), vmsrc_loop.c calls nothing in vmsrc.c. What an event
 * means (vmsrc_event_action) lives with the events, in vmsrc_loop.c.
 */
#ifndef NUMAORCH_VMSRC_INT_H
#define NUMAORCH_VMSRC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vmsrc.h"

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
	bool x_read;                 /* x holds a read (else: none yet) */
	nodemask_t dev_nodes;        /* the nodes of x's devices, from sysfs */
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

/* libvirt's last error on this thread, as text. */
void vmsrc_libvirt_error(char *buf, size_t sz);

/* The events queued since the last call (*Q malloc'd, the caller frees;
 * *N of them) and whether a (re)connect asks for a resync (cleared). */
bool vmsrc_loop_take_events(struct vmsrc *vs, struct vm_event **q, unsigned *n);

/* Fill ERR (SZ) with the last connect error (or "not connected") unless
 * it already holds a message; true if the source ever connected. */
bool vmsrc_loop_error(struct vmsrc *vs, char *err, size_t sz);

/* The loop's end for VS: dead, timer removed, connection torn down. */
void vmsrc_loop_stop(struct vmsrc *vs);

/* Drop a reference (the owner's, or a libvirt registration's); the last
 * one frees what the halves share. */
void vmsrc_loop_unref(void *opaque);

#endif
