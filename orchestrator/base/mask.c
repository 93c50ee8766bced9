#include "orchestrator/base/mask.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_num(const char **sp, unsigned *out)
{
	const char *s = *sp;
	unsigned long v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > 0xffffff)
			return -ERANGE;
		s++;
	}
	*sp = s;
	*out = (unsigned)v;
	return 0;
}

int mask_parse_list(const char *s, uint64_t *w, unsigned nbits)
{
	uint64_t tmp[MASK_MAX_CPUS / 64];
	unsigned nwords = nbits / 64;
	int r;

	if (!s || nbits > MASK_MAX_CPUS)
		return -EINVAL;
	memset(tmp, 0, sizeof(tmp));
	while (*s == ' ' || *s == '\t')
		s++;
	while (*s && *s != '\n') {
		unsigned a, b;

		r = parse_num(&s, &a);
		if (r < 0)
			return r;
		b = a;
		if (*s == '-') {
			s++;
			r = parse_num(&s, &b);
			if (r < 0)
				return r;
			if (b < a)
				return -EINVAL;
		}
		/* The kernel also accepts "a-b:used/group"; cpuset and sysfs
		 * files never print that form, so it is rejected as malformed. */
		if (b >= nbits)
			return -E2BIG;
		for (unsigned i = a; i <= b; i++)
			tmp[i / 64] |= 1ULL << (i % 64);
		if (*s == ',') {
			s++;
			if (!*s || *s == '\n')
				return -EINVAL;
		} else if (*s && *s != '\n') {
			return -EINVAL;
		}
	}
	if (*s == '\n' && s[1] != '\0')
		return -EINVAL;
	memcpy(w, tmp, nwords * sizeof(uint64_t));
	return 0;
}

int mask_format_list(const uint64_t *w, unsigned nbits, char *buf, size_t bufsz)
{
	size_t off = 0;
	int b = mask_first(w, nbits);

	if (bufsz == 0)
		return -ENOSPC;
	buf[0] = '\0';
	while (b >= 0) {
		int start = b, end = b, n;

		while ((b = mask_next(w, nbits, end)) == end + 1)
			end = b;
		if (start == end)
			n = snprintf(buf + off, bufsz - off, "%s%d", off ? "," : "", start);
		else
			n = snprintf(buf + off, bufsz - off, "%s%d-%d", off ? "," : "", start, end);
		if (n < 0 || (size_t)n >= bufsz - off) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		off += (size_t)n;
	}
	return 0;
}

unsigned mask_weight(const uint64_t *w, unsigned nwords)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nwords; i++)
		n += (unsigned)__builtin_popcountll(w[i]);
	return n;
}

int mask_next(const uint64_t *w, unsigned nbits, int prev)
{
	unsigned b = (unsigned)(prev + 1);

	while (b < nbits) {
		uint64_t word = w[b / 64] >> (b % 64);

		if (word)
			return (int)(b + (unsigned)__builtin_ctzll(word));
		b = (b / 64 + 1) * 64;
	}
	return -1;
}

int mask_first(const uint64_t *w, unsigned nbits)
{
	return mask_next(w, nbits, -1);
}

bool mask_subset_words(const uint64_t *a, const uint64_t *b, unsigned nwords)
{
	for (unsigned i = 0; i < nwords; i++)
		if (a[i] & ~b[i])
			return false;
	return true;
}

bool mask_intersects_words(const uint64_t *a, const uint64_t *b, unsigned nwords)
{
	for (unsigned i = 0; i < nwords; i++)
		if (a[i] & b[i])
			return true;
	return false;
}
