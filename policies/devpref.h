/* devpref.h — private to policies/: what a guest's devices weigh in its
 * placement (snap_guest.dev_nodes, its policy's devices field).
 *
 * A device sits on a node (its PCI function's numa_node): DMA and
 * interrupts cross the interconnect when the guest runs elsewhere. Under
 * devices = prefer (the default), a target holding one of its devices'
 * nodes costs W_DEVICE_PLACE less in the score: a guest that moves
 * anyway goes to its device's node where it fits, its memory following
 * unless that is gigabytes (the travel term outweighs it); a guest
 * settled elsewhere is not moved for it; and a guest on its device's
 * node leaves it for load only when the other set is less busy by the
 * margin and by W_DEVICE more. Room is never overridden: only sets that
 * fit compete. Under
 * require, only sets holding a device's node are candidates (none fits:
 * the guest is skipped, its record saying so); ignore: the devices do
 * not count. */
#ifndef NUMAORCH_POLICIES_DEVPREF_H
#define NUMAORCH_POLICIES_DEVPREF_H

#include <stdbool.h>
#include <stddef.h>

#include "guards.h"

/* A set without the device's node, in utilisation: more than the noise
 * between two nodes' loads (a guest would not leave its device for a node
 * a few percent less busy), less than a busy guest's share of a small
 * node (a 2-CPU node a guest keeps half busy still sheds it). */
#define W_DEVICE 0.15
/* A set without the device's node, for a guest that moves anyway: a
 * little more than migrating all of a guest's memory (W_MIGRATE), so the
 * device's node is worth moving a small guest's memory for — an operator
 * who passed a device through wants the guest beside it — while W_TRAVEL's
 * gigabytes per CPU still keep a big, lightly used guest's memory where
 * it is (break-even near 5 GiB per CPU used). */
#define W_DEVICE_PLACE 0.6
/* Beside the kernel's balancing, a set where a moving guest's memory is
 * (or where the kernel brings it) comes before other sets whatever their
 * scores; one holding its device's node still competes with it by score,
 * unless the kernel is measured carrying the memory toward a node outside
 * it and more than this share of what the device's set would migrate is
 * on that node already. With the CPUs on the device's node the kernel
 * brings the memory there too (it migrates toward the threads on fault),
 * so what it carried elsewhere is what crosses again: up to a fifth of
 * the move keeps kernel and agent together within 1.2 times the net
 * movement. */
#define DEV_FLOW_CARRIED 0.2

/* G's devices' nodes weigh in its placement (it has some, not ignored). */
bool dev_weighs(const struct snap_guest *g);
/* G requires a device's node and NODES holds none. */
bool dev_refused(const struct snap_guest *g, const nodemask_t *nodes);
/* What leaving FROM for TO costs G beyond the less-busy margin: W_DEVICE
 * when G prefers its devices' nodes, FROM holds one and TO none. */
double dev_leave_cost(const struct snap_guest *g, const nodemask_t *from, const nodemask_t *to);
/* The candidates of the last pcands_generate for G (view V, USABLE
 * nodes), its devices weighed: under prefer each set holding none of its
 * devices' nodes scores W_DEVICE_PLACE more; under require such sets are
 * dropped, and when no fitting set is left one is grown from each
 * usable device node (the generation cuts sets beyond the fewest nodes,
 * so one holding the device may be missing). Returns the fewest nodes of
 * a fitting set left (KMIN, pcands_generate's, unchanged otherwise). */
unsigned dev_cands(struct pctx *x, const struct snap_guest *g, const struct gview *v, const bool *usable,
		   unsigned kmin);
/* The same for devices on nodes DEV weighed as MODE says: the advice's
 * (advice_request.dev_nodes) for a guest not in the snapshot yet. */
unsigned dev_cands_for(struct pctx *x, enum gpol_devices mode, const nodemask_t *dev, const struct gview *v,
		       const bool *usable, unsigned kmin);
/* The record's words on G's devices for target NODES: "; near its
 * device on node 1", "; away from its devices on nodes 1-2", "" when
 * they do not weigh. */
void dev_note(const struct snap_guest *g, const nodemask_t *nodes, char *buf, size_t sz);
/* The same for NR devices on nodes DEV weighed as MODE says. */
void dev_note_for(enum gpol_devices mode, const nodemask_t *dev, unsigned nr, const nodemask_t *nodes, char *buf,
		  size_t sz);

#endif
