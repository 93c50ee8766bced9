/* mode.h — what the agent does with its decisions. Its own header so that
 * the configuration (config.h) and the schedule's windows (schedule.h),
 * which both carry a mode, see the same enum without including each
 * other.
 */
#ifndef NUMAORCH_MODE_H
#define NUMAORCH_MODE_H

enum agent_mode {
	MODE_ENFORCE = 0, /* decide and move */
	MODE_ADVISE,      /* decide and record, move nothing */
	MODE_OFF,         /* observe and report only */
};

const char *agent_mode_name(enum agent_mode m);
/* 0, or -EINVAL if S names no mode (*OUT untouched). */
int agent_mode_parse(const char *s, enum agent_mode *out);

#endif
