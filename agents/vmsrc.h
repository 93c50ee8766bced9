/* vmsrc.h — the libvirt VM source: every running libvirt domain as a
 * guest of kind GUEST_VM, runtime "libvirt", id "vm-<uuid>".
 *
 * Threads. libvirt's default event loop implementation is registered
 * once per process, before the first connection is opened, and runs on
 * its own thread for the life of the process (libvirt allows one such
 * loop). On that thread: lifecycle, tunable and metadata events, the
 * connection's close callback, keepalive, and (re)connecting with
 * backoff. Events only queue a note and call NOTIFY (the engine's
 * engine_trigger), so a start or stop is acted on in a cycle that runs
 * at once. Everything else — listing, refreshing and measuring domains,
 * the per-domain cache — belongs to the engine thread (vmsrc_scan and
 * the actuator). The two halves are two files: vmsrc_loop.c (the event
 * loop thread) and vmsrc.c (the engine thread); vmsrc_int.h says what
 * crosses between them.
 *
 * Per cycle, with libvirt connected: one virConnectListAllDomains call,
 * plus, for a domain seen for the first time, after an event about it,
 * after a reconnect or once a minute, its XML (policy metadata,
 * numatune, vCPU count, memory) and virDomainGetNumaParameters. Threads,
 * CPU time, affinity and memory per node come from procfs/cgroupfs
 * (vmproc.h), which cost no round trip to libvirtd.
 *
 * When libvirtd goes away the QEMU processes keep running, so the
 * domains seen last are still reported (their processes checked by pid
 * and start time) with a warning, until the source reconnects and
 * resyncs from a fresh listing: no guest is lost or duplicated.
 *
 * A domain started while the agent runs — a STARTED event, an incoming
 * migration finishing, or a new domain instance (uuid + domain id) in a
 * listing after the first — is offered for initial placement once, by
 * vmsrc_take_placements().
 *
 * Hung libvirtd: the connection has keepalive (interval I, count C), so
 * a call on the engine thread waits at most about I × (C + 1) seconds
 * before libvirt closes the connection and the call fails; later calls
 * fail at once until the reconnect. With the defaults (2 s, 2) that is
 * ~6 s, once.
 */
#ifndef NUMAORCH_VMSRC_H
#define NUMAORCH_VMSRC_H

#include <stdbool.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "vmxml.h"
#include "../orchestrator/actuator/vmplugin.h"
#include "../orchestrator/base/cghier.h"
#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/model/snapshot.h"


/* What an event means for the source. */
enum vmsrc_action {
	VMSRC_NONE = 0,
	VMSRC_PLACE,   /* a domain (instance) started: place it now */
	VMSRC_RESCAN,  /* state changed: run a cycle */
	VMSRC_FORGET,  /* stopped: drop it, run a cycle */
	VMSRC_REFRESH, /* its settings changed: re-read them next cycle */
};

/* Lifecycle event + detail (virDomainEventType, its detail enum) →
 * action. Pure. */
enum vmsrc_action vmsrc_event_action(int event, int detail);
const char *vmsrc_action_name(enum vmsrc_action a);
/* The guest id of a domain: snap_make_id("vm", uuid). The uuid, not the
 * name, because a domain can be renamed and names are reused. */
void vmsrc_guest_id(char out[GUEST_ID_MAX], const char *uuid);


/* Copies CFG, HP and H. Starts libvirt's event loop thread on first use
 * and asks it to connect; waits up to cfg->connect_wait_s for that first
 * attempt (so `--once` sees the domains), then returns either way: the
 * loop keeps retrying. NOTIFY(CTX) is called from the event loop thread
 * when something happened that a cycle should see; never after
 * vmsrc_free() returned. -EIO if libvirt's event loop cannot start. */
int vmsrc_new(const struct vmsrc_config *cfg, const struct host_paths *hp, const struct cg_hier *h,
	      vmsrc_notify_fn notify, void *ctx, struct vmsrc **out);
void vmsrc_free(struct vmsrc *vs);

/* struct guest_source's scan (engine thread): CTX is the vmsrc. */
int vmsrc_scan(void *ctx, struct snapshot *snap, int64_t now_ns);

/* A new reference to the live connection (virConnectClose it), or NULL
 * while disconnected. Any thread. */
virConnectPtr vmsrc_conn(struct vmsrc *vs);

/* What the source knows about a running domain, for the actuator (engine
 * thread). -ENOENT if the source has no such domain. */
struct vmsrc_facts {
	int domid;                  /* libvirt domain id of the instance seen */
	struct vmxml_info x;        /* as last read */
};
int vmsrc_facts(struct vmsrc *vs, const char *uuid, struct vmsrc_facts *out);
/* The actuator changed DOMAIN: re-read its settings next cycle. */
void vmsrc_mark_dirty(struct vmsrc *vs, const char *uuid);

/* Domains to place now: those started while the agent runs that are in
 * SNAP (the snapshot the last scan filled) and were not offered before.
 * Each is offered once. Returns the count; *out is malloc'd (NULL if 0).
 * struct vmsrc_placement is in vmplugin.h. */
unsigned vmsrc_take_placements(struct vmsrc *vs, const struct snapshot *snap,
			       struct vmsrc_placement **out);

void vmsrc_get_status(struct vmsrc *vs, struct vmsrc_status *st);

#endif
