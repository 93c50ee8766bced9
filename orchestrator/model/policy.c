/* policy.c — policy configuration defaults and validation (was policies/pconfig.c;
 * the policy config is the core's model: orchestrator/store/config.c embeds it). */
#include "orchestrator/model/policy.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>

#define MIB (1024ULL * 1024ULL)
/* Byte limits beyond any real host; they keep the policy's int64 sums of
 * free memory from overflowing. */
#define BYTES_MAX (1ULL << 50)

void policy_config_default(struct policy_config *c)
{
	c->locality_target = 0.9;
	c->cpu_headroom = 0.2;
	c->min_cpu = 0.1;
	c->mem_headroom = 0.1;
	c->min_free_bytes = 256 * MIB;
	c->min_free_share = 0.04;
	c->less_busy_margin = 0.12;
	c->max_util = 0.9;
	c->rebalance_util = 0.8;
	c->cooldown_ns = 300LL * 1000000000LL;
	c->max_moves = 4;
	c->max_migrate_bytes = 4096 * MIB;
	c->start_place = true;
	c->start_bind_mems = false;
	c->whole_cores = true;
	c->container_cores = false;
	c->devices = GPOL_DEV_PREFER;
}

uint64_t policy_reserve(uint64_t min_free_bytes, double share, uint64_t total)
{
	double cap;

	if (!total || !(share >= 0.0) || share >= 1.0)
		return min_free_bytes;
	cap = share * (double)total;
	return cap < (double)min_free_bytes ? (uint64_t)cap : min_free_bytes;
}

static bool in(double v, double lo, double hi)
{
	return !isnan(v) && v >= lo && v <= hi;
}

/* Field names are the config file's keys (orchestrator/store/config.c). Ranges
 * match what that parser accepts; max_migrate_mib = 0 is valid and means
 * only moves that migrate nothing (cpuset-only consolidation). */
int policy_config_validate(const struct policy_config *c, const char **field)
{
	const char *bad = NULL;

	if (!c)
		bad = "policy";
	else if (!in(c->locality_target, 0.0, 1.0))
		bad = "locality_target";
	else if (!in(c->cpu_headroom, 0.0, 10.0))
		bad = "cpu_headroom";
	else if (!in(c->min_cpu, 0.0, 4096.0))
		bad = "min_cpu";
	else if (!in(c->mem_headroom, 0.0, 10.0))
		bad = "mem_headroom";
	else if (c->min_free_bytes > BYTES_MAX)
		bad = "min_free_mib";
	else if (!in(c->min_free_share, 0.0, 1.0))
		bad = "min_free_share";
	else if (!in(c->less_busy_margin, 0.0, 1.0))
		bad = "less_busy_margin";
	else if (!in(c->max_util, 0.0, 1.0) || c->max_util <= 0.0)
		bad = "max_util";
	else if (!in(c->rebalance_util, 0.0, 1.0))
		bad = "rebalance_util";
	else if (c->cooldown_ns < 0)
		bad = "cooldown";
	else if (c->max_moves < 1)
		bad = "max_moves";
	else if (c->max_migrate_bytes > BYTES_MAX)
		bad = "max_migrate_mib";
	if (bad) {
		if (field)
			*field = bad;
		return -EINVAL;
	}
	return 0;
}
