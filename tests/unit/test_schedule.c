/* schedule windows with a fake clock: midnight crossings, day-of-week,
 * overlaps, parse errors. */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "orchestrator/store/config.h"
#include "orchestrator/store/schedule.h"

enum { SUN, MON, TUE, WED, THU, FRI, SAT };
#define HM(h, m) ((h) * 60 + (m))

static struct sched_entry parse_ok(const char *text)
{
	struct sched_entry e;
	char err[256] = "";

	if (sched_parse(text, &e, err, sizeof(err)) != 0)
		fail_msg("\"%s\": %s", text, err);
	return e;
}

static void test_business_hours(void **state)
{
	struct sched_entry e = parse_ok("Mon-Fri 08:00-18:00 mode=advise");

	(void)state;
	assert_true(sched_active(&e, MON, HM(8, 0)));
	assert_true(sched_active(&e, FRI, HM(17, 59)));
	assert_false(sched_active(&e, FRI, HM(18, 0)));   /* end exclusive */
	assert_false(sched_active(&e, MON, HM(7, 59)));
	assert_false(sched_active(&e, SAT, HM(12, 0)));
	assert_false(sched_active(&e, SUN, HM(12, 0)));
	assert_int_equal(e.v.set, SCHED_MODE);
	assert_int_equal(e.v.mode, MODE_ADVISE);
	sched_entry_clear(&e);
}

static void test_across_midnight(void **state)
{
	/* Friday night into Saturday morning, but not Saturday night. */
	struct sched_entry e = parse_ok("Fri 22:00-06:00 max_migrate_mib=16384");

	(void)state;
	assert_false(sched_active(&e, FRI, HM(21, 59)));
	assert_true(sched_active(&e, FRI, HM(22, 0)));
	assert_true(sched_active(&e, FRI, HM(23, 59)));
	assert_true(sched_active(&e, SAT, HM(0, 0)));
	assert_true(sched_active(&e, SAT, HM(5, 59)));
	assert_false(sched_active(&e, SAT, HM(6, 0)));
	assert_false(sched_active(&e, SAT, HM(22, 30)));
	assert_false(sched_active(&e, FRI, HM(3, 0)));   /* that is Thursday's night */
	assert_int_equal(e.v.max_migrate_bytes, 16384ULL << 20);
	sched_entry_clear(&e);
}

static void test_sunday_night_wraps_to_monday(void **state)
{
	struct sched_entry e = parse_ok("Sun 23:00-01:00 max_moves=20");

	(void)state;
	assert_true(sched_active(&e, SUN, HM(23, 30)));
	assert_true(sched_active(&e, MON, HM(0, 30)));
	assert_false(sched_active(&e, SAT, HM(23, 30)));
	assert_false(sched_active(&e, SUN, HM(0, 30)));
	sched_entry_clear(&e);
}

/* A window may set the auto settings back to auto (policy.h). */
static void test_window_auto(void **state)
{
	struct sched_entry e = parse_ok("* 22:00-06:00 max_moves=auto max_migrate_mib=auto cooldown=auto");

	(void)state;
	assert_int_equal(e.v.set, SCHED_MAX_MOVES | SCHED_MAX_MIGRATE | SCHED_COOLDOWN);
	assert_int_equal(e.v.max_moves, SCHED_AUTO_MOVES);
	assert_true(e.v.max_migrate_bytes == SCHED_AUTO_MIGRATE);
	assert_int_equal(e.v.cooldown_ns, SCHED_AUTO_COOLDOWN);
	sched_entry_clear(&e);
}

static void test_day_lists_and_wrapping_ranges(void **state)
{
	struct sched_entry a = parse_ok("Sat,Sun 00:00-24:00 mode=enforce");
	struct sched_entry b = parse_ok("Fri-Mon 12:00-13:00 cooldown=60");
	struct sched_entry c = parse_ok("* 03:00-04:00 interval=5");
	struct sched_entry d = parse_ok("mon-wed,fri 09:30-10:00 mode=off");

	(void)state;
	assert_true(sched_active(&a, SAT, HM(0, 0)));
	assert_true(sched_active(&a, SUN, HM(23, 59)));
	assert_false(sched_active(&a, MON, HM(0, 0)));
	for (int day = 0; day < 7; day++) {
		bool want = day == FRI || day == SAT || day == SUN || day == MON;

		assert_int_equal(sched_active(&b, day, HM(12, 30)), want);
		assert_true(sched_active(&c, day, HM(3, 15)));
	}
	assert_true(sched_active(&d, TUE, HM(9, 45)));
	assert_false(sched_active(&d, THU, HM(9, 45)));
	assert_true(sched_active(&d, FRI, HM(9, 45)));
	assert_int_equal(b.v.cooldown_ns, 60LL * 1000000000LL);
	sched_entry_clear(&a);
	sched_entry_clear(&b);
	sched_entry_clear(&c);
	sched_entry_clear(&d);
}

static void test_overlaps_later_wins(void **state)
{
	struct schedule s = { 0 };
	struct sched_values v;
	uint64_t active;
	struct sched_entry e;

	(void)state;
	e = parse_ok("* 00:00-24:00 mode=advise max_moves=2");
	sched_add(&s, &e);
	e = parse_ok("* 22:00-06:00 mode=enforce max_migrate_mib=8192");
	sched_add(&s, &e);
	e = parse_ok("Sun 23:00-23:30 max_moves=1");
	sched_add(&s, &e);

	sched_effective(&s, WED, HM(12, 0), &v, &active);
	assert_int_equal(active, 1);
	assert_int_equal(v.mode, MODE_ADVISE);
	assert_int_equal(v.max_moves, 2);
	assert_false(v.set & SCHED_MAX_MIGRATE);

	sched_effective(&s, WED, HM(23, 0), &v, &active);
	assert_int_equal(active, 3);
	assert_int_equal(v.mode, MODE_ENFORCE);      /* later entry wins */
	assert_int_equal(v.max_moves, 2);            /* only the first sets it */
	assert_int_equal(v.max_migrate_bytes, 8192ULL << 20);

	sched_effective(&s, SUN, HM(23, 10), &v, &active);
	assert_int_equal(active, 7);
	assert_int_equal(v.max_moves, 1);

	struct schedule c;
	sched_copy(&c, &s);
	sched_clear(&s);
	sched_effective(&c, MON, HM(2, 0), &v, &active);
	assert_int_equal(active, 3);
	assert_string_equal(c.e[1].text, "* 22:00-06:00 mode=enforce max_migrate_mib=8192");
	sched_clear(&c);

	sched_effective(NULL, MON, 0, &v, &active);
	assert_int_equal(v.set, 0);
}

/* a window sets the mover's rate budget; 0 lifts it; later wins */
static void test_rate_window(void **state)
{
	struct schedule s = { 0 };
	struct sched_values v;
	struct sched_entry e;

	(void)state;
	e = parse_ok("Mon-Fri 08:00-18:00 rate_mib=50");
	assert_true(e.v.set & SCHED_RATE);
	assert_true(e.v.rate_mib == 50);
	sched_add(&s, &e);
	e = parse_ok("* 12:00-13:00 rate_mib=0");
	sched_add(&s, &e);
	sched_effective(&s, WED, HM(9, 0), &v, NULL);
	assert_true(v.set & SCHED_RATE);
	assert_true(v.rate_mib == 50);
	sched_effective(&s, WED, HM(12, 30), &v, NULL);
	assert_true(v.set & SCHED_RATE);
	assert_true(v.rate_mib == 0);
	sched_effective(&s, SUN, HM(9, 0), &v, NULL);
	assert_false(v.set & SCHED_RATE);
	sched_clear(&s);
}

static void test_parse_errors(void **state)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "", "empty window" },
		{ "Mon", "hours" },
		{ "Mon 8-18 mode=advise", "hours" },
		{ "Mon 08:00-18:60 mode=advise", "hours" },
		{ "Mon 24:00-02:00 mode=advise", "hours" },
		{ "Mon 08:00-08:00 mode=advise", "empty window" },
		{ "Mon 08:00-18:00", "at least one setting" },
		{ "Funday 08:00-18:00 mode=advise", "days" },
		{ "Mon- 08:00-18:00 mode=advise", "days" },
		{ "Mon 08:00-18:00 mode=fast", "mode" },
		{ "Mon 08:00-18:00 max_moves=0", "max_moves" },
		{ "Mon 08:00-18:00 max_moves=autox", "max_moves: must be auto or an integer" },
		{ "Mon 08:00-18:00 interval=0", "interval" },
		{ "Mon 08:00-18:00 cooldown=-1", "cooldown" },
		{ "Mon 08:00-18:00 max_migrate_mib=lots", "max_migrate_mib" },
		{ "Mon 08:00-18:00 rate_mib=-1", "rate_mib" },
		{ "Mon 08:00-18:00 rate_mib=fast", "rate_mib" },
		{ "Mon 08:00-18:00 rate_mib=2000000", "rate_mib" },
		{ "Mon 08:00-18:00 colour=blue", "unknown setting" },
		{ "Mon 08:00-18:00 mode", "KEY=VALUE" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sched_entry e;
		char err[256] = "";

		if (sched_parse(cases[i].text, &e, err, sizeof(err)) != -EINVAL || !strstr(err, cases[i].want))
			fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[i].text, err, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_business_hours),
		cmocka_unit_test(test_rate_window),
		cmocka_unit_test(test_across_midnight),
		cmocka_unit_test(test_sunday_night_wraps_to_monday),
		cmocka_unit_test(test_window_auto),
		cmocka_unit_test(test_day_lists_and_wrapping_ranges),
		cmocka_unit_test(test_overlaps_later_wins),
		cmocka_unit_test(test_parse_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
