#include "numamaps.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Does the line L..EOL hold TOKEN (" anon=", " file=")? */
static bool has_token(const char *l, const char *eol, const char *token)
{
	const char *t = strstr(l, token);

	return t && t < eol;
}

static void parse(const char *text, uint64_t *bytes, unsigned nids, bool anon_only)
{
	for (const char *l = text; *l;) {
		const char *eol = strchr(l, '\n'), *k;
		uint64_t page = 4096;

		if (!eol)
			eol = l + strlen(l);
		if (anon_only && (!has_token(l, eol, " anon=") || has_token(l, eol, " file="))) {
			l = *eol ? eol + 1 : eol;
			continue;
		}
		/* The page size comes last on the line: find it first. */
		k = strstr(l, " kernelpagesize_kB=");
		if (k && k < eol) {
			unsigned long long kb = strtoull(k + 19, NULL, 10);

			if (kb)
				page = kb * 1024;
		}
		for (const char *t = l; t < eol;) {
			const char *e = memchr(t, ' ', (size_t)(eol - t));
			unsigned long long id, v;
			char *end;

			if (!e)
				e = eol;
			if (t[0] == 'N' && t[1] >= '0' && t[1] <= '9') {
				errno = 0;
				id = strtoull(t + 1, &end, 10);
				if (!errno && *end == '=' && end[1] >= '0' && end[1] <= '9') {
					v = strtoull(end + 1, &end, 10);
					if (!errno && end == e && id < nids)
						bytes[id] += (uint64_t)v * page;
				}
			}
			t = e + 1;
		}
		l = *eol ? eol + 1 : eol;
	}
}

void numamaps_parse(const char *text, uint64_t *bytes, unsigned nids)
{
	parse(text, bytes, nids, false);
}

void numamaps_parse_anon(const char *text, uint64_t *bytes, unsigned nids)
{
	parse(text, bytes, nids, true);
}
