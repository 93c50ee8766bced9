/* engine_conf.c — the settings in force: the configuration as given
 * (base) and the [schedule] windows active now applied to it (cfg), and
 * the mover's settings in them. */
#include "orchestrator/engine/engine_conf.h"

#include <time.h>

#include "orchestrator/base/log.h"

void engine_conf_init(struct engine_conf *c, const struct agent_config *cfg)
{
	config_copy(&c->cfg, cfg);
	config_copy(&c->base, cfg);
}

void engine_conf_clear(struct engine_conf *c)
{
	config_clear(&c->cfg);
	config_clear(&c->base);
}

void engine_conf_set_base(struct engine_conf *c, const struct agent_config *cfg)
{
	config_clear(&c->base);
	config_copy(&c->base, cfg);
	c->sched_valid = false;
}

void engine_conf_tell(struct engine_conf *c, bool mover_on, double rate_mibs)
{
	c->cfg.policy.in = (struct policy_mover_in){
		.interval_s = c->cfg.interval_s, .workers = c->cfg.mover_workers, .rate_mibs = rate_mibs,
		.rate_cap_mibs = mover_on ? c->cfg.mover_rate_mib : 0,
	};
}

struct mover_config engine_mover_config(const struct agent_config *cfg)
{
	return (struct mover_config){ .workers = cfg->mover_workers, .rate_mib = cfg->mover_rate_mib,
				      .chunk_ms = cfg->mover_chunk_ms, .job_timeout_s = cfg->mover_job_timeout_s,
				      .on_target = cfg->mover_on_target };
}

bool engine_mover_settings_differ(const struct agent_config *a, const struct agent_config *b)
{
	struct mover_config x = engine_mover_config(a), y = engine_mover_config(b);

	return a->mover != b->mover || x.workers != y.workers || x.rate_mib != y.rate_mib ||
	       x.chunk_ms != y.chunk_ms || x.job_timeout_s != y.job_timeout_s || x.on_target != y.on_target;
}

/* Log windows opening and closing. Cheap when nothing changed. */
void engine_apply_schedule(struct engine_conf *c, struct mover *mover, bool mover_on)
{
	time_t t = time(NULL);
	struct policy_mover_in told;
	struct sched_values v;
	uint64_t active;
	struct tm tm;

	localtime_r(&t, &tm);
	sched_effective(&c->base.schedule, tm.tm_wday, tm.tm_hour * 60 + tm.tm_min, &v, &active);
	if (c->sched_valid && active == c->sched_active)
		return;
	for (unsigned i = 0; i < c->base.schedule.n && i < 64; i++) {
		bool was = c->sched_valid && (c->sched_active >> i & 1), is = active >> i & 1;

		if (was != is)
			log_info("schedule: window \"%s\" %s", c->base.schedule.e[i].text,
				 is ? "opens" : "closes");
	}
	told = c->cfg.policy.in;
	config_clear(&c->cfg);
	config_copy(&c->cfg, &c->base);
	/* what the last cycle told stands until the next tells again */
	c->cfg.policy.in = told;
	if (v.set & SCHED_MODE)
		c->cfg.mode = v.mode;
	if (v.set & SCHED_INTERVAL)
		c->cfg.interval_s = v.interval_s;
	/* a window's number holds as the file's would; its auto sizes */
	if (v.set & SCHED_MAX_MOVES) {
		c->cfg.policy.max_moves_auto = v.max_moves == SCHED_AUTO_MOVES;
		if (v.max_moves != SCHED_AUTO_MOVES)
			c->cfg.policy.max_moves = v.max_moves;
	}
	if (v.set & SCHED_MAX_MIGRATE) {
		c->cfg.policy.max_migrate_auto = v.max_migrate_bytes == SCHED_AUTO_MIGRATE;
		if (v.max_migrate_bytes != SCHED_AUTO_MIGRATE)
			c->cfg.policy.max_migrate_bytes = v.max_migrate_bytes;
	}
	if (v.set & SCHED_COOLDOWN) {
		c->cfg.policy.cooldown_auto = v.cooldown_ns == SCHED_AUTO_COOLDOWN;
		if (v.cooldown_ns != SCHED_AUTO_COOLDOWN)
			c->cfg.policy.cooldown_ns = v.cooldown_ns;
	}
	if (v.set & SCHED_RATE)
		c->cfg.mover_rate_mib = v.rate_mib;
	/* The rate budget refines the per-cycle cap: planning more than the
	 * mover may move in an interval only queues jobs the next plans
	 * supersede. */
	if (mover_on && c->cfg.mover_rate_mib > 0) {
		double budget = c->cfg.mover_rate_mib * c->cfg.interval_s * 1048576.0;

		if (budget < (double)c->cfg.policy.max_migrate_bytes)
			c->cfg.policy.max_migrate_bytes = (uint64_t)budget;
	}
	if (mover_on) {
		struct mover_config mc = engine_mover_config(&c->cfg);

		mover_set_config(mover, &mc);
		if (c->rate_known && c->sched_rate_mib != c->cfg.mover_rate_mib) {
			if (c->cfg.mover_rate_mib > 0)
				log_info("memory mover: at most %.0f MiB/s for the whole host now",
					 c->cfg.mover_rate_mib);
			else
				log_info("memory mover: no rate limit now");
		}
	}
	c->sched_rate_mib = c->cfg.mover_rate_mib;
	c->rate_known = true;
	c->sched_active = active;
	c->sched_valid = true;
}
