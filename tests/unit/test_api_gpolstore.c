/* The per-guest policy store: set, clear, reload, refuse broken files. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/fs.h"
#include "orchestrator/gpolstore.h"

#define T0 1700000000000000000LL

static struct guest_policy pinned(const char *nodes)
{
	struct guest_policy p = { .mode = GPOL_PINNED, .source = GPOL_SRC_API };

	assert_int_equal(mask_parse(nodes, &p.nodes), 0);
	return p;
}

static void test_set_get_clear_reload(void **state)
{
	char *dir = tu_mkdtemp(), *sub = xasprintf("%s/a/b", dir), err[300];
	struct gpolstore *s;
	struct gpol_record rec, *all;
	struct guest_policy p = pinned("0-1"), ign = { .mode = GPOL_IGNORE };
	struct stat st;

	(void)state;
	/* Without CREATE a missing directory is an empty store. */
	assert_int_equal(gpolstore_open(sub, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 0);
	gpolstore_free(s);
	assert_false(fs_exists(sub));

	assert_int_equal(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_true(fs_is_dir(sub));
	assert_false(gpolstore_get(s, "docker-a", &rec));
	assert_int_equal(gpolstore_set(s, "docker-a", NULL, T0), -ENOENT);
	assert_int_equal(gpolstore_set(s, "../x", &p, T0), -EINVAL);
	assert_int_equal(gpolstore_generation(s), 0);
	assert_int_equal(gpolstore_set(s, "docker-b", &p, T0 + 123456789), 0);
	assert_int_equal(gpolstore_set(s, "docker-a", &ign, T0), 0);
	assert_int_equal(gpolstore_generation(s), 2);
	assert_true(gpolstore_get(s, "docker-b", &rec));
	assert_int_equal(rec.pol.mode, GPOL_PINNED);
	assert_int_equal(rec.pol.source, GPOL_SRC_API);
	assert_true(mask_equal(&rec.pol.nodes, &p.nodes));
	assert_int_equal(rec.set_real_ns, T0); /* whole seconds */
	assert_int_equal(gpolstore_list(s, &all), 2);
	assert_string_equal(all[0].id, "docker-a");  /* sorted */
	assert_string_equal(all[1].id, "docker-b");
	free(all);
	assert_int_equal(stat(gpolstore_path(s), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	gpolstore_free(s);

	/* Reload: the same records. */
	assert_int_equal(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 2);
	assert_true(gpolstore_get(s, "docker-a", &rec));
	assert_int_equal(rec.pol.mode, GPOL_IGNORE);
	assert_true(mask_empty(&rec.pol.nodes));
	assert_true(gpolstore_get(s, "docker-b", &rec));
	assert_true(mask_equal(&rec.pol.nodes, &p.nodes));
	assert_int_equal(rec.set_real_ns, T0);
	assert_int_equal(gpolstore_set(s, "docker-b", NULL, T0), 0);
	gpolstore_free(s);
	assert_int_equal(gpolstore_open(sub, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 1);
	gpolstore_free(s);

	free(sub);
	tu_rm_rf(dir);
	free(dir);
}

static void test_broken_files_are_refused(void **state)
{
	static const struct { const char *text; const char *why; } t[] = {
		{ "{", "guest-policies.json:1" },
		{ "[]", "not a numaorch guest policy file" },
		{ "{\"format\": \"other\", \"version\": 1, \"guests\": {}}", "not a numaorch" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 2, \"guests\": {}}", "not a numaorch" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {}, \"x\": 1}", "not a numaorch" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"../x\": {\"mode\": \"auto\"}}}",
		  "not a valid guest id" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": {\"mode\": \"pinned\"}}}",
		  "nodes must be given with mode pinned" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": {\"mode\": \"auto\", \"nodes\": \"1\"}}}",
		  "nodes must be given with mode pinned" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": {\"mode\": \"wild\"}}}",
		  "mode must be" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": {\"mode\": \"auto\", \"colour\": 1}}}",
		  "unknown field" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": {\"mode\": \"auto\", \"set\": \"yesterday\"}}}",
		  "set must be a time" },
		{ "{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {\"a\": 5}}", "not an object" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *dir = tu_mkdtemp(), err[400] = "";
		struct gpolstore *s = NULL;

		tu_write(dir, GPOLSTORE_FILE, t[i].text);
		assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), -EINVAL);
		assert_null(s);
		if (!strstr(err, t[i].why))
			fail_msg("case %u: \"%s\" does not say \"%s\"", i, err, t[i].why);
		tu_rm_rf(dir);
		free(dir);
	}
}

static void test_temps_cleaned_and_write_failure_changes_nothing(void **state)
{
	char *dir = tu_mkdtemp(), err[300], *tmp, *path;
	struct gpolstore *s;
	struct gpol_record rec;
	struct guest_policy p = pinned("1");

	(void)state;
	/* What a writer killed between its temp file and the rename leaves. */
	tu_write(dir, GPOLSTORE_FILE ".tmp.4242", "{\"format\": \"numaorch-gu");
	assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	tmp = xasprintf("%s/%s.tmp.4242", dir, GPOLSTORE_FILE);
	assert_false(fs_exists(tmp));
	assert_int_equal(gpolstore_set(s, "lxc-db", &p, T0), 0);
	/* Make the next write fail: the file's place is taken by a directory. */
	path = xasprintf("%s/%s", dir, GPOLSTORE_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	tu_write(path, "keep", "x");
	assert_true(gpolstore_set(s, "runc-a", &p, T0) < 0);
	assert_false(gpolstore_get(s, "runc-a", &rec));
	assert_int_equal(gpolstore_count(s), 1);
	gpolstore_free(s);

	/* A store without a directory refuses to change. */
	assert_int_equal(gpolstore_open(NULL, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_set(s, "lxc-db", &p, T0), -EROFS);
	assert_null(gpolstore_path(s));
	gpolstore_free(s);
	free(tmp);
	free(path);
	tu_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_get_clear_reload),
		cmocka_unit_test(test_broken_files_are_refused),
		cmocka_unit_test(test_temps_cleaned_and_write_failure_changes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
