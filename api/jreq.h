/* jreq.h — strict reading of JSON request bodies (jansson): one object,
 * no duplicate or unknown keys, each value of the expected type and range.
 * Every error names the field it is about, so the API can answer
 * "max_util: must be a number 1..100 (percent), got 150". Pure.
 */
#ifndef NUMAORCH_JREQ_H
#define NUMAORCH_JREQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jreq_err {
	char field[64];   /* "" when about the body as a whole */
	char msg[320];    /* starts with the field's name */
	bool unknown;     /* the field is not one the request takes */
};

/* Parse BODY[0..LEN) as one JSON object. -EINVAL with ERR filled. */
int jreq_parse_object(const char *body, size_t len, json_t **out, struct jreq_err *err);

/* -EINVAL if O has a key not in ALLOWED (NULL-terminated). */
int jreq_only(json_t *o, const char *const *allowed, struct jreq_err *err);

/* Getters: 1 when KEY is present and valid (*OUT written), 0 when absent
 * (a JSON null counts as absent nowhere: it is the wrong type), -EINVAL
 * with ERR filled otherwise. UNIT (may be NULL) is shown in messages. */
int jreq_bool(json_t *o, const char *key, bool *out, struct jreq_err *err);
int jreq_number(json_t *o, const char *key, double lo, double hi, const char *unit, double *out,
		struct jreq_err *err);
int jreq_int(json_t *o, const char *key, int64_t lo, int64_t hi, const char *unit, int64_t *out,
	     struct jreq_err *err);
/* A string of 1..MAXLEN bytes without control characters. */
int jreq_string(json_t *o, const char *key, size_t maxlen, const char **out, struct jreq_err *err);

/* Fill ERR for FIELD with a printf message (prefixed "FIELD: "). */
void jreq_fail(struct jreq_err *err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* V as short JSON text for messages ("150", "\"x\"", "[...]"). */
void jreq_show(json_t *v, char *buf, size_t sz);

#endif
