/* urlq.h — strict parsing of an HTTP request-target (RFC 3986): the
 * path split into decoded segments, the query into decoded key/value
 * pairs. Pure; no I/O.
 *
 * Strict on purpose: a raw byte outside what RFC 3986 allows in a path
 * or query, a malformed %-escape, an escaped NUL or control character,
 * or a component that is not UTF-8 after decoding is an error rather
 * than something to guess about. Guest ids are then checked again by
 * their own rule (snap_id_valid) before any use.
 *
 * Why not libmicrohttpd's own parse (MHD_lookup_connection_value and
 * MHD_get_connection_values on MHD_GET_ARGUMENT_KIND): it decodes the
 * path as one string before any split, so "a%2Fb" becomes two segments
 * and "ab%00cd" is cut at the NUL; it passes a malformed escape ("%zz",
 * "%4", "%") through as text, so a caller can no longer tell it from an
 * escaped '%'; it lets NUL, control characters and bytes that are not
 * UTF-8 into keys and values, and raw spaces, '#' and non-ASCII into the
 * path; it keeps both copies of a repeated key and lookup answers with
 * the first; "?since" has a NULL value. Refusing all of that needs the
 * raw text, and the decoding is the same loop as the checking, so the
 * server keeps MHD's copy undecoded (httpd.c's unescape callback) and
 * reads the raw target here. It also keeps api_handle independent of the
 * HTTP library: the unit tests and the fuzz target hand it a bare target.
 */
#ifndef NUMAORCH_URLQ_H
#define NUMAORCH_URLQ_H

#include <stdbool.h>
#include <stddef.h>

#define URLQ_MAX_SEGS 8
#define URLQ_MAX_PARAMS 16
#define URLQ_MAX_LEN 2048   /* of a whole request-target */

struct urlq_param {
	char *key;
	char *val;    /* "" for "?key" */
};

struct urlq {
	unsigned nr_segs;
	char *segs[URLQ_MAX_SEGS];  /* decoded path segments */
	unsigned nr_params;
	struct urlq_param params[URLQ_MAX_PARAMS];
};

/* Parse TARGET ("/v1/guests/x?kind=vm"). Returns 0; -EINVAL when it is
 * malformed (*WHY says how, a static string); -ENOENT when it is well
 * formed but cannot name any resource here (not absolute, empty segment
 * as in "//" or a trailing "/", too many segments); -E2BIG when too long
 * or with too many parameters. OUT is filled only on success; release
 * it with urlq_clear. */
int urlq_parse(const char *target, struct urlq *out, const char **why);
void urlq_clear(struct urlq *q);

/* Decode %XX escapes (and '+' as space when PLUS_SPACE) of S[0..LEN).
 * Rejects bad escapes, NUL, control characters and invalid UTF-8.
 * *OUT is malloc'd. */
int urlq_decode(const char *s, size_t len, bool plus_space, char **out);

/* true if S[0..LEN) is well-formed UTF-8 (no overlongs, no surrogates). */
bool urlq_utf8_valid(const char *s, size_t len);
/* (One UTF-8 sequence: utf8_seq in orchestrator/base/utf8.h.) */

/* The value of parameter KEY, or NULL. */
const char *urlq_get(const struct urlq *q, const char *key);

#endif
