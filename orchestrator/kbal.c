#include "kbal.h"

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

const char *kbal_setting_name(enum kbal_setting s)
{
	if ((unsigned)s >= sizeof(setting_names) / sizeof(setting_names[0]))
		return NULL;
	return setting_names[s];
}

int kbal_setting_parse(const char *s, enum kbal_setting *out)
{
	for (unsigned i = 0; s && i < sizeof(setting_names) / sizeof(setting_names[0]); i++)
		if (strcmp(s, setting_names[i]) == 0) {
			*out = (enum kbal_setting)i;
			return 0;
		}
	return -EINVAL;
}

const char *kbal_action_name(enum kbal_action a)
{
	if ((unsigned)a >= sizeof(action_names) / sizeof(action_names[0]))
		return NULL;
	return action_names[a];
}

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
