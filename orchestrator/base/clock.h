/* clock.h — monotonic and realtime clocks in nanoseconds. Only the engine,
 * the sources and the applier read clocks; policies get times from the
 * snapshot (make check-layers fails if a policies/ object needs these). */
#ifndef NUMAORCH_CLOCK_H
#define NUMAORCH_CLOCK_H

#include <stdint.h>

int64_t clock_mono_ns(void);
int64_t clock_real_ns(void);
/* CPU time the calling thread has used. */
int64_t clock_thread_cpu_ns(void);

#endif
