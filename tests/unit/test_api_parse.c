/* The API's pure parsers and writers: request targets (urlq), strict JSON
 * bodies (jreq), the Prometheus text writer (promtext). Tables. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jreq.h"
#include "api/jsonw.h"
#include "api/promtext.h"
#include "api/urlq.h"
#include "orchestrator/base/utf8.h"

static void test_urlq_targets(void **state)
{
	static const struct {
		const char *target;
		int ret;
		unsigned nsegs;
		const char *seg_last;
		const char *key, *val;
	} t[] = {
		{ "/v1/status", 0, 2, "status", NULL, NULL },
		{ "/", 0, 0, NULL, NULL, NULL },
		{ "/metrics", 0, 1, "metrics", NULL, NULL },
		{ "/v1/guests/docker-abc", 0, 3, "docker-abc", NULL, NULL },
		{ "/v1/guests/%2e%2e", 0, 3, "..", NULL, NULL },          /* decoded; the id rule refuses it */
		{ "/v1/guests/a%2Fb", 0, 3, "a/b", NULL, NULL },          /* stays one segment */
		{ "/v1/%67uests", 0, 2, "guests", NULL, NULL },
		{ "/v1/guests?kind=vm&node=1", 0, 2, "guests", "kind", "vm" },
		{ "/v1/guests?runtime=a+b", 0, 2, "guests", "runtime", "a b" },
		{ "/v1/guests?runtime=%C3%A9", 0, 2, "guests", "runtime", "\xc3\xa9" },
		{ "/v1/decisions?since", 0, 2, "decisions", "since", "" },
		{ "/v1/x?a=1&&b=2&", 0, 2, "x", "a", "1" },
		{ "/v1/status/", -ENOENT, 0, NULL, NULL, NULL },
		{ "//v1", -ENOENT, 0, NULL, NULL, NULL },
		{ "v1/status", -ENOENT, 0, NULL, NULL, NULL },
		{ "", -ENOENT, 0, NULL, NULL, NULL },
		{ "http://host/v1/status", -ENOENT, 0, NULL, NULL, NULL },   /* absolute-form: not ours */
		{ "/a/b/c/d/e/f/g/h/i", -ENOENT, 0, NULL, NULL, NULL },
		{ "/v1/guests/%zz", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%4", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%00", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%0a", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%ff", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/%c0%af", -EINVAL, 0, NULL, NULL, NULL },       /* overlong '/' */
		{ "/v1/guests/%ed%a0%80", -EINVAL, 0, NULL, NULL, NULL },    /* surrogate */
		{ "/v1/guests/\xff", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/a b", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests/a\"b", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/status#frag", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests?kind=vm&kind=vm", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests?k=%", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests?k=a%00", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests?k=\x01", -EINVAL, 0, NULL, NULL, NULL },
		{ "/v1/guests?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15&p=16&q=17",
		  -E2BIG, 0, NULL, NULL, NULL },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct urlq q;
		const char *why = NULL;
		int r = urlq_parse(t[i].target, &q, &why);

		if (r != t[i].ret)
			fail_msg("%s: got %d (%s), want %d", t[i].target, r, why ? why : "", t[i].ret);
		if (r < 0) {
			if (r == -EINVAL || r == -E2BIG)
				assert_non_null(why);
			continue;
		}
		assert_int_equal(q.nr_segs, t[i].nsegs);
		if (t[i].seg_last)
			assert_string_equal(q.segs[q.nr_segs - 1], t[i].seg_last);
		if (t[i].key)
			assert_string_equal(urlq_get(&q, t[i].key), t[i].val);
		urlq_clear(&q);
	}
	{
		char *big = malloc(URLQ_MAX_LEN + 10);
		struct urlq q;
		const char *why;

		memset(big, 'a', URLQ_MAX_LEN + 9);
		big[0] = '/';
		big[URLQ_MAX_LEN + 9] = '\0';
		assert_int_equal(urlq_parse(big, &q, &why), -E2BIG);
		free(big);
	}
}

static void test_utf8(void **state)
{
	static const struct { const char *s; bool ok; } t[] = {
		{ "", true }, { "abc", true }, { "\xc3\xa9", true }, { "\xe2\x82\xac", true },
		{ "\xf0\x9f\x98\x80", true }, { "\xc3", false }, { "\x80", false }, { "\xc0\x80", false },
		{ "\xe0\x80\xaf", false }, { "\xed\xa0\x80", false }, { "\xf4\x90\x80\x80", false },
		{ "\xf5\x80\x80\x80", false }, { "a\xe2\x82", false },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (urlq_utf8_valid(t[i].s, strlen(t[i].s)) != t[i].ok)
			fail_msg("case %u: want %d", i, t[i].ok);
}

static void test_jreq(void **state)
{
	static const char *const allowed[] = { "a", "b", "s", "flag", NULL };
	struct jreq_err e;
	json_t *o;
	double d;
	int64_t i;
	bool b;
	const char *s;

	(void)state;
	assert_int_equal(jreq_parse_object("", 0, &o, &e), -EINVAL);
	assert_int_equal(jreq_parse_object("[1]", 3, &o, &e), -EINVAL);
	assert_string_equal(e.field, "");
	assert_int_equal(jreq_parse_object("{\"a\":1,\"a\":2}", 13, &o, &e), -EINVAL);
	assert_int_equal(jreq_parse_object("{\"a\":1} x", 9, &o, &e), -EINVAL);
	assert_int_equal(jreq_parse_object("{\"a\":\"\\u0000\"}", 14, &o, &e), -EINVAL);

	const char *body = "{\"a\": 1.5, \"b\": 7, \"s\": \"hi\", \"flag\": true}";
	assert_int_equal(jreq_parse_object(body, strlen(body), &o, &e), 0);
	assert_int_equal(jreq_only(o, allowed, &e), 0);
	assert_int_equal(jreq_number(o, "a", 0, 2, NULL, &d, &e), 1);
	assert_true(d == 1.5);
	assert_int_equal(jreq_number(o, "b", 0, 2, "percent", &d, &e), -EINVAL);
	assert_string_equal(e.field, "b");
	assert_string_equal(e.msg, "b: must be a number 0..2 (percent), got 7");
	assert_int_equal(jreq_int(o, "b", 1, 10, NULL, &i, &e), 1);
	assert_int_equal(i, 7);
	assert_int_equal(jreq_int(o, "a", 1, 10, NULL, &i, &e), -EINVAL);  /* 1.5 is no integer */
	assert_int_equal(jreq_bool(o, "flag", &b, &e), 1);
	assert_true(b);
	assert_int_equal(jreq_bool(o, "a", &b, &e), -EINVAL);
	assert_int_equal(jreq_string(o, "s", 16, &s, &e), 1);
	assert_string_equal(s, "hi");
	assert_int_equal(jreq_string(o, "s", 1, &s, &e), -EINVAL);
	assert_int_equal(jreq_string(o, "missing", 16, &s, &e), 0);
	assert_int_equal(jreq_string(o, "b", 16, &s, &e), -EINVAL);
	assert_false(e.unknown);
	json_object_set_new(o, "we\"ird\x01", json_true());
	assert_int_equal(jreq_only(o, allowed, &e), -EINVAL);
	assert_true(e.unknown);
	assert_string_equal(e.field, "we?ird?");
	assert_non_null(strstr(e.msg, "unknown field (known: a, b, s, flag)"));
	json_decref(o);
}

/* The known fields of PUT /v1/policy filled a 200-byte list exactly and
 * lost the last letter ("schedul"); a longer list ends in "...", never in
 * part of a name. */
static void test_jreq_unknown_lists_whole_names(void **state)
{
	static const char *const policy[] = {
		"mode", "interval", "revision", "locality_target", "cpu_headroom", "mem_headroom",
		"less_busy_margin", "max_util", "rebalance_util", "min_cpu", "cooldown", "max_moves",
		"max_migrate_mib", "min_free_mib", "min_free_share", "schedule", NULL,
	};
	const char *many[60];
	char names[59][16];
	struct jreq_err e;
	json_t *o = json_pack("{s:i}", "foo", 1);

	(void)state;
	assert_int_equal(jreq_only(o, policy, &e), -EINVAL);
	assert_string_equal(e.msg, "foo: unknown field (known: mode, interval, revision, locality_target, "
				   "cpu_headroom, mem_headroom, less_busy_margin, max_util, rebalance_util, "
				   "min_cpu, cooldown, max_moves, max_migrate_mib, min_free_mib, min_free_share, "
				   "schedule)");
	for (unsigned i = 0; i < 59; i++) {
		snprintf(names[i], sizeof(names[i]), "field_%02u", i);
		many[i] = names[i];
	}
	many[59] = NULL;
	assert_int_equal(jreq_only(o, many, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "field_00, field_01"));
	{
		const char *end = strstr(e.msg, ", ...)");
		const char *last = end;

		assert_non_null(end);
		assert_int_equal(end[6], '\0');
		while (last > e.msg && last[-1] != ' ')
			last--;
		assert_int_equal(strncmp(last, "field_", 6), 0);
		assert_int_equal(end - last, 8); /* a whole name before the "..." */
	}
	json_decref(o);
}

static void test_promtext(void **state)
{
	struct prom p;
	char *text;
	size_t len;

	(void)state;
	prom_init(&p);
	prom_family(&p, "x_total", "counter", "Help with \\ and\nnewline.");
	prom_sample(&p, "x_total", 3, 0);
	prom_sample(&p, "x_total", 0.25, 2, "a", "q\"u\\o\nte", "b", "");
	prom_sample(&p, "x_total", NAN, 0);
	prom_sample(&p, "x_total", INFINITY, 0);
	prom_sample(&p, "x_total", -INFINITY, 0);
	prom_sample(&p, "x_total", 1796029460.123, 0);
	/* Force growth past the first buffer. */
	for (int i = 0; i < 2000; i++)
		prom_sample(&p, "y", i, 1, "i", "abcdefghijklmnopqrstuvwxyz");
	text = prom_take(&p, &len);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "# HELP x_total Help with \\\\ and\\nnewline.\n# TYPE x_total counter\n"
				     "x_total 3\nx_total{a=\"q\\\"u\\\\o\\nte\",b=\"\"} 0.25\nx_total NaN\n"
				     "x_total +Inf\nx_total -Inf\nx_total 1796029460.123\n"));
	assert_non_null(strstr(text, "y{i=\"abcdefghijklmnopqrstuvwxyz\"} 1999\n"));
	free(text);
	prom_free(&p);
}

static void test_jsonw(void **state)
{
	struct jw w;
	char *text;
	size_t len;
	json_t *j;

	(void)state;
	jw_init(&w, 4);  /* tiny: forces growth */
	jw_obj(&w);
	jw_key(&w, "s");
	jw_str(&w, "q\"b\\n\n\x01\x7f\xc3\xa9\xff\xe2\x82");
	jw_key(&w, "a");
	jw_arr(&w);
	jw_int(&w, -5);
	jw_real(&w, 0.123456);
	jw_real(&w, 2);
	jw_real(&w, NAN);
	jw_null(&w);
	jw_obj(&w);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_key(&w, "n");
	jw_str(&w, NULL);
	jw_obj_end(&w);
	text = jw_take(&w, &len);
	assert_int_equal(strlen(text), len);
	assert_string_equal(text, "{\"s\":\"q\\\"b\\\\n\\n\\u0001\x7f\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
			    "\"a\":[-5,0.1235,2.0,null,null,{}],\"n\":\"\"}");
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "s")),
			    "q\"b\\n\n\x01\x7f\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	json_decref(j);
	free(text);
	jw_free(&w);
}

/* TEXT with each byte that is not part of well-formed UTF-8 replaced by
 * U+FFFD: what jsonw writes for such bytes, and jansson then accepts. */
static char *fffd_for_bad_bytes(const char *text)
{
	size_t left = strlen(text), n = 0;
	char *out = malloc(3 * left + 1);

	while (left) {
		size_t k = utf8_seq(text, left);

		if (k) {
			memcpy(out + n, text, k);
			n += k;
		} else {
			memcpy(out + n, "\xef\xbf\xbd", 3);
			n += 3;
			k = 1;
		}
		text += k;
		left -= k;
	}
	out[n] = '\0';
	return out;
}

/* One escaping rule for the API's two writers: a string jsonw writes is
 * the text json_dumps writes for it (as the other answers use jansson),
 * and a string jansson refuses (not UTF-8) is written as jansson would
 * write it with each bad byte replaced by U+FFFD. */
static void test_jsonw_escapes_as_jansson(void **state)
{
	static const struct {
		const char *s;
		bool utf8;       /* jansson takes it as it is */
	} t[] = {
		{ "", true },
		{ "plain-ascii_0123 ~!@#$%^&*()", true },
		{ "quote\" backslash\\ slash/ \\u0041", true },
		{ "\b\f\n\r\t", true },
		{ "\x01\x02\x1b[31m\x1f", true },                  /* C0 controls, ESC */
		{ "del\x7f", true },                                 /* DEL: jansson leaves it */
		{ "c1 \xc2\x80 \xc2\x9b" "31m \xc2\x9f", true },         /* C1 controls */
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", true },     /* 2-, 3-, 4-byte */
		{ "\xe2\x80\xa8 \xe2\x80\xa9 \xef\xbb\xbf \xef\xbf\xbf", true },  /* U+2028/9, BOM, U+FFFF */
		{ "\xf4\x8f\xbf\xbf", true },                         /* U+10FFFF */
		{ "bad\xff\xfename", false },
		{ "\x80 lone continuation", false },
		{ "\xc3 truncated", false },
		{ "truncated at the end \xe2\x82", false },
		{ "overlong \xc0\xaf \xe0\x80\xaf", false },
		{ "surrogate \xed\xa0\x80", false },
		{ "beyond U+10FFFF \xf4\x90\x80\x80", false },
		{ "\xf5\x80\x80\x80", false },
		{ "mixed \x01\xff\"\xc3\xa9\\\x7f\xc2", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jw w;
		char *mine, *fixed = fffd_for_bad_bytes(t[i].s), *theirs;
		json_t *j = json_string(t[i].utf8 ? t[i].s : fixed), *raw;

		assert_non_null(j);
		raw = json_string(t[i].s);
		assert_int_equal(raw != NULL, t[i].utf8); /* the table says what jansson takes */
		json_decref(raw);
		theirs = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
		jw_init(&w, 0);
		jw_str(&w, t[i].s);
		mine = jw_take(&w, NULL);
		if (strcmp(mine, theirs) != 0)
			fail_msg("case %zu: jsonw %s, jansson %s", i, mine, theirs);
		free(mine);
		free(theirs);
		free(fixed);
		json_decref(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urlq_targets),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_jreq),
		cmocka_unit_test(test_jreq_unknown_lists_whole_names),
		cmocka_unit_test(test_promtext),
		cmocka_unit_test(test_jsonw),
		cmocka_unit_test(test_jsonw_escapes_as_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
