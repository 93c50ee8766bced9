/* setoverlay.c — the file of settings changed through the API. */
#include "orchestrator/store/setoverlay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"

#define FORMAT "numaorch-settings"
#define FILE_MAX (1 << 20)

static int parse(const char *text, size_t len, const char *where, json_t **out, char *err, size_t errsz)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je), *s;

	if (!j || !json_is_object(j) || !json_is_string(json_object_get(j, "format")) ||
	    strcmp(json_string_value(json_object_get(j, "format")), FORMAT) != 0 ||
	    json_integer_value(json_object_get(j, "version")) != 1 ||
	    !json_is_object(s = json_object_get(j, "settings"))) {
		snprintf(err, errsz, "%s: not a %s version 1 file%s%s (numaorchctl policy reset drops it)", where,
			 FORMAT, j ? "" : ": ", j ? "" : je.text);
		json_decref(j);
		return -EINVAL;
	}
	*out = json_incref(s);
	json_decref(j);
	return 0;
}

int setoverlay_load(const char *state_dir, json_t **out, char *err, size_t errsz)
{
	char path[4096], *text = NULL;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/%s", state_dir, SETOVERLAY_FILE);
	if (!fs_exists(path)) {
		*out = NULL;
		return 0;
	}
	r = fs_read_regular("settings file", path, FILE_MAX, &text, &len, err, errsz);
	if (r < 0)
		return r;
	r = parse(text, len, path, out, err, errsz);
	free(text);
	return r;
}

int setoverlay_load_at(int dfd, json_t **out, char *err, size_t errsz)
{
	char *text = NULL;
	size_t len;
	int r = fs_read_file_at(dfd, SETOVERLAY_FILE, FILE_MAX, &text, &len);

	if (r == -ENOENT) {
		*out = NULL;
		return 0;
	}
	if (r < 0) {
		snprintf(err, errsz, "cannot read %s: %s", SETOVERLAY_FILE, strerror(-r));
		return r;
	}
	r = parse(text, len, SETOVERLAY_FILE, out, err, errsz);
	free(text);
	return r;
}

int setoverlay_save_at(int dfd, const json_t *settings)
{
	json_t *j = json_pack("{s:s, s:i, s:O}", "format", FORMAT, "version", 1, "settings", settings);
	char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	int r;

	json_decref(j);
	if (!text)
		return -ENOMEM;
	r = fs_write_atomic_at(dfd, SETOVERLAY_FILE, text, strlen(text), 0640);
	free(text);
	return r;
}

int setoverlay_remove_at(int dfd)
{
	if (unlinkat(dfd, SETOVERLAY_FILE, 0) < 0 && errno != ENOENT)
		return -errno;
	if (fsync(dfd) < 0)
		return -errno;
	return 0;
}

json_t *setoverlay_merge(const json_t *old, const json_t *change)
{
	json_t *out = old ? json_deep_copy(old) : json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)change, k, v)
		if (strcmp(k, "revision") != 0)
			json_object_set(out, k, v);
	return out;
}
