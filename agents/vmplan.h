/* vmplan.h — which libvirt calls a VM move makes, in which order, and what
 * each one replaces: the pure half of the VM actuator, as cgplan.h is for
 * containers (vmapply.c re-checks the domain, vmjournal.c reads its live
 * pinning, carries the steps out and undoes them). No I/O and no libvirt
 * types here; unit-tested on tables (tests/unit/test_vmapply.c).
 *
 * The steps, in order (vmapply.h says why):
 *   numatune   the memory nodes, when the plan changes them and libvirt
 *              may be asked (not for memory bound per guest cell);
 *   vcpupin    each vCPU whose live pinning is not the target;
 *   emulatorpin the emulator threads, if libvirt reports a pinning;
 *   iothreadpin each I/O thread not on the target.
 * A pin that already matches is not a step. Undone newest first: the
 * pins, then the old nodeset.
 *
 * CPU maps are libvirt's format (bit c of byte c / 8, MAPLEN bytes for
 * the host's CPUs), written here without libvirt's macros.
 */
#ifndef NUMAORCH_VMPLAN_H
#define NUMAORCH_VMPLAN_H

#include <stdbool.h>

#include "vmxml.h"
#include "../orchestrator/actuator/vmplugin.h"
#include "../orchestrator/base/mask.h"

/* What libvirt reports now: the live pinning of a domain's threads. */
struct vmpins {
	int maplen;
	unsigned nv;                 /* vCPUs whose pinning was read */
	unsigned char *vcpu;         /* [nv * maplen] */
	bool have_emu;               /* libvirt reports an emulator pinning */
	unsigned char *emu;          /* [maplen] */
	unsigned nio;
	unsigned *io_ids;
	unsigned char *io;           /* [nio * maplen] */
};

/* Frees P's arrays (not P). */
void vmpins_free(struct vmpins *p);

/* What the planner decides from: the snapshot's guest, the plan item and
 * what the source last read of the domain. */
struct vmplan_in {
	const char *name;              /* the domain's, for messages */
	unsigned nr_vcpus;             /* the snapshot's vCPU count */
	const cpumask_t *to_cpus;      /* the plan's CPUs (non-empty) */
	const nodemask_t *mems;        /* the guest's memory nodes in the snapshot */
	const nodemask_t *to_mems;     /* the plan's (non-empty) */
	const char *to_cpus_s, *from_cpus_s, *to_mems_s; /* the same, formatted */
	const struct vmxml_info *x;    /* its numatune as last read */
	int ncpus;                     /* the host's CPUs, as libvirt counts them */
	enum vm_cpus_without_memory cwm;
	double locality_now;           /* the guest's true locality where it runs */
	double locality_target;        /* ... on the target CPUs, memory unmoved */
};

enum vmstep_kind {
	VMSTEP_NUMATUNE,
	VMSTEP_VCPU,
	VMSTEP_EMULATOR,
	VMSTEP_IOTHREAD,
};

struct vmstep {
	enum vmstep_kind kind;
	unsigned id;                   /* the vCPU's index, the I/O thread's id */
	const unsigned char *old;      /* the pin it replaces (into the pins the plan was made from);
					* NULL for numatune: the plan's old_nodeset */
};

struct vmplan {
	unsigned n, cap;
	struct vmstep *s;              /* in the order they are made */
	int maplen;
	unsigned char *target;         /* [maplen]: the plan's CPUs */
	const struct vmplan_in *in;
	/* Memory. */
	bool restrictive;              /* the numatune step sets mode restrictive too (no <numatune>) */
	bool mem_movable;              /* libvirt is expected to accept the numatune step: a refusal
					* of it is a failure, not "cannot move" */
	bool mem_refused;              /* known before any call: memory bound per guest cell */
	char mem_msg[200];             /* why, when mem_refused */
	char old_nodeset[NODELIST_BUFSZ]; /* what the numatune step replaces ("": unknown) */
	/* Whether the CPUs move when libvirt cannot move the memory
	 * (cpus_without_memory against the two localities). */
	bool cpus_follow;
};

/* libvirt's map length for NCPUS CPUs. */
int vmplan_maplen(int ncpus);

/* The steps that move IN's domain, whose threads are pinned as NOW. P
 * references IN and NOW, which must outlive it. */
void vmplan_make(struct vmplan *p, const struct vmplan_in *in, const struct vmpins *now);
/* Frees P's steps and target (not P). */
void vmplan_free(struct vmplan *p);

/* "vcpupin 3", "emulatorpin", "iothreadpin 1", "numatune". */
const char *vmplan_step_name(const struct vmstep *s, char *buf, size_t sz);
/* A map as a CPU list ("?" if it does not fit). */
const char *vmplan_fmt_map(const unsigned char *map, int maplen, char *buf, size_t sz);

#endif
