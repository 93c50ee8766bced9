/* The per-guest policy store: set, clear, reload, refuse broken files. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/store/gpolstore.h"

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
	struct guest_policy dev = { .mode = GPOL_AUTO, .devices = GPOL_DEV_REQUIRE };
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
	assert_int_equal(rec.pol.devices, GPOL_DEV_PREFER);
	assert_int_equal(gpolstore_set(s, "docker-b", NULL, T0), 0);
	/* a devices choice other than prefer, kept across a reopen */
	assert_int_equal(gpolstore_set(s, "docker-c", &dev, T0), 0);
	gpolstore_free(s);
	assert_int_equal(gpolstore_open(sub, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 2);
	assert_true(gpolstore_get(s, "docker-c", &rec));
	assert_int_equal(rec.pol.mode, GPOL_AUTO);
	assert_int_equal(rec.pol.devices, GPOL_DEV_REQUIRE);
	assert_true(gpolstore_get(s, "docker-a", &rec));
	assert_int_equal(rec.pol.devices, GPOL_DEV_PREFER);
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

/* One bad record does not stop the start: the good ones load, the bad
 * one is named, and the file as it was is kept. */
static void test_one_bad_record_is_dropped_and_named(void **state)
{
	static const struct { const char *rec; const char *why; } t[] = {
		{ "\"../x\": {\"mode\": \"auto\"}", "not a valid guest id" },
		{ "\"a\": {\"mode\": \"pinned\"}", "nodes must be given with mode pinned" },
		{ "\"a\": {\"mode\": \"auto\", \"nodes\": \"1\"}", "nodes must be given with mode pinned" },
		{ "\"a\": {\"mode\": \"wild\"}", "mode must be auto, pinned or ignore" },
		{ "\"a\": {\"mode\": 1}", "mode must be" },
		{ "\"a\": {\"mode\": \"pinned\", \"nodes\": \"x\"}", "nodes must be a node list" },
		{ "\"a\": {\"mode\": \"auto\", \"devices\": \"maybe\"}", "devices must be prefer, require or ignore" },
		{ "\"a\": {\"mode\": \"auto\", \"colour\": 1}", "unknown field" },
		{ "\"a\": {\"mode\": \"auto\", \"set\": \"yesterday\"}", "set must be a time" },
		{ "\"a\": 5", "not an object" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *dir = tu_mkdtemp(), err[400] = "", *text, *kept, *rej;
		struct gpolstore *s = NULL;
		struct gpol_record rec;
		char *const *msgs;
		unsigned nd;

		text = xasprintf("{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": "
				 "{\"good-1\": {\"mode\": \"ignore\"}, %s, \"good-2\": {\"mode\": \"pinned\", "
				 "\"nodes\": \"1\"}}}", t[i].rec);
		tu_write(dir, GPOLSTORE_FILE, text);
		rej = xasprintf("%s/%s.rejected", dir, GPOLSTORE_FILE);
		/* Read-only (numaorchd --once): dropped, said, nothing written. */
		assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
		assert_int_equal(gpolstore_count(s), 2);
		assert_int_equal(gpolstore_dropped(s, &msgs), 1);
		assert_false(fs_exists(rej));
		gpolstore_free(s);
		assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
		assert_int_equal(gpolstore_count(s), 2);
		assert_true(gpolstore_get(s, "good-1", &rec));
		assert_true(gpolstore_get(s, "good-2", &rec));
		nd = gpolstore_dropped(s, &msgs);
		assert_int_equal(nd, 2);
		if (!strstr(msgs[0], t[i].why) || !strstr(msgs[0], "record dropped"))
			fail_msg("case %u: \"%s\" does not say \"%s\"", i, msgs[0], t[i].why);
		assert_non_null(strstr(msgs[1], ".rejected"));
		assert_int_equal(fs_read_file(rej, 1 << 20, &kept, NULL), 0);
		assert_string_equal(kept, text);
		gpolstore_free(s);
		free(kept);
		free(rej);
		free(text);
		tu_rm_rf(dir);
		free(dir);
	}
}

/* Changes go to the journal; a reopen replays it; a line cut short by a
 * crash is ignored; the journal is folded into the base once it holds as
 * many records as the base did (at least 1024). */
static void test_journal_replay_and_compaction(void **state)
{
	char *dir = tu_mkdtemp(), err[300], *jpath = xasprintf("%s/%s", dir, GPOLSTORE_JOURNAL), *text;
	struct guest_policy p = pinned("1"), ign = { .mode = GPOL_IGNORE };
	struct gpolstore *s;
	struct gpol_record rec;
	char *const *msgs;
	struct stat st;
	size_t len;

	(void)state;
	assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_set(s, "docker-a", &p, T0), 0);
	assert_int_equal(gpolstore_set(s, "docker-b", &ign, T0), 0);
	assert_int_equal(gpolstore_set(s, "docker-a", NULL, T0), 0);
	gpolstore_free(s);
	assert_int_equal(fs_read_file(jpath, 1 << 20, &text, &len), 0);
	assert_non_null(strstr(text, "{\"id\":\"docker-a\",\"policy\":null}\n"));
	free(text);

	/* Without CREATE (numaorchd --once): replayed, nothing written. */
	assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 1);
	assert_false(gpolstore_get(s, "docker-a", &rec));
	assert_true(gpolstore_get(s, "docker-b", &rec));
	assert_int_equal(gpolstore_set(s, "docker-c", &p, T0), -EROFS);
	gpolstore_free(s);

	/* A torn last line (killed mid-append): ignored and said. */
	{
		FILE *f = fopen(jpath, "a");

		fputs("{\"id\":\"docker-c\",\"pol", f);
		fclose(f);
	}
	assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 1);
	assert_int_equal(gpolstore_dropped(s, &msgs), 2);
	assert_non_null(strstr(msgs[0], "incomplete last line"));
	assert_non_null(strstr(msgs[1], ".rejected"));
	/* Opening compacted: the journal is empty, the base holds it all. */
	assert_int_equal(stat(jpath, &st), 0);
	assert_int_equal(st.st_size, 0);
	for (unsigned i = 0; i < 1023; i++) {
		char id[32];

		snprintf(id, sizeof(id), "runc-%04u", i);
		assert_int_equal(gpolstore_set(s, id, &p, T0), 0);
	}
	assert_int_equal(stat(jpath, &st), 0);
	assert_true(st.st_size > 1023 * 40);
	assert_int_equal(gpolstore_set(s, "runc-last", &p, T0), 0); /* the 1024th */
	assert_int_equal(stat(jpath, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(gpolstore_count(s), 1025);
	gpolstore_free(s);
	assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 1025);
	assert_true(gpolstore_get(s, "runc-0512", &rec));
	assert_int_equal(rec.pol.mode, GPOL_PINNED);
	gpolstore_free(s);

	free(jpath);
	tu_rm_rf(dir);
	free(dir);
}

/* A bad line anywhere in the journal (NUL bytes a crash left, garbage,
 * a line over the limit) is dropped and named; the lines after it still
 * replay, and the journal as it was is kept as .rejected before the
 * start-up compaction empties it. If it cannot be set aside, the store is
 * not opened at all. */
static void test_journal_replays_past_bad_lines(void **state)
{
	char *dir = tu_mkdtemp(), err[400], *jpath = xasprintf("%s/%s", dir, GPOLSTORE_JOURNAL);
	char *rpath = xasprintf("%s/%s.rejected", dir, GPOLSTORE_JOURNAL), *text, *back;
	static const char rec[] = "{\"id\":\"docker-%c\",\"policy\":{\"mode\":\"ignore\",\"set\":"
				  "\"2024-01-31T12:00:00Z\"}}\n";
	size_t big = (64u << 10) + 100, len = 0, blen;
	struct gpolstore *s;
	struct gpol_record r;
	char *const *msgs;
	unsigned nd;
	struct stat st;
	FILE *f;

	(void)state;
	text = xmalloc(big + 4096);
#define ADD(...) (len += (size_t)sprintf(text + len, __VA_ARGS__))
	ADD(rec, 'a');
	memset(text + len, 0, 200);
	len += 200;
	text[len++] = '\n';
	ADD(rec, 'b');
	ADD("garbage {\n");
	memset(text + len, 'x', big);
	len += big;
	text[len++] = '\n';
	ADD(rec, 'c');
#undef ADD
	f = fopen(jpath, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);

	/* Blocked from being set aside: not opened, the journal untouched. */
	assert_int_equal(mkdir(rpath, 0700), 0);
	tu_write(rpath, "x", "");
	assert_true(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot be set aside"));
	assert_int_equal(stat(jpath, &st), 0);
	assert_int_equal((size_t)st.st_size, len);
	tu_rm_rf(rpath);

	/* Read-only (--once): every good line, nothing written. */
	assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 3);
	gpolstore_free(s);
	assert_false(fs_exists(rpath));

	assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 3);
	assert_true(gpolstore_get(s, "docker-a", &r));
	assert_true(gpolstore_get(s, "docker-b", &r));
	assert_true(gpolstore_get(s, "docker-c", &r));
	nd = gpolstore_dropped(s, &msgs);
	assert_int_equal(nd, 4);
	assert_non_null(strstr(msgs[0], GPOLSTORE_JOURNAL ":2: NUL bytes"));
	assert_non_null(strstr(msgs[1], GPOLSTORE_JOURNAL ":4: not a journal record"));
	assert_non_null(strstr(msgs[2], GPOLSTORE_JOURNAL ":5: a line of 65636 bytes, over the 65536"));
	assert_non_null(strstr(msgs[3], ".rejected"));
	gpolstore_free(s);
	/* The rejected copy is the journal as it was, byte for byte. */
	assert_int_equal(fs_read_file(rpath, 1 << 20, &back, &blen), 0);
	assert_int_equal(blen, len);
	assert_memory_equal(back, text, len);
	free(back);
	assert_int_equal(stat(jpath, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* Compacted into the base: all three after another start. */
	assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 3);
	assert_int_equal(gpolstore_dropped(s, &msgs), 0);
	gpolstore_free(s);
	free(text);
	free(jpath);
	free(rpath);
	tu_rm_rf(dir);
	free(dir);
}

/* The state directory and the files in it, opened as root writes them. */
static void test_hostile_state_directory(void **state)
{
	char *dir = tu_mkdtemp(), *sub = xasprintf("%s/state", dir), err[400];
	char *victim = xasprintf("%s/victim", dir), *file = xasprintf("%s/%s", sub, GPOLSTORE_FILE), *text;
	struct guest_policy p = pinned("1");
	struct gpolstore *s = NULL;

	(void)state;
	assert_int_equal(mkdir(sub, 0777), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)), -EPERM);
	assert_null(s);
	assert_non_null(strstr(err, "state directory"));
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(gpolstore_open(sub, 0, &s, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(sub, 0750), 0);

	/* A symlink where the file goes: refused, never followed. */
	tu_write(dir, "victim", "precious");
	assert_int_equal(symlink(victim, file), 0);
	assert_int_equal(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "symlink"));
	assert_int_equal(unlink(file), 0);
	/* ... nor where the journal goes. */
	{
		char *j = xasprintf("%s/%s", sub, GPOLSTORE_JOURNAL);

		assert_int_equal(symlink(victim, j), 0);
		assert_true(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)) < 0);
		assert_int_equal(unlink(j), 0);
		free(j);
	}
	assert_int_equal(gpolstore_open(sub, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_set(s, "lxc-db", &p, T0), 0);
	gpolstore_free(s);
	assert_int_equal(fs_read_file(victim, 100, &text, NULL), 0);
	assert_string_equal(text, "precious");
	free(text);
	free(file);
	free(victim);
	free(sub);
	tu_rm_rf(dir);
	free(dir);
}

static void test_temps_cleaned_and_write_failure_changes_nothing(void **state)
{
	char *dir = tu_mkdtemp(), err[300], *tmp;
	struct gpolstore *s;
	struct gpol_record rec;
	struct guest_policy p = pinned("1");
	struct rlimit was, lim;
	struct stat st;
	char *jpath = xasprintf("%s/%s", dir, GPOLSTORE_JOURNAL);

	(void)state;
	/* What a writer killed between its temp file and the rename leaves. */
	tu_write(dir, GPOLSTORE_FILE ".tmp.4242", "{\"format\": \"numaorch-gu");
	assert_int_equal(gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)), 0);
	tmp = xasprintf("%s/%s.tmp.4242", dir, GPOLSTORE_FILE);
	assert_false(fs_exists(tmp));
	assert_int_equal(gpolstore_set(s, "lxc-db", &p, T0), 0);
	/* Make the next append fail: no file may grow past its size. */
	assert_int_equal(stat(jpath, &st), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = was;
	lim.rlim_cur = (rlim_t)st.st_size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_true(gpolstore_set(s, "runc-a", &p, T0) < 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_false(gpolstore_get(s, "runc-a", &rec));
	assert_int_equal(gpolstore_count(s), 1);
	/* The half line was cut back: the journal still parses whole. */
	assert_int_equal(gpolstore_set(s, "runc-b", &p, T0), 0);
	gpolstore_free(s);
	assert_int_equal(gpolstore_open(dir, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_count(s), 2);
	{
		char *const *msgs;

		assert_int_equal(gpolstore_dropped(s, &msgs), 0);
	}
	gpolstore_free(s);

	/* A store without a directory refuses to change. */
	assert_int_equal(gpolstore_open(NULL, 0, &s, err, sizeof(err)), 0);
	assert_int_equal(gpolstore_set(s, "lxc-db", &p, T0), -EROFS);
	assert_null(gpolstore_path(s));
	gpolstore_free(s);
	free(tmp);
	free(jpath);
	tu_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_get_clear_reload),
		cmocka_unit_test(test_broken_files_are_refused),
		cmocka_unit_test(test_one_bad_record_is_dropped_and_named),
		cmocka_unit_test(test_journal_replay_and_compaction),
		cmocka_unit_test(test_journal_replays_past_bad_lines),
		cmocka_unit_test(test_hostile_state_directory),
		cmocka_unit_test(test_temps_cleaned_and_write_failure_changes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
