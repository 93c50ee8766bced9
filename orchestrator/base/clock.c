/* clock.c — the clocks, in nanoseconds. */
#include "orchestrator/base/clock.h"

#include <time.h>

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t clock_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
int64_t clock_real_ns(void) { return clock_ns(CLOCK_REALTIME); }
int64_t clock_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
