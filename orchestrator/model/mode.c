/* mode.c — the agent modes' names (one table: strtab.h). */
#include "orchestrator/model/mode.h"

#include "orchestrator/base/strtab.h"

static const char *const mode_names[] = {
	[MODE_ENFORCE] = "enforce",
	[MODE_ADVISE] = "advise",
	[MODE_OFF] = "off",
};
STRTAB_NAME(agent_mode_name, enum agent_mode, mode_names)
STRTAB_PARSE(agent_mode_parse, enum agent_mode, mode_names)
