#include "urlq.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/utf8.h"

bool urlq_utf8_valid(const char *s, size_t len)
{
	while (len) {
		size_t n = utf8_seq(s, len);

		if (!n)
			return false;
		s += n;
		len -= n;
	}
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int urlq_decode(const char *s, size_t len, bool plus_space, char **out)
{
	char *d = xmalloc(len + 1);
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				goto bad;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (c < 0x20 || c == 0x7f)
			goto bad;
		d[n++] = (char)c;
	}
	d[n] = '\0';
	if (!urlq_utf8_valid(d, n))
		goto bad;
	*out = d;
	return 0;
bad:
	free(d);
	return -EINVAL;
}

/* RFC 3986 pchar without '%' (checked separately) and '/'. */
static bool pchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("-._~!$&'()*+,;=:@", c);
}

void urlq_clear(struct urlq *q)
{
	for (unsigned i = 0; i < q->nr_segs; i++)
		free(q->segs[i]);
	for (unsigned i = 0; i < q->nr_params; i++) {
		free(q->params[i].key);
		free(q->params[i].val);
	}
	memset(q, 0, sizeof(*q));
}

static int parse_query(const char *s, struct urlq *q, const char **why)
{
	while (*s) {
		const char *amp = strchr(s, '&'), *eq;
		size_t len = amp ? (size_t)(amp - s) : strlen(s);
		struct urlq_param *p;

		if (len == 0) { /* "a=1&&b=2", a trailing '&': harmless */
			s += amp ? 1 : 0;
			continue;
		}
		if (q->nr_params == URLQ_MAX_PARAMS) {
			*why = "too many query parameters";
			return -E2BIG;
		}
		eq = memchr(s, '=', len);
		p = &q->params[q->nr_params];
		if (urlq_decode(s, eq ? (size_t)(eq - s) : len, true, &p->key) < 0) {
			*why = "malformed query parameter name";
			return -EINVAL;
		}
		if (urlq_decode(eq ? eq + 1 : s + len, eq ? len - (size_t)(eq - s) - 1 : 0, true, &p->val) < 0) {
			free(p->key);
			*why = "malformed query parameter value";
			return -EINVAL;
		}
		q->nr_params++;
		for (unsigned i = 0; i + 1 < q->nr_params; i++)
			if (strcmp(q->params[i].key, p->key) == 0) {
				*why = "query parameter given twice";
				return -EINVAL;
			}
		s += len + (amp ? 1 : 0);
	}
	return 0;
}

int urlq_parse(const char *target, struct urlq *out, const char **why)
{
	struct urlq q;
	const char *p, *qs;
	size_t plen;
	int r;

	memset(&q, 0, sizeof(q));
	*why = NULL;
	if (!target || strlen(target) > URLQ_MAX_LEN) {
		*why = "request target too long";
		return -E2BIG;
	}
	for (p = target; *p && *p != '?' && *p != '#'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '%') {
			if (hexval(p[1]) < 0 || hexval(p[2]) < 0) {
				*why = "malformed %-escape in the path";
				return -EINVAL;
			}
		} else if (c != '/' && !pchar(c)) {
			*why = "character not allowed in a path";
			return -EINVAL;
		}
	}
	plen = (size_t)(p - target);
	qs = *p == '?' ? p + 1 : NULL;
	if (*p == '#' || (qs && strchr(qs, '#'))) {
		*why = "fragment in a request target";
		return -EINVAL;
	}
	if (qs)
		for (const char *c = qs; *c; c++) {
			if (*c == '%' ? hexval(c[1]) < 0 || hexval(c[2]) < 0 :
			    *c != '/' && *c != '?' && !pchar((unsigned char)*c)) {
				*why = "character not allowed in a query";
				return -EINVAL;
			}
		}
	if (plen == 0 || target[0] != '/')
		return -ENOENT;
	/* Split "/a/b" into "a", "b"; "/" alone is zero segments. */
	for (size_t i = 1; i <= plen && plen > 1;) {
		const char *seg = target + i, *end = memchr(seg, '/', plen - i);
		size_t slen = end ? (size_t)(end - seg) : plen - i;

		if (slen == 0 || q.nr_segs == URLQ_MAX_SEGS) {
			urlq_clear(&q);
			return -ENOENT;
		}
		r = urlq_decode(seg, slen, false, &q.segs[q.nr_segs]);
		if (r < 0) {
			urlq_clear(&q);
			*why = "path segment is not valid UTF-8 or holds a control character";
			return -EINVAL;
		}
		q.nr_segs++;
		i += slen + 1;
	}
	if (qs) {
		r = parse_query(qs, &q, why);
		if (r < 0) {
			urlq_clear(&q);
			return r;
		}
	}
	*out = q;
	return 0;
}

const char *urlq_get(const struct urlq *q, const char *key)
{
	for (unsigned i = 0; i < q->nr_params; i++)
		if (strcmp(q->params[i].key, key) == 0)
			return q->params[i].val;
	return NULL;
}
