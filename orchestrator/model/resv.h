/* resv.h — room promised to guests about to start (POST /v1/placements
 * with reserve_seconds, and VM initial placement): one array of
 * reservations, each with its id, expiry, label and where the advice put
 * the guest. Pure: times are passed in (CLOCK_MONOTONIC ns); the engine
 * owns the list and persists it (engstate.h).
 */
#ifndef NUMAORCH_RESV_H
#define NUMAORCH_RESV_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/model/policy.h"

struct resv {
	uint64_t id;                     /* ≥ 1, unique in the list's life */
	int64_t expires_ns;              /* CLOCK_MONOTONIC */
	char *label;                     /* who it is for (domain name, uuid, id); NULL */
	struct advice_reservation room;  /* what the policy counts as taken */
	/* Where the advice put the guest: CPU nodes and memory nodes (room.nodes
	 * holds both, for accounting). Empty: not known. */
	nodemask_t cpu_nodes, mems;
};

struct resv_list {
	unsigned n, cap;
	struct resv *r;                  /* in the order they were made */
	uint64_t next_id;                /* the last id given */
	uint64_t gen;                    /* changes with every add and removal */
	/* room of r[0..n), contiguous as the policy takes it (resv_rooms) */
	struct advice_reservation *rooms;
	unsigned cap_rooms;
};

/* Frees the members; L is empty (and reusable) after. */
void resv_list_clear(struct resv_list *l);
/* Add one expiring at EXPIRES_NS. CPU_NODES and MEMS (may be NULL) are
 * kept only when both are non-empty. LABEL may be NULL. Returns its id. */
uint64_t resv_add(struct resv_list *l, const struct advice_reservation *room, const nodemask_t *cpu_nodes,
		  const nodemask_t *mems, int64_t expires_ns, const char *label);
/* Put back a reservation as it was (loading saved state): ID is kept and
 * next_id moves past it. */
void resv_restore(struct resv_list *l, const struct resv *r);
/* Drop those that expired at NOW_NS (expires_ns ≤ now). */
void resv_expire(struct resv_list *l, int64_t now_ns);
void resv_remove_at(struct resv_list *l, unsigned i);
/* Drop reservation ID, or (ID 0) the first one with LABEL. true if found. */
bool resv_drop(struct resv_list *l, uint64_t id, const char *label);
/* The first reservation whose label is one of KEYS[NKEYS] (empty or NULL
 * keys match nothing); -1 if none. */
int resv_find_label(const struct resv_list *l, const char *const *keys, unsigned nkeys);
/* The rooms of all reservations, for the policy and the advice. *OUT
 * points into L, valid until L changes. Returns the count. */
unsigned resv_rooms(struct resv_list *l, const struct advice_reservation **out);

#endif
