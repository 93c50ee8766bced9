/* mode.c — the agent modes' names. */
#include "mode.h"

#include <errno.h>
#include <string.h>

const char *agent_mode_name(enum agent_mode m)
{
	switch (m) {
	case MODE_ADVISE: return "advise";
	case MODE_OFF: return "off";
	default: return "enforce";
	}
}

int agent_mode_parse(const char *s, enum agent_mode *out)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "enforce") == 0)
		*out = MODE_ENFORCE;
	else if (strcmp(s, "advise") == 0)
		*out = MODE_ADVISE;
	else if (strcmp(s, "off") == 0)
		*out = MODE_OFF;
	else
		return -EINVAL;
	return 0;
}
