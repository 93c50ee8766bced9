#include "jreq.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest message text after "FIELD: " (FIELD is cut at 60). */
#define JREQ_TEXT_MAX 250

void jreq_fail(struct jreq_err *err, const char *field, const char *fmt, ...)
{
	char msg[sizeof(err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err->unknown = false;
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	if (field && *field)
		snprintf(err->msg, sizeof(err->msg), "%.60s: %.*s", field, JREQ_TEXT_MAX, msg);
	else
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
}

void jreq_show(json_t *v, char *buf, size_t sz)
{
	char *s;

	if (json_is_object(v)) {
		snprintf(buf, sz, "an object");
		return;
	}
	if (json_is_array(v)) {
		snprintf(buf, sz, "an array");
		return;
	}
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!s) {
		snprintf(buf, sz, "?");
		return;
	}
	if (strlen(s) > 40)
		snprintf(buf, sz, "%.37s...", s);
	else
		snprintf(buf, sz, "%s", s);
	free(s);
}

int jreq_parse_object(const char *body, size_t len, json_t **out, struct jreq_err *err)
{
	json_error_t je;
	json_t *o;

	if (len == 0) {
		jreq_fail(err, "", "the request needs a JSON object body");
		return -EINVAL;
	}
	/* No JSON_ALLOW_NUL: an escaped NUL would cut C strings short. */
	o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		jreq_fail(err, "", "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		jreq_fail(err, "", "the body must be a JSON object");
		return -EINVAL;
	}
	*out = o;
	return 0;
}

int jreq_only(json_t *o, const char *const *allowed, struct jreq_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v) {
		bool ok = false;
		char list[sizeof(err->msg)] = "", shown[48];
		size_t n = 0, k = 0, room;

		for (unsigned i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = true;
		if (ok)
			continue;
		/* The key came from the client: show it only if it is tame. */
		for (const char *p = key; *p && k < sizeof(shown) - 4; p++)
			shown[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
		shown[k] = '\0';
		if (strlen(key) > k)
			strcat(shown, "...");
		/* Whole names only: what does not fit the message is "...", never
		 * a name cut short. */
		room = JREQ_TEXT_MAX - sizeof("unknown field (known: , ...)");
		for (unsigned i = 0; allowed[i]; i++) {
			size_t len = strlen(allowed[i]) + (i ? 2 : 0);

			if (n + len >= room) {
				snprintf(list + n, sizeof(list) - n, "%s...", i ? ", " : "");
				break;
			}
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", allowed[i]);
		}
		jreq_fail(err, shown, "unknown field (known: %s)", list);
		err->unknown = true;
		return -EINVAL;
	}
	return 0;
}

int jreq_bool(json_t *o, const char *key, bool *out, struct jreq_err *err)
{
	json_t *v = json_object_get(o, key);
	char got[64];

	if (!v)
		return 0;
	if (!json_is_boolean(v)) {
		jreq_show(v, got, sizeof(got));
		jreq_fail(err, key, "must be true or false, got %s", got);
		return -EINVAL;
	}
	*out = json_is_true(v);
	return 1;
}

static const char *unit_sfx(const char *unit, char *buf, size_t sz)
{
	if (!unit || !*unit)
		return "";
	snprintf(buf, sz, " (%s)", unit);
	return buf;
}

int jreq_number(json_t *o, const char *key, double lo, double hi, const char *unit, double *out,
		struct jreq_err *err)
{
	json_t *v = json_object_get(o, key);
	char got[64], u[48];
	double d;

	if (!v)
		return 0;
	d = json_number_value(v);
	if (!json_is_number(v) || isnan(d) || d < lo || d > hi) {
		jreq_show(v, got, sizeof(got));
		jreq_fail(err, key, "must be a number %g..%g%s, got %s", lo, hi, unit_sfx(unit, u, sizeof(u)), got);
		return -EINVAL;
	}
	*out = d;
	return 1;
}

int jreq_int(json_t *o, const char *key, int64_t lo, int64_t hi, const char *unit, int64_t *out,
	     struct jreq_err *err)
{
	json_t *v = json_object_get(o, key);
	char got[64], u[48];
	json_int_t i;

	if (!v)
		return 0;
	i = json_integer_value(v);
	if (!json_is_integer(v) || i < lo || i > hi) {
		jreq_show(v, got, sizeof(got));
		jreq_fail(err, key, "must be an integer %lld..%lld%s, got %s", (long long)lo, (long long)hi,
			  unit_sfx(unit, u, sizeof(u)), got);
		return -EINVAL;
	}
	*out = i;
	return 1;
}

int jreq_string(json_t *o, const char *key, size_t maxlen, const char **out, struct jreq_err *err)
{
	json_t *v = json_object_get(o, key);
	char got[64];
	const char *s;
	size_t len;

	if (!v)
		return 0;
	if (!json_is_string(v)) {
		jreq_show(v, got, sizeof(got));
		jreq_fail(err, key, "must be a string, got %s", got);
		return -EINVAL;
	}
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0 || len > maxlen) {
		jreq_fail(err, key, "must be 1..%zu bytes long, got %zu", maxlen, len);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			jreq_fail(err, key, "must not hold control characters");
			return -EINVAL;
		}
	*out = s;
	return 1;
}
