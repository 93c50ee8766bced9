/* procstat.h — fields of a /proc/PID/stat (or task/TID/stat) line, from
 * text already read (no I/O). */
#ifndef NUMAORCH_PROCSTAT_H
#define NUMAORCH_PROCSTAT_H

#include <stdint.h>

/* The first NF fields of a /proc/PID/stat line after the command name
 * (which may hold spaces and parentheses: counted from the last ')'):
 * F[0] is field 3 (state), so field k is F[k - 3]. 0, or -EINVAL if the
 * line has fewer. */
int proc_stat_fields(const char *stat, const char **f, unsigned nf);
/* utime + stime (fields 14 and 15, clock ticks) and the CPU it last ran
 * on (field 39) of a /proc/PID/stat or /proc/PID/task/TID/stat text,
 * without sscanf: it runs for every thread of every guest spread over
 * several nodes, every cycle. 0 or -EINVAL. */
int proc_stat_ticks_cpu(const char *stat, uint64_t *ticks, int *cpu);

#endif
