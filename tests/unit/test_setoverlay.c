/* test_setoverlay.c — the settings changed through the API, in the state
 * directory: merged change by change, written and read back, a bad file
 * refused with a message saying how to drop it. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/store/setoverlay.h"

static void test_merge_save_load_remove(void **state)
{
	char *dir = tu_mkdtemp(), err[300];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_t *a = json_pack("{s:i, s:s}", "max_util", 85, "revision", "0123456789abcdef");
	json_t *b = json_pack("{s:i, s:[s]}", "max_util", 80, "schedule", "Sat 01:00-02:00 max_moves=1");
	json_t *m1, *m2, *got = NULL;
	struct stat st;

	(void)state;
	assert_true(dfd >= 0);
	assert_int_equal(setoverlay_load(dir, &got, err, sizeof(err)), 0);
	assert_null(got);
	/* A revision names a state, not a setting: never kept. */
	m1 = setoverlay_merge(NULL, a);
	assert_null(json_object_get(m1, "revision"));
	m2 = setoverlay_merge(m1, b);
	assert_int_equal(json_integer_value(json_object_get(m2, "max_util")), 80);
	assert_int_equal(json_array_size(json_object_get(m2, "schedule")), 1);
	assert_int_equal(json_integer_value(json_object_get(m1, "max_util")), 85); /* OLD untouched */
	assert_int_equal(setoverlay_save_at(dfd, m2), 0);
	assert_int_equal(fstatat(dfd, SETOVERLAY_FILE, &st, 0), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(setoverlay_load(dir, &got, err, sizeof(err)), 0);
	assert_true(json_equal(got, m2));
	json_decref(got);
	got = NULL;
	assert_int_equal(setoverlay_load_at(dfd, &got, err, sizeof(err)), 0);
	assert_true(json_equal(got, m2));
	json_decref(got);
	assert_int_equal(setoverlay_remove_at(dfd), 0);
	assert_int_equal(setoverlay_remove_at(dfd), 0);
	got = NULL;
	assert_int_equal(setoverlay_load_at(dfd, &got, err, sizeof(err)), 0);
	assert_null(got);
	json_decref(a);
	json_decref(b);
	json_decref(m1);
	json_decref(m2);
	close(dfd);
	tu_rm_rf(dir);
	free(dir);
}

static void test_bad_file_is_refused_saying_how_to_drop_it(void **state)
{
	static const char *const bad[] = {
		"{\"max_util\": 85}",
		"{\"format\": \"numaorch-settings\", \"version\": 2, \"settings\": {}}",
		"{\"format\": \"numaorch-settings\", \"version\": 1, \"settings\": [1]}",
		"not json",
	};
	char *dir = tu_mkdtemp(), err[300];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *got = NULL;

		tu_write(dir, SETOVERLAY_FILE, bad[i]);
		assert_int_equal(setoverlay_load(dir, &got, err, sizeof(err)), -EINVAL);
		assert_null(got);
		assert_non_null(strstr(err, "numaorchctl policy reset"));
	}
	tu_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_save_load_remove),
		cmocka_unit_test(test_bad_file_is_refused_saying_how_to_drop_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
