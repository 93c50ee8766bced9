#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/acquire.h"
#include "agents/topo.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/engine/engine.h"
#include "policies/policies.h"

void tu_assert_json_golden(json_t *actual, const char *path)
{
	json_error_t err;
	json_t *expected;
	const char *upd = getenv("NUMAORCH_UPDATE_GOLDEN");

	if (upd && strcmp(upd, "1") == 0) {
		if (json_dump_file(actual, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
			fail_msg("cannot write golden %s", path);
		/* json_dump_file writes no trailing newline */
		FILE *f = fopen(path, "a");
		if (f) {
			fputc('\n', f);
			fclose(f);
		}
		return;
	}
	expected = json_load_file(path, 0, &err);
	if (!expected)
		fail_msg("cannot read golden %s: %s (line %d); run with NUMAORCH_UPDATE_GOLDEN=1 to create it",
			 path, err.text, err.line);
	if (!json_equal(expected, actual)) {
		char *a = json_dumps(actual, JSON_INDENT(2) | JSON_SORT_KEYS);
		char *e = json_dumps(expected, JSON_INDENT(2) | JSON_SORT_KEYS);

		print_error("golden mismatch for %s\n--- expected\n%s\n--- actual\n%s\n", path, e, a);
		free(a);
		free(e);
		json_decref(expected);
		fail_msg("golden mismatch: %s", path);
	}
	json_decref(expected);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Every directory tu_mkdtemp made and tu_rm_rf has not removed yet: a
 * failing assertion leaves its test by longjmp, past the test's own
 * tu_rm_rf, and /tmp would collect one numaorch-test.* per failure. The
 * rest are removed when the test program exits. */
static char **made;
static unsigned nmade;

static void rm_made(void)
{
	for (unsigned i = 0; i < nmade; i++) {
		nftw(made[i], rm_cb, 16, FTW_DEPTH | FTW_PHYS);
		free(made[i]);
	}
	free(made);
	made = NULL;
	nmade = 0;
}

char *tu_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char *p, **grown;

	if (asprintf(&p, "%s/numaorch-test.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		abort();
	if (!mkdtemp(p))
		fail_msg("mkdtemp: %s", strerror(errno));
	if (!made && atexit(rm_made) != 0)
		abort();
	grown = realloc(made, (nmade + 1) * sizeof(*made));
	if (!grown || !(grown[nmade] = strdup(p)))
		abort();
	made = grown;
	nmade++;
	return p;
}

void tu_rm_rf(const char *path)
{
	if (!path)
		return;
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	for (unsigned i = 0; i < nmade; i++)
		if (strcmp(made[i], path) == 0) {
			free(made[i]);
			made[i] = made[--nmade];
			break;
		}
}

void tu_write(const char *root, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

const struct engine_parts *tu_engine_parts(void)
{
	static const struct policy_ops pol = { .decide = policy_decide_reserved, .advise = policy_advise };
	static const struct engine_parts parts = { .sources = &acquire_host_ops, .policy = &pol };

	return &parts;
}

void tu_snap_nodes(struct snapshot *s, unsigned n, unsigned cpus, uint64_t mem)
{
	struct snap_node *nodes = calloc(n, sizeof(*nodes));

	assert_non_null(nodes);
	for (unsigned k = 0; k < n; k++) {
		nodes[k].id = (int)k;
		for (unsigned c = 0; c < cpus; c++)
			mask_set(&nodes[k].cpus, k * cpus + c);
		nodes[k].nr_cpus = cpus;
		nodes[k].mem_total = mem;
	}
	snap_set_nodes(s, nodes, n, NULL);
	free(nodes);
}
