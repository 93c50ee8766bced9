/* utf8.h — the one UTF-8 decoder: well-formed sequences for URL and JSON
 * validation, and escaping of what a terminal or a log reader must not
 * get raw (names from the host reach both). */
#ifndef NUMAORCH_UTF8_H
#define NUMAORCH_UTF8_H

#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 sequence at S, at most LEFT
 * bytes long; 0 if there is none (stray continuation byte, overlong,
 * surrogate, truncated, beyond U+10FFFF). */
size_t utf8_seq(const char *s, size_t left);

/* Copy NUL-terminated IN to OUT (OUTSZ bytes, always terminated), each
 * C0 control, DEL, C1 control (U+0080..U+009F, which terminals obey like
 * ESC [) and byte that is not UTF-8 written as \xNN. Stops before a
 * character that would not fit. Returns the length written. OUTSZ of
 * 4 * strlen(IN) + 1 always holds all of it. */
size_t utf8_escape(const char *in, char *out, size_t outsz);

#endif
