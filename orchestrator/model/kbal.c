#include "orchestrator/model/kbal.h"
#include "orchestrator/base/strtab.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

static const char *const setting_names[] = {
	[KBAL_AUTO] = "auto",
	[KBAL_DEFER] = "defer",
	[KBAL_MIGRATE] = "migrate",
};

static const char *const action_names[] = {
	[KBAL_ACT_MIGRATE] = "migrate",
	[KBAL_ACT_DEFER] = "defer",
};

STRTAB_NAME(kbal_setting_name, enum kbal_setting, setting_names)
STRTAB_PARSE(kbal_setting_parse, enum kbal_setting, setting_names)

STRTAB_NAME(kbal_action_name, enum kbal_action, action_names)

bool kbal_kernel_moves(int balancing)
{
	return balancing > 0 && (balancing & 1);
}

enum kbal_action kbal_decide(enum kbal_setting s, int balancing, bool strict, double cpu_use)
{
	if (!kbal_kernel_moves(balancing) || strict)
		return KBAL_ACT_MIGRATE;
	switch (s) {
	case KBAL_DEFER:
		return KBAL_ACT_DEFER;
	case KBAL_AUTO:
		return !isnan(cpu_use) && cpu_use >= KBAL_BUSY_CPUS ? KBAL_ACT_DEFER : KBAL_ACT_MIGRATE;
	default:
		return KBAL_ACT_MIGRATE;
	}
}

enum kbal_action kbal_decide_flow(enum kbal_setting s, int balancing, bool strict, double cpu_use,
				  enum kbal_flow flow)
{
	if (s == KBAL_AUTO && flow == KBAL_FLOW_SHORT)
		return KBAL_ACT_MIGRATE;
	return kbal_decide(s, balancing, strict, cpu_use);
}
