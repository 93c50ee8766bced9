/* procstat.c — fields of a /proc/PID/stat line, parsed from text. */
#include "orchestrator/base/procstat.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Fields of /proc/PID/stat after the command name: [0] is field 3
 * (state), so field k is [k - 3]. */
int proc_stat_fields(const char *s, const char **f, unsigned nf)
{
	const char *p = strrchr(s, ')');
	unsigned i = 0;

	if (!p)
		return -EINVAL;
	p++;
	while (*p && i < nf) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		f[i++] = p;
		while (*p && *p != ' ')
			p++;
	}
	return i == nf ? 0 : -EINVAL;
}

/* A /proc/PID/stat field at P: decimal digits up to the next blank
 * (parse_u64 wants the whole string to be the number). */
static int field_u64(const char *p, uint64_t *v)
{
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9')
		x = x * 10 + (uint64_t)(*p++ - '0');
	*v = x;
	return 0;
}

int proc_stat_ticks_cpu(const char *s, uint64_t *ticks, int *cpu)
{
	const char *f[37];
	uint64_t ut, st, c;

	/* Fields 14, 15 and 39 are f[11], f[12] and f[36]. */
	if (proc_stat_fields(s, f, 37) < 0 || field_u64(f[11], &ut) < 0 || field_u64(f[12], &st) < 0 ||
	    field_u64(f[36], &c) < 0 || c > INT32_MAX)
		return -EINVAL;
	*ticks = ut + st;
	*cpu = (int)c;
	return 0;
}
