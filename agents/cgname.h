/* cgname.h — which cgroups are containers, by their names (pure: no I/O).
 *
 * Recognised (relative cgroup paths; v1 paths are the same in every
 * hierarchy):
 *   docker      .../docker-<64hex>.scope             /docker/<64hex>
 *   kubernetes  pods: .../kubepods[-<qos>]-pod<uid>.slice, /kubepods[/<qos>]/pod<uid>
 *               (the pod is the guest; its containers are its children)
 *   podman      .../libpod-<64hex>.scope             /libpod_parent/libpod-<64hex>
 *               (libpod-conmon-* is podman's monitor, not a guest)
 *   lxc         /lxc.payload.<name>, /lxc/<name> (lxc.monitor.* is not a guest)
 *   nspawn      /machine.slice/machine-<name>.scope, except libvirt's
 *               machine-qemu\x2d* and machine-lxc\x2d* scopes
 * libvirt's own groups (/machine/qemu-<N>-<name>.libvirt-qemu, the
 * machine-qemu scopes) are left to the VM source. runc state and
 * configured parents (the other two rules) are the scanner's (cgscan.c,
 * cgrunc.c): they need the host.
 */
#ifndef NUMAORCH_CGNAME_H
#define NUMAORCH_CGNAME_H

#include <stdbool.h>
#include <stddef.h>

#include "../orchestrator/model/snapshot.h"

/* Classify a relative cgroup path: true if REL is a guest root by its
 * name and no ancestor of it is one (nothing below a guest, or below
 * libvirt's groups, is a guest), filling RUNTIME and NAME (see
 * snapshot.h for ids). */
bool cgname_classify(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128]);

/* The same for REL's last component (and its parents' names) alone,
 * assuming no ancestor is a guest: what the walk asks on its way down. */
bool cgname_classify_one(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128]);

/* libvirt's VM groups and runtimes' monitor groups (the N bytes at B):
 * never guests, and nothing below them is ours either. */
bool cgname_excluded(const char *b, size_t n);

/* A name of N bytes into NAME. One longer than 127 keeps its first 118
 * bytes and "~" + 8 hex digits of a hash of all of it: two long names
 * that share a prefix stay two guests (they became one when both were
 * cut at 127), and the same name gives the same result on every scan. */
void cgname_copy(char name[128], const char *s, size_t n);

#endif
