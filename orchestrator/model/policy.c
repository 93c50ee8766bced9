/* policy.c — policy configuration defaults and validation (was policies/pconfig.c;
 * the policy config is the core's model: orchestrator/store/config.c embeds it). */
#include "orchestrator/model/policy.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)
/* Byte limits beyond any real host; they keep the policy's int64 sums of
 * free memory from overflowing. */
#define BYTES_MAX (1ULL << 50)

void policy_config_default(struct policy_config *c)
{
	/* (c->in: not told) */
	memset(c, 0, sizeof(*c));
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
	c->max_moves_auto = true;
	c->max_migrate_auto = true;
	c->cooldown_auto = true;
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

/* The auto budget has a floor: before any job has ended there is no rate
 * to size it by, and a slow measurement (a job that waited for room, a
 * busy guest's small pages) must not shrink it below the fixed
 * default's, where a pod's split over its containers' own nodes no
 * longer fitted and the pod stayed spread over nodes it shared. A
 * budget the mover cannot finish in one interval costs little — each
 * guest's next plans wait while its job runs, and max_moves keeps the
 * jobs within the workers — where too small a one costs a cycle per
 * guest. */
static uint64_t auto_migrate(const struct policy_config *c)
{
	const struct policy_mover_in *in = &c->in;
	double b = in->rate_mibs > 0 ? in->rate_mibs * in->interval_s * (double)MIB : 0.0;

	if (b < (double)POLICY_AUTO_MIGRATE_FLOOR)
		b = (double)POLICY_AUTO_MIGRATE_FLOOR;
	/* the rate budget refines it, as it does a number (engine_conf.c) */
	if (in->rate_cap_mibs > 0 && in->rate_cap_mibs * in->interval_s * (double)MIB < b)
		b = in->rate_cap_mibs * in->interval_s * (double)MIB;
	return b >= (double)BYTES_MAX ? BYTES_MAX : (uint64_t)b;
}

void policy_resolve(const struct policy_config *c, struct policy_config *out)
{
	*out = *c;
	if (c->max_moves_auto && c->in.workers > 0)
		out->max_moves = c->in.workers;
	if (c->max_migrate_auto && c->in.interval_s > 0)
		out->max_migrate_bytes = auto_migrate(c);
}

void policy_moves_why(const struct policy_config *c, char *buf, size_t sz)
{
	if (c->max_moves_auto && c->in.workers > 0)
		snprintf(buf, sz, "%u = [memory] workers", c->in.workers);
	else
		snprintf(buf, sz, "%u (max_moves)", c->max_moves);
}

void policy_migrate_why(const struct policy_config *c, char *buf, size_t sz)
{
	const struct policy_mover_in *in = &c->in;
	unsigned long long b = (unsigned long long)(c->max_migrate_bytes / MIB);
	double m = in->rate_mibs > 0 ? in->rate_mibs * in->interval_s : 0.0, floor_mib, base;

	if (!c->max_migrate_auto || !(in->interval_s > 0)) {
		snprintf(buf, sz, "%llu MiB (max_migrate_mib)", b);
		return;
	}
	floor_mib = (double)(POLICY_AUTO_MIGRATE_FLOOR / MIB);
	base = m > floor_mib ? m : floor_mib;
	if (in->rate_cap_mibs > 0 && in->rate_cap_mibs * in->interval_s < base)
		snprintf(buf, sz, "%llu MiB = rate_mib %.0f MiB/s x %.0f s", b, in->rate_cap_mibs, in->interval_s);
	else if (!(m > 0))
		snprintf(buf, sz, "%llu MiB, auto's floor: the mover has not measured its rate yet", b);
	else if (m < floor_mib)
		snprintf(buf, sz, "%llu MiB, auto's floor (%.0f MiB/s measured x %.0f s is %.0f MiB)", b,
			 in->rate_mibs, in->interval_s, m);
	else
		snprintf(buf, sz, "%llu MiB = %.0f MiB/s measured x %.0f s", b, in->rate_mibs, in->interval_s);
}

/* An auto cool-down is its move's migration time, the mover's time the
 * move cost, times K: moving the guest back at once would cost the same
 * again, so a guest that kept being moved to and fro would take at most
 * 1/K of the mover's time. The floor lets the next samples show what a
 * move of CPUs alone did before it may be corrected (and no less than
 * half a minute on a short interval, where samples are noisy); the
 * ceiling is the fixed default's. The bounds for C (told): at least two
 * intervals and POLICY_AUTO_COOLDOWN_MIN_S, at most
 * POLICY_AUTO_COOLDOWN_MAX_S. */
static double auto_cooldown_s(const struct policy_config *c, double cost_s, double *lo_out)
{
	double lo = 2.0 * c->in.interval_s, s = POLICY_AUTO_COOLDOWN_K * cost_s;

	if (lo < POLICY_AUTO_COOLDOWN_MIN_S)
		lo = POLICY_AUTO_COOLDOWN_MIN_S;
	if (lo > POLICY_AUTO_COOLDOWN_MAX_S)
		lo = POLICY_AUTO_COOLDOWN_MAX_S;
	if (lo_out)
		*lo_out = lo;
	if (!(s >= lo))
		s = lo;
	return s > POLICY_AUTO_COOLDOWN_MAX_S ? POLICY_AUTO_COOLDOWN_MAX_S : s;
}

int64_t policy_move_cooldown(const struct policy_config *c, uint64_t migrate_bytes, char *why, size_t whysz)
{
	const struct policy_mover_in *in = &c->in;
	double lo, t, s;

	if (!c->cooldown_auto || !(in->interval_s > 0)) {
		if (why)
			snprintf(why, whysz, "cooldown %.0f s", (double)c->cooldown_ns / 1e9);
		return c->cooldown_ns;
	}
	if (migrate_bytes >= MIB && !(in->rate_mibs > 0)) {
		if (why)
			snprintf(why, whysz, "auto cool-down %.0f s: %.0f MiB to migrate, the mover's rate not "
				 "measured yet", POLICY_AUTO_COOLDOWN_MAX_S, (double)migrate_bytes / (double)MIB);
		return (int64_t)(POLICY_AUTO_COOLDOWN_MAX_S * 1e9);
	}
	t = in->rate_mibs > 0 ? (double)migrate_bytes / (double)MIB / in->rate_mibs : 0.0;
	s = auto_cooldown_s(c, t, &lo);
	if (why)
		snprintf(why, whysz, "auto cool-down %.0f s = %.0f x %.1f s to migrate %.0f MiB at %.0f MiB/s "
			 "measured, within %.0f..%.0f s", s, POLICY_AUTO_COOLDOWN_K, t, (double)migrate_bytes / (double)MIB,
			 in->rate_mibs, lo, POLICY_AUTO_COOLDOWN_MAX_S);
	return (int64_t)(s * 1e9);
}

int64_t policy_job_cooldown(const struct policy_config *c, double job_s)
{
	if (!c->cooldown_auto || !(c->in.interval_s > 0))
		return c->cooldown_ns;
	return (int64_t)(auto_cooldown_s(c, job_s, NULL) * 1e9);
}

int64_t policy_guest_cooldown(const struct policy_config *c, int64_t cooldown_ns)
{
	return c->cooldown_auto && cooldown_ns > 0 ? cooldown_ns : c->cooldown_ns;
}

int64_t policy_record_hold(const struct policy_config *c)
{
	return c->cooldown_auto ? (int64_t)(POLICY_AUTO_COOLDOWN_MAX_S * 1e9) : c->cooldown_ns;
}
