/* parts.h — a guest's parts (snap_guest.parts: container cgroups with a
 * cpuset of their own, a pod's containers) given each its own share of
 * the guest's target when that target spans several nodes: a
 * container's threads touch its own memory, so it is local only when
 * it runs on the node holding that memory, whatever its siblings do.
 * Pure (policies/), private to this folder.
 */
#ifndef NUMAORCH_POLICIES_PARTS_H
#define NUMAORCH_POLICIES_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "../orchestrator/model/plan.h"
#include "../orchestrator/model/snapshot.h"

/* Split the target NODES (CPUs: CPUS, memory: MEMS) of guest G of S over
 * its parts, biggest CPU use first: each to the node of NODES that holds
 * most of its memory among those with CPUs left for its busy threads and
 * room for its memory (ties: where its threads ran most, then the node
 * given less so far, then the less busy); a part that fits no single node, or whose use or memory was not
 * measured, keeps the whole target. OUT gets one entry a part (room for
 * G->nr_parts). Returns how many parts got a node of their own (0: no
 * split: fewer than two nodes, no part measured); *MIGRATE (may be NULL)
 * the bytes that must move for every part to be on its own mems and the
 * rest of G inside MEMS. */
unsigned parts_split(const struct snapshot *s, const struct snap_guest *g, const nodemask_t *nodes,
		     const nodemask_t *mems, const cpumask_t *cpus, struct plan_part *out, uint64_t *migrate);

/* Does a part of G, measured, sit where SPLIT (N entries, parts_split's)
 * would not put it: its threads off its node, or its memory not all
 * there? LOCALITY_TARGET: a part at least this local is left. */
bool parts_misplaced(const struct snapshot *s, const struct snap_guest *g, const struct plan_part *split,
		     unsigned n, double locality_target);

/* Give each move of P whose guest has parts and whose target spans two
 * nodes or more its parts' own targets (plan_item.parts), its
 * migrate_bytes what the parts must move, and a sentence in its detail
 * saying which part went where. A split guest (plan_item.split) keeps its
 * one target. P's migrate_bytes follow, never past MAX_MIGRATE by a
 * split: a split that would pass it is not made (the detail says so). */
void parts_plan(const struct snapshot *s, struct plan *p, uint64_t max_migrate);

#endif
