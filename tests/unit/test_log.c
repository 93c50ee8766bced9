/* log.c: control characters never reach the log raw; the same warning
 * every cycle is logged once, with a count now and then. */
#include "testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/utf8.h"

static void test_escape(void **state)
{
	static const struct { const char *in, *out; } t[] = {
		{ "plain /docker/abc", "plain /docker/abc" },
		{ "red\x1b[31mname", "red\\x1b[31mname" },
		{ "a\nb\rc\td", "a\\x0ab\\x0dc\\x09d" },
		{ "del\x7f", "del\\x7f" },
		{ "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" },      /* UTF-8 stays */
		{ "c1 \xc2\x9b" "31m", "c1 \\xc2\\x9b31m" },                    /* U+009B CSI */
		{ "raw \x9b" "31m", "raw \\x9b31m" },                           /* not UTF-8 */
		{ "cut \xe2\x82", "cut \\xe2\\x82" },                           /* truncated */
		{ "over \xc0\xaf", "over \\xc0\\xaf" },                         /* overlong */
		{ "unit machine-qemu\\x2d1", "unit machine-qemu\\x2d1" },      /* systemd's escapes stay */
	};
	char out[256];

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		utf8_escape(t[i].in, out, sizeof(out));
		if (strcmp(out, t[i].out) != 0)
			fail_msg("case %u: got \"%s\", want \"%s\"", i, out, t[i].out);
	}
	/* Cut at a whole escape, never half of one. */
	assert_int_equal(utf8_escape("ab\x1b", out, 5), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(utf8_escape("\xc3\xa9\xc3\xa9", out, 4), 2);
	assert_string_equal(out, "\xc3\xa9");
}

/* Run FN with stderr captured; returns what it wrote (caller frees). */
static char *capture(void (*fn)(void *), void *arg)
{
	char *dir = tu_mkdtemp(), *path = xasprintf("%s/err", dir), *text;
	int save = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	close(fd);
	fn(arg);
	fflush(stderr);
	dup2(save, STDERR_FILENO);
	close(save);
	assert_int_equal(fs_read_file(path, 1 << 20, &text, NULL), 0);
	tu_rm_rf(dir);
	free(dir);
	free(path);
	return text;
}

static void log_ctl(void *arg)
{
	(void)arg;
	log_warn("cgroup /x/%s: cannot read", "evil\x1b]0;owned\x07name");
}

static void test_log_lines_are_escaped(void **state)
{
	char *text;

	(void)state;
	text = capture(log_ctl, NULL);
	assert_non_null(strstr(text, "cgroup /x/evil\\x1b]0;owned\\x07name: cannot read\n"));
	assert_null(strchr(text, '\x1b'));
	free(text);
}

static void rounds(void *arg)
{
	struct log_repeat *r = arg;
	char *a = "memory.numa_stat malformed", *b = "no cpuacct", *c = "other";
	char *both[] = { a, b, a }, *only_a[] = { a }, *a_c[] = { a, c };

	log_repeat_round(r, LOG_LEVEL_WARN, both, 3);     /* a, b: said */
	for (unsigned i = 0; i < 8; i++)
		log_repeat_round(r, LOG_LEVEL_WARN, both, 3); /* rounds 2..9: quiet */
	log_repeat_round(r, LOG_LEVEL_WARN, only_a, 1);   /* a: 10 rounds; b gone */
	log_repeat_round(r, LOG_LEVEL_WARN, a_c, 2);      /* c: new */
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_repeated_warnings_logged_once(void **state)
{
	struct log_repeat *r = log_repeat_new();
	char *text;

	(void)state;
	text = capture(rounds, r);
	assert_int_equal(count(text, "[warn]: memory.numa_stat malformed\n"), 1);
	assert_int_equal(count(text, "memory.numa_stat malformed (the same in each of the last 10 cycles)"), 1);
	assert_int_equal(count(text, "[warn]: no cpuacct\n"), 1);
	assert_int_equal(count(text, "no longer: no cpuacct (it was there for 9 cycles)"), 1);
	assert_int_equal(count(text, "[warn]: other\n"), 1);
	assert_int_equal(count(text, "\n"), 5);
	log_repeat_free(r);
	free(text);
}

/* A reader of stderr that went away (`numaorchd | head -n 1`): the lines
 * after it are an EPIPE handled once, not the end of the process. Runs
 * last: stderr stays "gone" for this process. */
static void test_broken_stderr_pipe(void **state)
{
	int p[2], saved = dup(2);

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	fflush(stderr);
	assert_true(dup2(p[1], 2) == 2);
	close(p[1]);
	assert_false(log_stderr_gone());
	for (unsigned i = 0; i < 3; i++)
		log_warn("line %u after the reader left", i);
	assert_true(log_stderr_gone());
	dup2(saved, 2);
	close(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_log_lines_are_escaped),
		cmocka_unit_test(test_repeated_warnings_logged_once),
		cmocka_unit_test(test_broken_stderr_pipe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
