/* Enum names from one table (orchestrator/base/strtab.h): for every enum with
 * names, each value has one, distinct from the others; the value after the
 * last has none (NULL: a new enumerator without a name fails here); and
 * where there is a parser, name → value → name round-trips and what is not
 * a name (or NULL) is -EINVAL with the output untouched. */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "agents/vmsrc.h"
#include "orchestrator/actuator/apply.h"
#include "orchestrator/base/cghier.h"
#include "orchestrator/store/config.h"
#include "orchestrator/model/mode.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/model/snapshot.h"
#include "orchestrator/base/strtab.h"
#include "orchestrator/actuator/vmplugin.h"
#include "orchestrator/model/plan.h"

typedef const char *(*name_fn)(long v);
typedef int (*parse_fn)(const char *s, long *out);

/* Every enum here is int-sized; wrap each pair with long in/out. */
#define WRAP_NAME(fn, type) static const char *w_##fn(long v) { return fn((type)v); }
#define WRAP_PARSE(fn, type)                                                   \
	static int w_##fn(const char *s, long *out)                            \
	{                                                                      \
		type v = (type)12345;                                          \
		int r = fn(s, &v);                                             \
		*out = (long)v;                                                \
		return r;                                                      \
	}

WRAP_NAME(apply_status_name, enum apply_status)
WRAP_NAME(cgh_layout_name, enum cg_layout)
WRAP_NAME(cgh_ctrl_name, enum cg_ctrl)
WRAP_NAME(agent_mode_name, enum agent_mode)
WRAP_PARSE(agent_mode_parse, enum agent_mode)
WRAP_NAME(engine_libvirt_state_name, enum engine_libvirt_state)
WRAP_NAME(kbal_setting_name, enum kbal_setting)
WRAP_PARSE(kbal_setting_parse, enum kbal_setting)
WRAP_NAME(kbal_action_name, enum kbal_action)
WRAP_NAME(log_level_name, enum log_level)
WRAP_PARSE(log_level_parse, enum log_level)
WRAP_NAME(mover_state_name, enum mover_state)
WRAP_NAME(snap_kind_name, enum guest_kind)
WRAP_NAME(snap_loc_source_name, enum loc_source)
WRAP_NAME(gpol_mode_name, enum gpol_mode)
WRAP_PARSE(gpol_mode_parse, enum gpol_mode)
WRAP_NAME(gpol_source_name, enum gpol_source)
WRAP_NAME(vm_cpus_without_memory_name, enum vm_cpus_without_memory)
WRAP_PARSE(vm_cpus_without_memory_parse, enum vm_cpus_without_memory)
WRAP_NAME(plan_kind_name, enum plan_kind)
WRAP_NAME(move_reason_name, enum move_reason)
WRAP_NAME(skip_reason_name, enum skip_reason)
WRAP_NAME(vmsrc_action_name, enum vmsrc_action)

static const struct tab {
	const char *what;
	name_fn name;
	parse_fn parse;          /* NULL: names only */
	long nr;                 /* values 0..nr-1 */
	const char *first;       /* the name of 0, as the API and config spell it */
} tabs[] = {
	{ "apply_status", w_apply_status_name, NULL, APPLY_REFUSED + 1, "moved" },
	{ "cg_layout", w_cgh_layout_name, NULL, CG_LAYOUT_HYBRID + 1, "none" },
	{ "cg_ctrl", w_cgh_ctrl_name, NULL, CGC_NR, "cpuset" },
	{ "agent_mode", w_agent_mode_name, w_agent_mode_parse, MODE_OFF + 1, "enforce" },
	{ "engine_libvirt_state", w_engine_libvirt_state_name, NULL, LIBVIRT_CONNECTED + 1, "disabled" },
	{ "kbal_setting", w_kbal_setting_name, w_kbal_setting_parse, KBAL_MIGRATE + 1, "auto" },
	{ "kbal_action", w_kbal_action_name, NULL, KBAL_ACT_DEFER + 1, "migrate" },
	{ "log_level", w_log_level_name, w_log_level_parse, LOG_LEVEL_DEBUG + 1, "error" },
	{ "mover_state", w_mover_state_name, NULL, MJ_NR_STATES, "queued" },
	{ "guest_kind", w_snap_kind_name, NULL, GUEST_VM + 1, "container" },
	{ "loc_source", w_snap_loc_source_name, NULL, LOC_ESTIMATE + 1, "one_node" },
	{ "gpol_mode", w_gpol_mode_name, w_gpol_mode_parse, GPOL_IGNORE + 1, "auto" },
	{ "gpol_source", w_gpol_source_name, NULL, GPOL_SRC_METADATA + 1, "default" },
	{ "vm_cpus_without_memory", w_vm_cpus_without_memory_name, w_vm_cpus_without_memory_parse,
	  VM_CPUS_ALWAYS + 1, "local" },
	{ "plan_kind", w_plan_kind_name, NULL, PLAN_SETTLED + 1, "move" },
	{ "move_reason", w_move_reason_name, NULL, REASON_PLACE + 1, "none" },
	{ "skip_reason", w_skip_reason_name, NULL, SKIP_MEM_UNKNOWN + 1, "none" },
	{ "vmsrc_action", w_vmsrc_action_name, NULL, VMSRC_REFRESH + 1, "none" },
};

static void test_every_value_named_once(void **state)
{
	for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++) {
		const struct tab *x = &tabs[t];

		assert_non_null(x->name(0));
		assert_string_equal(x->name(0), x->first);
		for (long v = 0; v < x->nr; v++) {
			const char *n = x->name(v);

			if (!n || !*n)
				fail_msg("%s: value %ld has no name", x->what, v);
			for (long w = 0; w < v; w++)
				if (strcmp(x->name(w), n) == 0)
					fail_msg("%s: values %ld and %ld are both \"%s\"", x->what, w, v, n);
		}
		if (x->name(x->nr) != NULL)
			fail_msg("%s: %ld is past the last value but named \"%s\"", x->what, x->nr, x->name(x->nr));
		assert_null(x->name(-1));
		assert_null(x->name(1000));
	}
}

static void test_parse_round_trip(void **state)
{
	for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++) {
		const struct tab *x = &tabs[t];
		long v;

		if (!x->parse)
			continue;
		for (long k = 0; k < x->nr; k++) {
			assert_int_equal(x->parse(x->name(k), &v), 0);
			if (v != k)
				fail_msg("%s: \"%s\" parses to %ld, not %ld", x->what, x->name(k), v, k);
		}
		assert_int_equal(x->parse("bogus", &v), -EINVAL);
		assert_int_equal(v, 12345);
		assert_int_equal(x->parse(NULL, &v), -EINVAL);
		assert_int_equal(x->parse("", &v), -EINVAL);
	}
}

/* Spellings beyond the table that callers rely on. */
static void test_log_level_spellings(void **state)
{
	enum log_level l;

	assert_int_equal(log_level_parse("WARNING", &l), 0);
	assert_int_equal(l, LOG_LEVEL_WARN);
	assert_int_equal(log_level_parse("Debug", &l), 0);
	assert_int_equal(l, LOG_LEVEL_DEBUG);
	/* the other parsers are exact */
	enum agent_mode m;
	assert_int_equal(agent_mode_parse("Enforce", &m), -EINVAL);
}

static void test_strtab_helpers(void **state)
{
	static const char *const t[] = { [0] = "a", [2] = "c" };

	assert_string_equal(strtab_name(t, STRTAB_ELEMS(t), 0), "a");
	assert_null(strtab_name(t, STRTAB_ELEMS(t), 1));   /* a hole */
	assert_null(strtab_name(t, STRTAB_ELEMS(t), 3));
	assert_null(strtab_name(t, STRTAB_ELEMS(t), -1));
	assert_int_equal(strtab_index(t, STRTAB_ELEMS(t), "c", 0), 2);
	assert_int_equal(strtab_index(t, STRTAB_ELEMS(t), "C", 0), -EINVAL);
	assert_int_equal(strtab_index(t, STRTAB_ELEMS(t), "C", 1), 2);
	assert_int_equal(strtab_index(t, STRTAB_ELEMS(t), "b", 1), -EINVAL);
	assert_int_equal(strtab_index(t, STRTAB_ELEMS(t), NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_value_named_once),
		cmocka_unit_test(test_parse_round_trip),
		cmocka_unit_test(test_log_level_spellings),
		cmocka_unit_test(test_strtab_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
