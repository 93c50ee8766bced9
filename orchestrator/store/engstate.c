/* engstate.c — the engine's persistent state as JSON (engstate.h). */
#include "orchestrator/store/engstate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/mask.h"
#include "orchestrator/base/xalloc.h"

#define FORMAT "numaorch-engine-state"
#define SEC 1000000000LL
/* The API's own caps: vcpus and memory_mib of POST /v1/placements. */
#define CAP_MEM_BYTES ((uint64_t)1 << 50)

json_t *engstate_to_json(const struct pstate *ps, const struct resv_list *rl, int64_t offset_ns)
{
	json_t *cool = json_array(), *res = json_array();

	for (unsigned i = 0; ps && i < ps->n; i++) {
		json_t *c = json_pack("{s:s, s:I, s:i, s:b}", "guest", ps->e[i].id, "last_move_real_ns",
				      (json_int_t)(ps->e[i].last_move_ns + offset_ns), "moves", (int)ps->e[i].nr_moves,
				      "follow", ps->e[i].last_follow);

		if (ps->e[i].cooldown_ns > 0)
			json_object_set_new(c, "cooldown_ns", json_integer((json_int_t)ps->e[i].cooldown_ns));
		json_array_append_new(cool, c);
	}
	for (unsigned i = 0; rl && i < rl->n; i++) {
		const struct resv *r = &rl->r[i];
		char nodes[NODELIST_BUFSZ], cpun[NODELIST_BUFSZ], mems[NODELIST_BUFSZ];

		mask_format(&r->room.nodes, nodes, sizeof(nodes));
		mask_format(&r->cpu_nodes, cpun, sizeof(cpun));
		mask_format(&r->mems, mems, sizeof(mems));
		json_array_append_new(res, json_pack("{s:I, s:o, s:I, s:s, s:f, s:I, s:s, s:s}", "id", (json_int_t)r->id,
						     "label", r->label ? json_string(r->label) : json_null(),
						     "expires_real_ns", (json_int_t)(r->expires_ns + offset_ns), "nodes", nodes,
						     "cpus", r->room.cpus, "mem_bytes", (json_int_t)r->room.mem_bytes,
						     "cpu_nodes", cpun, "mems", mems));
	}
	/* the last id given, so that ids are never given twice */
	return json_pack("{s:s, s:i, s:o, s:o, s:I}", "format", FORMAT, "version", 1, "cooldowns", cool,
			 "reservations", res, "last_reservation_id", (json_int_t)(rl ? rl->next_id : 0));
}

int engstate_from_json(const json_t *j, int64_t offset_ns, int64_t now_mono_ns, const struct engstate_limits *lim,
		       struct pstate **out_ps, struct resv_list *rl, char *err, size_t errsz)
{
	const double max_cpus = lim && lim->cpus > 0 ? lim->cpus : MASK_MAX_CPUS;
	const uint64_t max_mem = lim && lim->mem_bytes ? lim->mem_bytes : CAP_MEM_BYTES;
	/* realtime: now, and the latest time a saved one may name */
	const int64_t latest = now_mono_ns + offset_ns + ENGSTATE_AHEAD_S * SEC;
	const char *format = NULL;
	json_t *cool = NULL, *res = NULL, *x;
	json_int_t last_id = 0;
	struct pstate *ps;
	struct resv *rv;
	unsigned nrv = 0;
	int version = 0;
	size_t i;

	if (json_unpack((json_t *)j, "{s:s, s:i, s:o, s:o, s?I}", "format", &format, "version", &version, "cooldowns",
			&cool, "reservations", &res, "last_reservation_id", &last_id) < 0 ||
	    strcmp(format, FORMAT) != 0 || version != 1 || !json_is_array(cool) || !json_is_array(res) || last_id < 0) {
		snprintf(err, errsz, "not a version 1 %s file", FORMAT);
		return -EINVAL;
	}
	ps = pstate_new();
	json_array_foreach(cool, i, x) {
		const char *id;
		json_int_t when, cooldown = 0;
		int moves, follow = 0;

		/* "follow" and "cooldown_ns" are optional: files written before
		 * them mean a move, and the cool-down configured */
		if (json_unpack(x, "{s:s, s:I, s:i, s?b, s?I}", "guest", &id, "last_move_real_ns", &when, "moves",
				&moves, "follow", &follow, "cooldown_ns", &cooldown) < 0 ||
		    !id[0] || strlen(id) >= GUEST_ID_MAX || moves < 1) {
			snprintf(err, errsz, "cooldowns[%zu]: needs guest, last_move_real_ns and moves >= 1", i);
			pstate_free(ps);
			return -EINVAL;
		}
		/* A move "in 2200" would hold the guest still for ever. */
		if (when < 0 || when > latest) {
			snprintf(err, errsz, "cooldowns[%zu]: last_move_real_ns %lld is not a time up to a day from now",
				 i, (long long)when);
			pstate_free(ps);
			return -EINVAL;
		}
		/* One longer than any cool-down a setting allows would hold it
		 * longer than the operator could have asked. */
		if (cooldown < 0 || cooldown > ENGSTATE_COOLDOWN_MAX_S * SEC) {
			snprintf(err, errsz, "cooldowns[%zu]: cooldown_ns %lld is not 0..%d s", i, (long long)cooldown,
				 ENGSTATE_COOLDOWN_MAX_S);
			pstate_free(ps);
			return -EINVAL;
		}
		if (follow)
			pstate_note_follow(ps, id, (int64_t)when - offset_ns);
		else
			pstate_note_move(ps, id, (int64_t)when - offset_ns);
		pstate_note_cooldown(ps, id, (int64_t)cooldown);
		/* the count as saved (note_move counted one) */
		for (unsigned k = 0; k < ps->n; k++)
			if (strcmp(ps->e[k].id, id) == 0)
				ps->e[k].nr_moves = (unsigned)moves;
	}
	rv = xcalloc(json_array_size(res) ? json_array_size(res) : 1, sizeof(*rv));
	json_array_foreach(res, i, x) {
		const char *nodes, *cpun, *mems;
		json_t *label;
		json_int_t id, expires, mem;
		double cpus;
		struct resv *r = &rv[nrv];

		if (json_unpack(x, "{s:I, s:o, s:I, s:s, s:F, s:I, s:s, s:s}", "id", &id, "label", &label,
				"expires_real_ns", &expires, "nodes", &nodes, "cpus", &cpus, "mem_bytes", &mem,
				"cpu_nodes", &cpun, "mems", &mems) < 0 || id < 1 || mem < 0 || cpus < 0 ||
		    !(json_is_null(label) || json_is_string(label)) || mask_parse(nodes, &r->room.nodes) < 0 ||
		    mask_parse(cpun, &r->cpu_nodes) < 0 || mask_parse(mems, &r->mems) < 0) {
			snprintf(err, errsz, "reservations[%zu]: needs id, label, expires_real_ns, nodes, cpus, "
				 "mem_bytes, cpu_nodes and mems", i);
			free(rv);
			pstate_free(ps);
			return -EINVAL;
		}
		/* Room no host has would make every placement "nothing fits"
		 * until it expired, and be saved back. */
		if (!isfinite(cpus) || cpus > max_cpus || (uint64_t)mem > max_mem || expires < 0 ||
		    expires > latest) {
			snprintf(err, errsz, "reservations[%zu]: %g CPUs, %lld bytes, expiring at %lld: past what "
				 "this host has (%g CPUs, %llu bytes) or more than %d s from now", i, cpus,
				 (long long)mem, (long long)expires, max_cpus, (unsigned long long)max_mem,
				 ENGSTATE_AHEAD_S);
			free(rv);
			pstate_free(ps);
			return -EINVAL;
		}
		r->id = (uint64_t)id;
		r->expires_ns = (int64_t)expires - offset_ns;
		r->label = json_is_string(label) ? (char *)json_string_value(label) : NULL;
		r->room.cpus = cpus;
		r->room.mem_bytes = (uint64_t)mem;
		if (r->expires_ns > now_mono_ns)
			nrv++;
	}
	for (unsigned k = 0; k < nrv; k++)
		resv_restore(rl, &rv[k]);
	if ((uint64_t)last_id > rl->next_id)
		rl->next_id = (uint64_t)last_id;
	free(rv);
	*out_ps = ps;
	return 0;
}
