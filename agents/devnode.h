/* devnode.h — the NUMA node a guest's device sits on, from sysfs (under
 * the injectable root, struct host_paths), for the VM source (the
 * devices of a domain's XML) and the container scan (the kubelet's
 * device-plugin checkpoint).
 *
 * A PCI function's node is its /sys/bus/pci/devices/ADDR/numa_node (-1:
 * the firmware gave it none). A vDPA device (/dev/vhost-vdpa-N) and a
 * mediated device (an mdev's uuid) have no node of their own: theirs is
 * the nearest ancestor's in the device tree that has a numa_node (the
 * PCI function carrying them), found by walking up from
 * /sys/bus/vdpa/devices/vdpaX/vhost-vdpa-N or /sys/bus/mdev/devices/UUID.
 */
#ifndef NUMAORCH_DEVNODE_H
#define NUMAORCH_DEVNODE_H

#include <stdbool.h>

#include "../orchestrator/base/hostpaths.h"

enum devnode_kind {
	DEVNODE_PCI = 0, /* a PCI address, "0000:3b:00.1" */
	DEVNODE_VDPA,    /* a vhost-vdpa character device, "/dev/vhost-vdpa-0" */
	DEVNODE_MDEV,    /* a mediated device's uuid */
};

/* true if S is a PCI address as sysfs names it: DDDD:BB:SS.F (hex). */
bool devnode_is_pci(const char *s);

/* The node of device ADDR of KIND into *NODE (-1: none). 0, -EINVAL for
 * an address that is not one of KIND (nothing is read), -ENOENT when
 * sysfs has no such device. */
int devnode_of(const struct host_paths *hp, enum devnode_kind kind, const char *addr, int *node);

/* The node of the char (BLOCK: block) device MAJ:MIN into *NODE (-1:
 * none): its /sys/dev/char/MAJ:MIN/device and up to the nearest directory
 * with a numa_node, as for vDPA. 0, or -ENOENT when it has no bus device
 * behind it (a virtual device) or sysfs has no such device. */
int devnode_of_dev(const struct host_paths *hp, bool block, unsigned maj, unsigned min, int *node);

#endif
