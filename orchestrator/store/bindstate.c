/* bindstate.c — the start bindings' state file (bindstate.h). */
#include "orchestrator/store/bindstate.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

#define FORMAT "numaorch-start-bindings"

char *bindstate_format(const struct bindstate_entry *e, unsigned n)
{
	json_t *arr = json_array(), *j;
	char *text;

	for (unsigned i = 0; arr && i < n; i++) {
		char wide[NODELIST_BUFSZ], bound[NODELIST_BUFSZ];

		if (mask_format(&e[i].wide, wide, sizeof(wide)) < 0 ||
		    mask_format(&e[i].bound, bound, sizeof(bound)) < 0) {
			json_decref(arr);
			return NULL;
		}
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:I}", "guest", e[i].id, "cgroup",
						     e[i].cgroup ? e[i].cgroup : "", "mems_before", wide,
						     "mems_bound", bound, "since_real_ns",
						     (json_int_t)e[i].since_real_ns));
	}
	j = json_pack("{s:s, s:i, s:o}", "format", FORMAT, "version", 1, "bindings", arr);
	if (!j)
		return NULL;
	text = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	return text;
}

/* An absolute path whose components are neither empty, "." nor "..": the
 * engine only ever writes such a cgroup, and one that is not could name
 * a cgroup outside the scope (the applier checks the scope again). */
static bool cgroup_path_ok(const char *p)
{
	if (!p || p[0] != '/' || strlen(p) >= 4096)
		return false;
	if (!p[1])
		return true;
	for (const char *c = p + 1;;) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);

		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!end)
			return true;
		c = end + 1;
	}
}

static int parse_entry(const json_t *o, struct bindstate_entry *e, char *why, size_t whysz)
{
	const char *id = NULL, *cg = NULL, *wide = NULL, *bound = NULL;
	json_int_t since = 0;
	json_error_t jerr;

	memset(e, 0, sizeof(*e));
	if (json_unpack_ex((json_t *)o, &jerr, 0, "{s:s, s:s, s:s, s:s, s:I}", "guest", &id, "cgroup", &cg,
			   "mems_before", &wide, "mems_bound", &bound, "since_real_ns", &since) < 0) {
		snprintf(why, whysz, "%s", jerr.text);
		return -EINVAL;
	}
	if (!id[0] || strlen(id) >= sizeof(e->id)) {
		snprintf(why, whysz, "guest id empty or longer than %zu bytes", sizeof(e->id) - 1);
		return -EINVAL;
	}
	if (!cgroup_path_ok(cg)) {
		snprintf(why, whysz, "cgroup \"%.200s\" is not an absolute path of plain names", cg);
		return -EINVAL;
	}
	if (mask_parse(wide, &e->wide) < 0 || !mask_count(&e->wide) || mask_parse(bound, &e->bound) < 0 ||
	    !mask_count(&e->bound)) {
		snprintf(why, whysz, "mems \"%.100s\" / \"%.100s\" are not non-empty node lists", wide, bound);
		return -EINVAL;
	}
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->cgroup = xstrdup(cg);
	e->since_real_ns = since;
	return 0;
}

int bindstate_parse(const char *text, size_t len, struct bindstate *out, unsigned *nbad, char *err,
		    size_t errsz)
{
	json_error_t jerr;
	json_t *j = json_loadb(text, len, 0, &jerr), *arr;
	const char *fmt = NULL;
	int ver = 0;
	size_t i;
	json_t *o;

	memset(out, 0, sizeof(*out));
	*nbad = 0;
	if (!j) {
		snprintf(err, errsz, "not JSON (line %d: %s)", jerr.line, jerr.text);
		return -EINVAL;
	}
	if (json_unpack_ex(j, &jerr, 0, "{s:s, s:i, s:o}", "format", &fmt, "version", &ver, "bindings", &arr) < 0 ||
	    strcmp(fmt, FORMAT) != 0 || ver != 1 || !json_is_array(arr)) {
		snprintf(err, errsz, "not a version 1 %s file", FORMAT);
		json_decref(j);
		return -EINVAL;
	}
	out->e = xcalloc(json_array_size(arr) ? json_array_size(arr) : 1, sizeof(*out->e));
	json_array_foreach(arr, i, o) {
		char why[300];

		if (parse_entry(o, &out->e[out->n], why, sizeof(why)) == 0) {
			out->n++;
			continue;
		}
		if ((*nbad)++ == 0)
			snprintf(err, errsz, "binding %zu: %s", i, why);
	}
	json_decref(j);
	return 0;
}

void bindstate_clear(struct bindstate *b)
{
	for (unsigned i = 0; b && i < b->n; i++)
		free(b->e[i].cgroup);
	if (b) {
		free(b->e);
		memset(b, 0, sizeof(*b));
	}
}
