/* vmplugin.h — the libvirt VM source and actuator as a loadable module.
 *
 * Why a module: libvirt.so and libxml2 bring some 50 shared libraries
 * (GLib, GnuTLS's and OpenSSL's crypto, Kerberos, libssh, ICU, libcurl)
 * whose relocated pages alone would be a large share of the agent's RSS,
 * on every host — including container hosts that run no libvirtd. So numaorchd
 * does not link libvirt: agents/vm*.c build into numaorch-libvirt.so,
 * which the engine dlopen()s the first time [libvirt] enabled = yes on
 * a live host, and keeps for the life of the process (libvirt's event
 * loop thread cannot be stopped, so the module is never unloaded).
 *
 * The module resolves the core (snapshot, masks, logging, cgroup
 * reading) from numaorchd itself, which exports its symbols
 * (--export-dynamic); it exports one table, VMPLUGIN_SYMBOL, checked for
 * the ABI version and size before use, so a module from another build
 * is refused with a clear message instead of crashing.
 *
 * This header has no libvirt type in it: the engine and the config
 * parser use it without libvirt's headers.
 */
#ifndef NUMAORCH_VMPLUGIN_H
#define NUMAORCH_VMPLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/actuator/apply.h"
#include "orchestrator/base/cghier.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/model/snapshot.h"

/* ---- the source's and actuator's types (agents/vmsrc.h, vmapply.h) ---- */

struct vmsrc_config {
	const char *uri;              /* e.g. qemu:///system */
	int keepalive_interval;       /* seconds, ≥ 1 */
	unsigned keepalive_count;     /* ≥ 1 */
	double connect_wait_s;        /* vmsrc_new waits this long for the first connect */
	unsigned nr_scopes;           /* only domains whose cgroup is under one of these */
	char **scopes;
};

typedef void (*vmsrc_notify_fn)(void *ctx);

struct vmsrc;
struct vmapply;

/* A domain started while the agent runs, offered once for placement. */
struct vmsrc_placement {
	char id[GUEST_ID_MAX];
	char uuid[37];
	char name[128];
	unsigned nr_vcpus;
	uint64_t mem_bytes;         /* configured (current) memory */
	int64_t event_ns;           /* CLOCK_MONOTONIC when its start was seen */
};

struct vmsrc_status {
	bool connected;
	uint64_t connects;          /* successful connects, the first included */
	uint64_t losses;            /* connections lost */
	double last_reconnect_s;    /* loss → reconnect, last time; NAN if none */
};

/* [libvirt] cpus_without_memory: what to do with a domain's CPUs when
 * libvirt cannot move its memory (see numaorchd.conf(5)). */
enum vm_cpus_without_memory {
	VM_CPUS_LOCAL = 0,
	VM_CPUS_NEVER,
	VM_CPUS_ALWAYS,
};

const char *vm_cpus_without_memory_name(enum vm_cpus_without_memory m);
int vm_cpus_without_memory_parse(const char *s, enum vm_cpus_without_memory *out);

/* ---- the module's table ---------------------------------------------------- */

/* 3: struct snap_vm carries the instance (domid, qemu_start). */
#define VMPLUGIN_ABI     3
#define VMPLUGIN_SYMBOL  "numaorch_vmplugin"
#define VMPLUGIN_FILE    "numaorch-libvirt.so"

struct vmplugin {
	unsigned abi;               /* VMPLUGIN_ABI */
	size_t size;                /* sizeof(struct vmplugin) */
	int (*src_new)(const struct vmsrc_config *cfg, const struct host_paths *hp,
		       const struct cg_hier *h, vmsrc_notify_fn notify, void *ctx,
		       struct vmsrc **out);
	void (*src_free)(struct vmsrc *vs);
	int (*scan)(void *ctx, struct snapshot *snap, int64_t now_ns);
	unsigned (*take_placements)(struct vmsrc *vs, const struct snapshot *snap,
				    struct vmsrc_placement **out);
	void (*get_status)(struct vmsrc *vs, struct vmsrc_status *st);
	struct vmapply *(*apply_new)(struct vmsrc *vs, const struct host_paths *hp,
				     enum vm_cpus_without_memory cpus_without_memory);
	void (*apply_free)(struct vmapply *va);
	int (*move)(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
		    const struct plan_item *it, struct apply_result *res);
	/* struct apply_vm_ops's set_mems (ABI 2). */
	int (*set_mems)(void *ctx, const struct snap_guest *g, const nodemask_t *mems, char *err, size_t errsz);
};

/* The module's path: PATH if given (tests), else numaorch-libvirt.so
 * next to the running executable (a build tree uses its own module),
 * else in NUMAORCH_PKGLIBDIR (the installed one). Loads it once per
 * process (later calls return the same table) and checks its ABI.
 * The module is opened the careful way (its directory owned by root or
 * us and not group/world-writable, the file by name with O_NOFOLLOW, a
 * regular file owned by root or us and writable only by its owner) and
 * loaded by that open file (/proc/self/fd/N), so what was checked is what
 * runs. 0 and *OUT, or a negative errno with the reason in ERR: -ENOENT
 * no module found, -EPERM or -ELOOP one that is not safe to run as root,
 * -ELIBBAD it cannot be loaded or is of another ABI. */
int vmplugin_load(const char *path, const struct vmplugin **out, char *err, size_t errsz);
/* Where vmplugin_load would look, without loading: 0 and the path in OUT,
 * or a negative errno with the reason in ERR, after the same checks of
 * the file and its directory (for --check-config). */
int vmplugin_find(const char *path, char *out, size_t outsz, char *err, size_t errsz);

#endif
