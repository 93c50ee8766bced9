/* strtab.h — enum names from one table (systemd's string-table.h).
 *
 * Each enum with names has one table, indexed by value:
 *     static const char *const mode_names[] = { [MODE_ENFORCE] = "enforce", ... };
 *     STRTAB_NAME(agent_mode_name, enum agent_mode, mode_names)
 *     STRTAB_PARSE(agent_mode_parse, enum agent_mode, mode_names)
 * which define
 *     const char *agent_mode_name(enum agent_mode v);  the name, NULL out of range
 *     int agent_mode_parse(const char *s, enum agent_mode *out);  0, or -EINVAL
 *                                        (NULL, unknown; *OUT untouched)
 * so the two directions cannot disagree. Header-only and pure (policies/
 * may use it: nothing but strcmp).
 */
#ifndef NUMAORCH_STRTAB_H
#define NUMAORCH_STRTAB_H

#include <errno.h>
#include <stddef.h>
#include <strings.h>
#include <string.h>

#define STRTAB_ELEMS(t) (sizeof(t) / sizeof((t)[0]))

/* T[V], NULL if V is out of range or has no name. */
static inline const char *strtab_name(const char *const *t, size_t n, long v)
{
	return v >= 0 && (size_t)v < n ? t[v] : NULL;
}

/* The index of S in T (exact, or ignoring case when ICASE), -EINVAL. */
static inline int strtab_index(const char *const *t, size_t n, const char *s, int icase)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (t[i] && (icase ? strcasecmp(s, t[i]) : strcmp(s, t[i])) == 0)
			return (int)i;
	return -EINVAL;
}

#define STRTAB_NAME(fn, type, table)                                                   \
	const char *fn(type v)                                                         \
	{                                                                              \
		return strtab_name(table, STRTAB_ELEMS(table), (long)v);               \
	}

#define STRTAB_PARSE_ICASE_(fn, type, table, icase)                                    \
	int fn(const char *s, type *out)                                               \
	{                                                                              \
		int i_ = strtab_index(table, STRTAB_ELEMS(table), s, icase);           \
		if (i_ < 0)                                                            \
			return i_;                                                     \
		*out = (type)i_;                                                       \
		return 0;                                                              \
	}
#define STRTAB_PARSE(fn, type, table) STRTAB_PARSE_ICASE_(fn, type, table, 0)
#define STRTAB_PARSE_ICASE(fn, type, table) STRTAB_PARSE_ICASE_(fn, type, table, 1)

#endif
