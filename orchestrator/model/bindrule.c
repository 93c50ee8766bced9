/* bindrule.c — when a start binding ends (bindrule.h). */
#include "orchestrator/model/bindrule.h"

#include "orchestrator/model/policy.h"

uint64_t bind_slack(uint64_t mem_last)
{
	return mem_last / 100 > (2ULL << 20) ? mem_last / 100 : (2ULL << 20);
}

void bind_rule(const struct bind_facts *f, struct bind_verdict *out)
{
	bool still = f->mem_now <= f->mem_last + bind_slack(f->mem_last);

	out->why = NULL;
	out->grew = f->grew || !still;
	out->mem = f->mem_now;
	if (f->node_short)
		out->why = "its node is short of free memory";
	else if (f->age_s >= BIND_MAX_S)
		out->why = "bound for the longest a start binding lasts";
	else if (!f->grew && still && f->age_s >= BIND_START_S)
		out->why = "its memory did not begin to grow";
	else if (f->grew && still)
		out->why = "its memory stopped growing";
}

bool bind_node_short(const struct snapshot *snap, const nodemask_t *mems, uint64_t min_free_bytes,
		     double min_free_share)
{
	for (unsigned n = 0; n < snap->nr_nodes; n++) {
		const struct snap_node *sn = &snap->nodes[n];

		if (mask_test(mems, sn->id) && sn->mem_total &&
		    sn->mem_free < policy_reserve(min_free_bytes, min_free_share, sn->mem_total))
			return true;
	}
	return false;
}
