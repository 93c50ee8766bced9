#include "numamaps.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Where the line L..EOL holds TOKEN (" anon=", " file="), or NULL.
 * Bounded by the line: strstr(3) on a line without the token searched on
 * through the rest of the file. */
static const char *find_token(const char *l, const char *eol, const char *token)
{
	size_t n = strlen(token);

	for (const char *t = l; (size_t)(eol - t) >= n; t++) {
		t = memchr(t, token[0], (size_t)(eol - t) - n + 1);
		if (!t)
			return NULL;
		if (memcmp(t, token, n) == 0)
			return t;
	}
	return NULL;
}

static bool has_token(const char *l, const char *eol, const char *token)
{
	return find_token(l, eol, token) != NULL;
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
		k = find_token(l, eol, " kernelpagesize_kB=");
		if (k) {
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
