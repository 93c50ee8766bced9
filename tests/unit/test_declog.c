/* The decision log's ring: declog_query_newest returns the same records
 * as the tail of a full declog_query, oldest first. */
#include "testutil.h"

#include <jansson.h>
#include <string.h>

#include "orchestrator/declog.h"

static void add(struct declog *d, const char *guest)
{
	json_t *rec = json_pack("{s:s, s:s}", "guest", guest, "decision", "moved");

	assert_true(declog_add(d, rec) > 0);
}

static void assert_ids(json_t *arr, const int *ids, size_t n)
{
	assert_int_equal(json_array_size(arr), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, i), "id")), ids[i]);
	json_decref(arr);
}

static void test_newest(void **state)
{
	static const char *const guests[] = { "a", "b", "a", "b", "a", "c" };
	struct declog *d;

	(void)state;
	assert_int_equal(declog_open(NULL, 4, &d), 0);
	for (size_t i = 0; i < 6; i++)
		add(d, guests[i]);
	/* the ring keeps ids 3..6 */
	assert_ids(declog_query_newest(d, 10, NULL), (const int[]){ 3, 4, 5, 6 }, 4);
	assert_ids(declog_query_newest(d, 2, NULL), (const int[]){ 5, 6 }, 2);
	assert_ids(declog_query_newest(d, 2, "a"), (const int[]){ 3, 5 }, 2);
	assert_ids(declog_query_newest(d, 1, "a"), (const int[]){ 5 }, 1);
	assert_ids(declog_query_newest(d, 1, "c"), (const int[]){ 6 }, 1);
	assert_ids(declog_query_newest(d, 5, "zz"), NULL, 0);
	assert_ids(declog_query_newest(d, 0, NULL), NULL, 0);
	/* the same as the tail of the full query */
	assert_ids(declog_query(d, 0, 100, "b"), (const int[]){ 4 }, 1);
	assert_ids(declog_query_newest(d, 100, "b"), (const int[]){ 4 }, 1);
	declog_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_newest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
