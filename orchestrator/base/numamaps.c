#include "orchestrator/base/numamaps.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Where the line L..EOL holds TOKEN (" anon=", " file="), or NULL. Bounded by the
 * line: strstr(3) on a line without the token searched on through the
 * rest of the file. */
static const char *find_token(const char *l, const char *eol, const char *token)
{
	return memmem(l, (size_t)(eol - l), token, strlen(token));
}

void numamaps_line(const char *l, struct numamaps_line *ln)
{
	const char *eol = strchr(l, '\n'), *k;
	char *end;

	if (!eol)
		eol = l + strlen(l);
	ln->next = *eol ? eol + 1 : NULL;
	ln->cur = l;
	ln->eol = eol;
	ln->anon = find_token(l, eol, " anon=") && !find_token(l, eol, " file=");
	k = find_token(l, eol, " huge");
	ln->huge = k && (k + 5 == eol || k[5] == ' ');
	ln->page = 4096;
	/* The page size comes last on the line: find it first. */
	k = find_token(l, eol, " kernelpagesize_kB=");
	if (k) {
		unsigned long long kb = strtoull(k + 19, NULL, 10);

		if (kb)
			ln->page = kb * 1024;
	}
	errno = 0;
	ln->start = (uintptr_t)strtoull(l, &end, 16);
	ln->has_start = isxdigit((unsigned char)*l) && !errno && end <= eol && (end == eol || *end == ' ');
}

bool numamaps_node(struct numamaps_line *ln, unsigned long long *id, uint64_t *pages)
{
	while (ln->cur < ln->eol) {
		const char *t = ln->cur, *e = memchr(t, ' ', (size_t)(ln->eol - t));
		unsigned long long n, v;
		char *end;

		if (!e)
			e = ln->eol;
		ln->cur = e < ln->eol ? e + 1 : ln->eol;
		if (t[0] != 'N' || t[1] < '0' || t[1] > '9')
			continue;
		errno = 0;
		n = strtoull(t + 1, &end, 10);
		if (errno || *end != '=' || end[1] < '0' || end[1] > '9')
			continue;
		v = strtoull(end + 1, &end, 10);
		if (errno || end != e)
			continue;
		*id = n;
		*pages = (uint64_t)v;
		return true;
	}
	return false;
}

static void parse(const char *text, uint64_t *bytes, unsigned nids, bool anon_only, uint64_t huge_page)
{
	struct numamaps_line ln;

	for (const char *l = text; l && *l; l = ln.next) {
		unsigned long long id;
		uint64_t pages;

		numamaps_line(l, &ln);
		if ((anon_only && !ln.anon) || (huge_page && (!ln.huge || ln.page != huge_page)))
			continue;
		while (numamaps_node(&ln, &id, &pages))
			if (id < nids)
				bytes[id] += pages * ln.page;
	}
}

void numamaps_parse(const char *text, uint64_t *bytes, unsigned nids)
{
	parse(text, bytes, nids, false, 0);
}

void numamaps_parse_anon(const char *text, uint64_t *bytes, unsigned nids)
{
	parse(text, bytes, nids, true, 0);
}

void numamaps_parse_huge(const char *text, uint64_t page, uint64_t *bytes, unsigned nids)
{
	if (page)
		parse(text, bytes, nids, false, page);
}
