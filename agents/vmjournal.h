/* vmjournal.h — carries out a VM move's steps (vmplan.h) through libvirt
 * and undoes them: the acting half of the VM actuator, as cgjournal.h is
 * for containers.
 *
 * Every libvirt call it makes goes through a struct vmlv, a table of
 * function pointers: vmapply.c's calls libvirt, the unit tests
 * (tests/unit/test_vmapply.c) inject a mock domain (libvirt's own tests
 * mock the same calls). No libvirt types here.
 *
 * One move: read the live pinning (what each step will replace), make
 * the plan, then the numatune step (its refusal may be "libvirt cannot
 * move this memory", after which cpus_without_memory decides whether the
 * CPUs move), then the pins. The journal is the steps made, oldest first;
 * a failed pin undoes them newest first, each back to the value it
 * replaced (the old nodeset not when the domain is gone).
 */
#ifndef NUMAORCH_VMJOURNAL_H
#define NUMAORCH_VMJOURNAL_H

#include <stdbool.h>

#include "vmplan.h"
#include "../orchestrator/actuator/apply.h"

/* libvirt's error of the call that just failed, copied before any other
 * call replaces the thread's last error. */
struct vmlv_err {
	int code;                      /* libvirt's virErrorNumber (the mock's own) */
	char msg[240];
};

/* The libvirt calls of a move, on DOM (the real table's virDomainPtr).
 * Each returns what the libvirt call returns (< 0: failed, its error then
 * read by error()). */
struct vmlv {
	/* virDomainGetVcpuPinInfo(AFFECT_LIVE): the count read */
	int (*vcpu_pins)(void *dom, unsigned nvcpus, unsigned char *maps, int maplen);
	/* virDomainGetEmulatorPinInfo(AFFECT_LIVE): > 0 if pinned */
	int (*emulator_pin)(void *dom, unsigned char *map, int maplen);
	/* virDomainGetIOThreadInfo(AFFECT_LIVE): the count; *IDS and *MAPS
	 * ([count * maplen]) malloc'd on success, each at least one element */
	int (*iothreads)(void *dom, int maplen, unsigned **ids, unsigned char **maps);
	/* virDomainSetNumaParameters(AFFECT_LIVE): the nodeset, and mode
	 * restrictive with it if RESTRICTIVE */
	int (*set_numa)(void *dom, const char *nodeset, bool restrictive);
	/* virDomainPinVcpuFlags, virDomainPinEmulator, virDomainPinIOThread
	 * (AFFECT_LIVE) */
	int (*pin_vcpu)(void *dom, unsigned vcpu, const unsigned char *map, int maplen);
	int (*pin_emulator)(void *dom, const unsigned char *map, int maplen);
	int (*pin_iothread)(void *dom, unsigned id, const unsigned char *map, int maplen);
	/* The last call's error (virGetLastError). */
	void (*error)(struct vmlv_err *e);
	/* After a failed call with error E: is the domain simply gone? */
	bool (*gone)(void *dom, const struct vmlv_err *e);
};

/* The live pinning of DOM's first NVCPUS vCPUs, its emulator and I/O
 * threads, as MAPLEN-byte maps. 0, or -EIO (the failed call's error is
 * lv->error's); OUT is filled either way (vmpins_free it). */
int vmj_read(const struct vmlv *lv, void *dom, unsigned nvcpus, int maplen, struct vmpins *out);

/* Move DOM as IN says (the domain re-checked by the caller): read, plan,
 * run, undo on failure. Fills RES (status, message, writes added to
 * RES->writes, cpus_moved). *TOUCHED: the pins were reached (made,
 * or failed and undone), so the domain's settings must be re-read. */
void vmj_carry(const struct vmlv *lv, void *dom, const struct vmplan_in *in, struct apply_result *res,
	       bool *touched);

#endif
