/* vmxml.h — the few facts numaorch takes from a libvirt domain's XML, and
 * numaorch's own per-VM policy element.
 *
 * Parsed with libxml2 (libvirt's own XML library, already in the process
 * through libvirt): a domain XML can hold CDATA, comments, entities and
 * namespaces anywhere, which a hand-written scanner would get wrong. The
 * parser never loads external entities or DTDs and never touches the
 * network (XML_PARSE_NONET, no XML_PARSE_NOENT/DTDLOAD).
 *
 * The policy element lives in the domain's <metadata>, in numaorch's
 * namespace VMXML_NS:
 *
 *   <metadata>
 *     <numaorch:policy xmlns:numaorch="urn:numaorch:libvirt:1" mode="pinned" nodes="0-1"/>
 *   </metadata>
 *
 * mode is auto | pinned | ignore; nodes (a node list, "0-1,3") is
 * required with pinned and refused otherwise; devices (prefer | require
 * | ignore, default prefer) says what its devices' nodes weigh. Set it with
 *   virsh metadata DOMAIN urn:numaorch:libvirt:1 --key numaorch \
 *         --set '<policy mode="ignore"/>'
 * The namespace is a URN rather than an http URL because numaorch owns no
 * web domain; libvirt needs only a unique URI for the namespace.
 */
#ifndef NUMAORCH_VMXML_H
#define NUMAORCH_VMXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../orchestrator/model/snapshot.h"
#include "devnode.h"

#define VMXML_NS "urn:numaorch:libvirt:1"
#define VMXML_NS_PREFIX "numaorch"

/* Devices of a domain kept (the first ones in its XML); more are counted. */
#define VMXML_DEV_MAX 16

/* A device passed through to the domain, on a node of the host. */
struct vmxml_dev {
	enum devnode_kind kind;
	char addr[40];       /* PCI address, /dev/vhost-vdpa-N, mdev uuid */
};

struct vmxml_info {
	char uuid[37];
	char name[128];
	unsigned vcpus;            /* <vcpu current=...>, else its value; 0 if absent */
	uint64_t mem_bytes;        /* <currentMemory>, else <memory>; 0 if absent */

	/* <numatune><memory mode= nodeset=/>: has_numatune is false
	 * when there is no <memory> element (libvirt then reports mode
	 * "strict" with an empty nodeset, which is not the same thing: such
	 * a domain's nodeset can still be set live, once). */
	bool has_numatune;
	char numatune_mode[16];    /* "strict" when the attribute is absent (libvirt's default) */
	char numatune_nodeset[64];
	unsigned nr_memnodes_bound;/* <numatune><memnode> not in mode restrictive: guest
				    * cells whose memory QEMU binds (mbind) to host nodes */

	/* Its host devices: <hostdev> of type pci, vdpa and mdev and
	 * <interface> of type hostdev and vdpa. nr_devs counts them all,
	 * devs[] holds the first VMXML_DEV_MAX. */
	unsigned nr_devs;
	struct vmxml_dev devs[VMXML_DEV_MAX];

	bool has_policy;           /* a numaorch policy element was found and is valid */
	struct guest_policy policy;/* source GPOL_SRC_METADATA when has_policy */
	char policy_error[160];    /* a malformed policy element: why ("" if fine) */
};

/* Parse XML (LEN bytes, need not be NUL-terminated) into OUT. Returns 0,
 * or -EINVAL with ERR naming the problem when it is not a domain XML. A
 * malformed numaorch policy element is not an error: it is reported in
 * out->policy_error and the policy left at the default. */
int vmxml_parse(const char *xml, size_t len, struct vmxml_info *out, char *err, size_t errsz);

/* Validate the policy element's attributes (either may be NULL). Returns 0
 * or -EINVAL with ERR saying why. Exposed for unit tests. */
int vmxml_policy_from_attrs(const char *mode, const char *nodes, struct guest_policy *out,
			    char *err, size_t errsz);

/* When NOW's metadata policy was set (NOW->policy.set_real_ns), from the
 * domain's previous read BEFORE (NULL: this is its first read) at wall
 * clock NOW_REAL_NS: a policy that differs from BEFORE's (mode or nodes,
 * or newly there) was set now, as far as the agent can tell; the same
 * policy keeps BEFORE's time; at a first read it is not known (0). The
 * policy lets a pin set since the guest's last move through its
 * cool-down, as for one set through the API. */
void vmxml_policy_carry(struct vmxml_info *now, const struct vmxml_info *before, int64_t now_real_ns);

/* true if the domain's memory can follow a live nodeset change: no
 * <numatune><memory> or mode restrictive (libvirt refuses the others:
 * "change of nodeset for running domain requires restrictive numa
 * mode"), and no guest cell bound to host nodes by a <memnode> (QEMU
 * mbind()s those backends; a cgroup change would not move them). */
bool vmxml_numatune_movable(const struct vmxml_info *x);

#endif
