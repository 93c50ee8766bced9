/* numaorchctl top's nodes panel from the API's replies (api/ctl_top.c):
 * memory migrating in and out of each node comes from each job's sources
 * (GET /v1/migrations), not a share of the job's remainder. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "api/ctl_top.h"

static json_t *nodes4(void)
{
	json_t *arr = json_array();

	for (int i = 0; i < 4; i++)
		json_array_append_new(arr, json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:[]}", "id", i, "nr_cpus", 2,
						     "busy", 0.1, "load_cpus", 0.2, "mem_free_bytes", 1e9,
						     "mem_total_bytes", 2e9, "guests"));
	return json_pack("{s:o}", "nodes", arr);
}

/* The MIG IN and MIG OUT cells of node ID's row in TEXT. */
static void mig_cells(const char *text, int id, char *in, char *out)
{
	const char *l = strstr(text, "\nNODE");

	assert_non_null(l);
	for (l = strchr(l + 1, '\n'); l && *l; l = strchr(l + 1, '\n')) {
		char c[9][16];

		if (sscanf(l + 1, "%15s %15s %15s %15s %15s %15s %15s %15s %15s", c[0], c[1], c[2], c[3], c[4], c[5],
			   c[6], c[7], c[8]) == 9 &&
		    atoi(c[0]) == id) {
			strcpy(in, c[7]);
			strcpy(out, c[8]);
			return;
		}
	}
	fail_msg("no row for node %d in:\n%s", id, text);
}

static void test_uneven_sources(void **state)
{
	json_t *nodes = nodes4();
	/* A running job 0,2 -> 1 whose census found 124 MiB on node 0 and 2
	 * on node 2, 2 MiB of them moved; a queued job of another guest (no
	 * sources yet: nothing moves); an ended one (not counted). */
	json_t *mig = json_pack(
		"{s:b, s:[{s:s, s:s, s:s, s:f, s:[{s:i, s:i, s:f, s:f, s:f}, {s:i, s:i, s:f, s:f, s:f}]},"
		"        {s:s, s:s, s:s, s:f, s:[]},"
		"        {s:s, s:s, s:s, s:f, s:[{s:i, s:i, s:f, s:f, s:f}]}]}",
		"mover", 1, "migrations",
		"state", "running", "from", "0,2", "to", "1", "left_mib", 122.0, "sources",
		"node", 0, "to", 1, "found_mib", 124.0, "done_mib", 4.0, "left_mib", 120.0,
		"node", 2, "to", 1, "found_mib", 2.0, "done_mib", 0.0, "left_mib", 2.0,
		"state", "queued", "from", "", "to", "3", "left_mib", 64.0, "sources",
		"state", "done", "from", "3", "to", "2", "left_mib", 9.0, "sources",
		"node", 3, "to", 2, "found_mib", 9.0, "done_mib", 0.0, "left_mib", 9.0);
	char *text, *t, in[16], out[16];

	(void)state;
	assert_non_null(mig);
	text = ctl_top_nodes_text(nodes, mig, 80, 10);
	t = malloc(strlen(text) + 2);
	t[0] = '\n';
	strcpy(t + 1, text);
	mig_cells(t, 0, in, out);
	assert_string_equal(in, "0");
	assert_string_equal(out, "120M");
	mig_cells(t, 1, in, out);
	assert_string_equal(in, "122M");
	assert_string_equal(out, "0");
	mig_cells(t, 2, in, out);
	assert_string_equal(in, "0");
	assert_string_equal(out, "2.0M");
	mig_cells(t, 3, in, out);
	assert_string_equal(in, "0");
	assert_string_equal(out, "0");
	free(t);
	free(text);
	/* no mover: the columns say "-" */
	json_object_set_new(mig, "mover", json_false());
	text = ctl_top_nodes_text(nodes, mig, 80, 10);
	t = malloc(strlen(text) + 2);
	t[0] = '\n';
	strcpy(t + 1, text);
	mig_cells(t, 0, in, out);
	assert_string_equal(in, "-");
	assert_string_equal(out, "-");
	free(t);
	free(text);
	json_decref(mig);
	json_decref(nodes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uneven_sources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
