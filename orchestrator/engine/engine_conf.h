/* engine_conf.h — the settings in force (engine_conf.c): the
 * configuration as given and the [schedule] windows applied to it.
 * A leaf: calls no other engine file. */
#ifndef NUMAORCH_ENGINE_CONF_H
#define NUMAORCH_ENGINE_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "orchestrator/mover/mover.h"
#include "orchestrator/store/config.h"

/* Written by engine_conf.c alone. CFG is read by every engine file (the
 * settings each step works under; a getter per setting would be noise);
 * BASE and SCHED_ACTIVE by engine.c and engine_view.c. */
struct engine_conf {
	/* base: the configuration as given (file, command line, PUT /v1/policy);
	 * cfg: base with the [schedule] windows active now applied — what
	 * every cycle uses. */
	struct agent_config base;
	struct agent_config cfg;
	uint64_t sched_active;
	bool sched_valid;
	double sched_rate_mib;       /* the mover's rate in force (logged on change) */
	bool rate_known;
};

void engine_conf_init(struct engine_conf *c, const struct agent_config *cfg);
void engine_conf_clear(struct engine_conf *c);
/* A new base configuration (a reload, a PUT): the schedule is applied to
 * it afresh by the next engine_apply_schedule. */
void engine_conf_set_base(struct engine_conf *c, const struct agent_config *cfg);
/* Recompute the settings in force (c->cfg) from c->base and the schedule
 * windows active at this local time; the mover MOVER (NULL: none) takes
 * its rate from them when MOVER_ON. */
void engine_apply_schedule(struct engine_conf *c, struct mover *mover, bool mover_on);
/* Tell the policy settings in force (c->cfg.policy.in) what their auto
 * budgets and cool-downs are sized from: the interval and workers in
 * force, the mover's measured MiB/s RATE_MIBS (0: not yet) and, when
 * MOVER_ON, its rate budget. Before each decision. */
void engine_conf_tell(struct engine_conf *c, bool mover_on, double rate_mibs);
/* The mover's settings in CFG. */
struct mover_config engine_mover_config(const struct agent_config *cfg);
/* The memory mover's settings differ between A and B (on/off, workers,
 * rate, chunk, job timeout, placement): a reload to B must stop its jobs. */
bool engine_mover_settings_differ(const struct agent_config *a, const struct agent_config *b);

#endif
