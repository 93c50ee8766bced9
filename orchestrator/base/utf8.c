#include "orchestrator/base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

size_t utf8_seq(const char *s, size_t left)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned c, need;
	uint32_t cp;

	if (!left)
		return 0;
	c = *p;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (left <= need)
		return 0;
	for (unsigned i = 1; i <= need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

/* C0 controls, DEL, C1 controls, and bytes that are not UTF-8 (N == 0). */
static int needs_escape(const unsigned char *s, size_t n)
{
	return n == 0 || (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

size_t utf8_escape(const char *in, char *out, size_t outsz)
{
	size_t o = 0, left = strlen(in);

	if (!outsz)
		return 0;
	while (left) {
		size_t n = utf8_seq(in, left);

		if (needs_escape((const unsigned char *)in, n)) {
			/* One byte at a time: what follows may be fine. */
			if (o + 4 >= outsz)
				break;
			snprintf(out + o, outsz - o, "\\x%02x", (unsigned char)in[0]);
			o += 4;
			in++;
			left--;
			continue;
		}
		if (o + n >= outsz)
			break;
		memcpy(out + o, in, n);
		o += n;
		in += n;
		left -= n;
	}
	out[o] = '\0';
	return o;
}
