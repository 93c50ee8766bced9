/* The decision log's ring: declog_query_newest returns the same records
 * as the tail of a full declog_query, oldest first. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/store/declog.h"
#include "orchestrator/base/clock.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"

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
	assert_int_equal(declog_open(NULL, 4, &d, NULL, 0), 0);
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
	assert_ids(declog_query(d, 0, INT64_MIN, 100, "b", NULL), (const int[]){ 4 }, 1);
	assert_ids(declog_query_newest(d, 100, "b"), (const int[]){ 4 }, 1);
	declog_close(d);
}

/* Paging forward: at most LIMIT, "more" when another match follows, a
 * time filter on the records' own times (only the page is decoded). */
static void test_query_pages(void **state)
{
	static const char *const guests[] = { "a", "b", "a", "b", "a", "c" };
	int64_t now_ms = clock_real_ns() / 1000000;
	struct declog *d;
	bool more = true;

	(void)state;
	assert_int_equal(declog_open(NULL, 4, &d, NULL, 0), 0);
	for (size_t i = 0; i < 6; i++)
		add(d, guests[i]);
	assert_ids(declog_query(d, 0, INT64_MIN, 2, NULL, &more), (const int[]){ 3, 4 }, 2);
	assert_true(more);
	assert_ids(declog_query(d, 4, INT64_MIN, 2, NULL, &more), (const int[]){ 5, 6 }, 2);
	assert_false(more);
	assert_ids(declog_query(d, 0, INT64_MIN, 1, "a", &more), (const int[]){ 3 }, 1);
	assert_true(more);
	assert_ids(declog_query(d, 3, INT64_MIN, 1, "a", &more), (const int[]){ 5 }, 1);
	assert_false(more);
	/* every record is newer than an hour ago, none newer than an hour ahead */
	assert_ids(declog_query(d, 0, now_ms - 3600000, 3, NULL, &more), (const int[]){ 3, 4, 5 }, 3);
	assert_true(more);
	assert_ids(declog_query(d, 0, now_ms + 3600000, 3, NULL, &more), NULL, 0);
	assert_false(more);
	declog_close(d);
}

/* The file is appended to as root: never through a symlink, never in a
 * directory others can write; a reopen that fails keeps the old file. */
static void test_file_opened_carefully(void **state)
{
	char *dir = tu_mkdtemp(), *log = xasprintf("%s/d.jsonl", dir), *victim = xasprintf("%s/victim", dir);
	char *moved = xasprintf("%s/d.jsonl.1", dir), err[400], *text;
	struct declog *d = NULL;

	(void)state;
	tu_write(dir, "victim", "precious\n");
	assert_int_equal(symlink(victim, log), 0);
	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "symlink"));
	assert_int_equal(unlink(log), 0);
	assert_int_equal(mkfifo(log, 0600), 0);
	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), -EINVAL); /* and did not block */
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(unlink(log), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(dir, 0700), 0);

	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), 0);
	add(d, "a");
	/* logrotate: the file moved away, then SIGHUP. */
	assert_int_equal(rename(log, moved), 0);
	assert_int_equal(symlink(victim, log), 0);
	assert_int_equal(declog_reopen(d, log, err, sizeof(err)), -ELOOP);
	add(d, "b"); /* still into the old file */
	assert_int_equal(unlink(log), 0);
	assert_int_equal(declog_reopen(d, log, err, sizeof(err)), 0);
	add(d, "c");
	declog_close(d);
	assert_int_equal(fs_read_file(moved, 1 << 16, &text, NULL), 0);
	assert_non_null(strstr(text, "\"guest\":\"a\""));
	assert_non_null(strstr(text, "\"guest\":\"b\""));
	free(text);
	assert_int_equal(fs_read_file(log, 1 << 16, &text, NULL), 0);
	assert_null(strstr(text, "\"guest\":\"b\""));
	assert_non_null(strstr(text, "\"guest\":\"c\""));
	free(text);
	assert_int_equal(fs_read_file(victim, 1 << 16, &text, NULL), 0);
	assert_string_equal(text, "precious\n");
	free(text);
	tu_rm_rf(dir);
	free(dir);
	free(log);
	free(victim);
	free(moved);
}

/* Every line of the file at PATH is one whole record: its guests, in
 * order, joined by spaces. */
static char *guests_in_file(const char *path)
{
	char *text, *line, *save = NULL, *out = xstrdup("");

	assert_int_equal(fs_read_file(path, 1 << 20, &text, NULL), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		char *n;

		if (!o)
			fail_msg("not a whole record: \"%s\"", line);
		n = xasprintf("%s%s%s", out, *out ? " " : "", json_string_value(json_object_get(o, "guest")));
		free(out);
		out = n;
		json_decref(o);
	}
	free(text);
	return out;
}

/* A write cut short (a full disk; here the file size limit) is cut back:
 * the next record starts its own line, not half a record's. A file left
 * ending in half a line (a writer killed) gets its line ended at open. */
static void test_short_write_cut_back(void **state)
{
	char *dir = tu_mkdtemp(), *log = xasprintf("%s/d.jsonl", dir), err[400], *got;
	struct declog *d = NULL;
	struct rlimit was, lim;
	struct stat st;

	(void)state;
	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), 0);
	add(d, "a");
	assert_int_equal(stat(log, &st), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = was;
	lim.rlim_cur = (rlim_t)st.st_size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_true(declog_add(d, json_pack("{s:s, s:s}", "guest", "lost", "decision", "moved")) < 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	add(d, "b");
	declog_close(d);
	got = guests_in_file(log);
	assert_string_equal(got, "a b");
	free(got);

	{
		FILE *f = fopen(log, "a");

		fputs("{\"guest\":\"half", f);
		fclose(f);
	}
	assert_int_equal(declog_open(log, 4, &d, err, sizeof(err)), 0);
	add(d, "c");
	declog_close(d);
	{
		char *text;

		assert_int_equal(fs_read_file(log, 1 << 20, &text, NULL), 0);
		assert_non_null(strstr(text, "{\"guest\":\"half\n{"));
		free(text);
	}
	tu_rm_rf(dir);
	free(dir);
	free(log);
}

/* The ring keeps records packed (every known key one byte): what comes
 * back is the record as it went in, whatever its strings hold — a key's
 * name inside a value, quotes and backslashes, control characters (which
 * JSON escapes), UTF-8 — and a key not in the table. */
static void test_packed_records_round_trip(void **state)
{
	static const struct {
		const char *text, *guest;
	} cases[] = {
		{ "{\"cycle\":7,\"detail\":\"\\\"guest\\\":\\\"a\\\" \\\\\",\"guest\":\"a\",\"to\":{\"nodes\":[0,1]}}", "a" },
		{ "{\"detail\":\"tab\\tnl\\n\\u0001 \u00e9 \\\"time\\\":\",\"unknown_key\":\"guest\",\"id\":1}", "zz" },
		{ "{\"guest\":\"\",\"message\":\"\\\\\",\"errno\":\"ENOENT\"}", "" },
		/* another guest's id, and an id JSON escapes: written out */
		{ "{\"guest\":\"a\",\"id\":2}", "b" },
		{ "{\"guest\":\"g\\\"1\",\"id\":2}", "g\"1" },
		{ "{\"guest\":\"a\"}", "a\"" },
		{ "[]", "a" },
	};
	struct declog *d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = declog_pack_text(cases[i].text, cases[i].guest), *u = declog_unpack_text(p, cases[i].guest);

		assert_string_equal(u, cases[i].text);
		assert_true(strlen(p) <= strlen(cases[i].text));
		free(p);
		free(u);
	}
	{
		/* known keys are packed, and the record's own guest with its key */
		char *p = declog_pack_text("{\"cycle\":1,\"guest\":\"g\",\"kind\":\"vm\"}", "g");

		assert_int_equal(strlen(p), strlen("{\x01" "1,\x1f,\x18\"vm\"}"));
		free(p);
	}
	/* through the ring: the same record comes back, found by its guest */
	assert_int_equal(declog_open(NULL, 2, &d, NULL, 0), 0);
	{
		json_t *rec = json_pack("{s:s, s:s, s:s, s:{s:[i,i]}}", "guest", "g\"1", "decision", "skipped",
					"detail", "\"guest\":\"h\" \\ \u00e9", "to", "nodes", 0, 3);
		json_t *arr, *got;

		json_incref(rec);
		assert_true(declog_add(d, rec) > 0);
		arr = declog_query_newest(d, 5, "g\"1");
		assert_int_equal(json_array_size(arr), 1);
		got = json_array_get(arr, 0);
		/* declog_add stamped REC itself with them */
		assert_true(json_equal(json_object_get(got, "id"), json_object_get(rec, "id")));
		assert_true(json_equal(json_object_get(got, "time"), json_object_get(rec, "time")));
		assert_true(json_equal(got, rec));
		json_decref(arr);
		json_decref(rec);
		arr = declog_query_newest(d, 5, "h");
		assert_int_equal(json_array_size(arr), 0);
		json_decref(arr);
	}
	declog_close(d);
}

/* declog_bytes counts what the ring holds: it grows with records until
 * the ring is full, then stays bounded as old records give way. */
static void test_ring_bytes(void **state)
{
	struct declog *d;
	unsigned n;
	size_t empty, full, later;

	(void)state;
	assert_int_equal(declog_open(NULL, 4, &d, NULL, 0), 0);
	empty = declog_bytes(d, &n);
	assert_int_equal(n, 0);
	for (int i = 0; i < 4; i++)
		add(d, "guest-one");
	full = declog_bytes(d, &n);
	assert_int_equal(n, 4);
	assert_true(full > empty + 4 * strlen("guest-one"));
	for (int i = 0; i < 40; i++)
		add(d, "guest-one");
	later = declog_bytes(d, &n);
	assert_int_equal(n, 4);
	/* ids grow by a digit; nothing else does */
	assert_true(later <= full + 4 * 2);
	declog_close(d);
}

/* A cycle's own record: its phases' times as given, a clock that read
 * back a hair (negative) as 0, the totals their sums, no guest. */
static void test_cycle_record(void **state)
{
	struct declog_cycle_time t = { .wall_s = { 0.25, 0.001, 0.5, -1e-9 }, .cpu_s = { 0.01, 0.001, 0.002, 0.003 } };
	json_t *r = declog_make_cycle(42, &t, false), *w, *c;

	(void)state;
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "decision")), "cycle");
	assert_int_equal(json_integer_value(json_object_get(r, "cycle")), 42);
	assert_null(json_object_get(r, "guest"));
	assert_null(json_object_get(r, "dry_run"));
	w = json_object_get(json_object_get(r, "engine_time"), "wall_s");
	c = json_object_get(json_object_get(r, "engine_time"), "cpu_s");
	assert_true(json_real_value(json_object_get(w, "record")) == 0);
	assert_true(fabs(json_real_value(json_object_get(w, "total")) - 0.751) < 1e-12);
	assert_true(fabs(json_real_value(json_object_get(w, "acquire")) - 0.25) < 1e-12);
	assert_true(fabs(json_real_value(json_object_get(c, "total")) - 0.016) < 1e-12);
	json_decref(r);
	r = declog_make_cycle(7, &t, true);
	assert_true(json_is_true(json_object_get(r, "dry_run")));
	json_decref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_newest),
		cmocka_unit_test(test_query_pages),
		cmocka_unit_test(test_file_opened_carefully),
		cmocka_unit_test(test_short_write_cut_back),
		cmocka_unit_test(test_packed_records_round_trip),
		cmocka_unit_test(test_ring_bytes),
		cmocka_unit_test(test_cycle_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
