/* agents/vmxml.c: the domain facts and numaorch's policy element taken
 * from libvirt domain XML (as `virsh dumpxml` prints it). */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "agents/vmxml.h"

#define UUID "6112aa7d-0765-49e7-a90f-029606270916"

static int parse(const char *xml, struct vmxml_info *x)
{
	char err[200];

	return vmxml_parse(xml, strlen(xml), x, err, sizeof(err));
}

/* A live XML as libvirt 9 prints it, trimmed. */
static const char *live_xml =
	"<domain type='qemu' id='1'>\n"
	"  <name>nt-vm1</name>\n"
	"  <uuid>" UUID "</uuid>\n"
	"  <metadata>\n"
	"    <other:thing xmlns:other='http://example.org/other'><policy mode='ignore'/></other:thing>\n"
	"    <numaorch:policy xmlns:numaorch=\"urn:numaorch:libvirt:1\" mode=\"pinned\" nodes=\"0-1,3\"/>\n"
	"  </metadata>\n"
	"  <memory unit='KiB'>131072</memory>\n"
	"  <currentMemory unit='KiB'>65536</currentMemory>\n"
	"  <vcpu placement='static' current='2'>4</vcpu>\n"
	"  <numatune>\n"
	"    <memory mode='restrictive' nodeset='0'/>\n"
	"  </numatune>\n"
	"  <resource><partition>/machine</partition></resource>\n"
	"  <os><type arch='x86_64' machine='pc-i440fx-7.2'>hvm</type></os>\n"
	"</domain>\n";

static void test_live_xml(void **state)
{
	struct vmxml_info x;
	char nodes[32];

	(void)state;
	assert_int_equal(parse(live_xml, &x), 0);
	assert_string_equal(x.uuid, UUID);
	assert_string_equal(x.name, "nt-vm1");
	assert_int_equal(x.vcpus, 2);
	assert_int_equal(x.mem_bytes, 64ULL << 20);
	assert_true(x.has_numatune);
	assert_string_equal(x.numatune_mode, "restrictive");
	assert_string_equal(x.numatune_nodeset, "0");
	assert_int_equal(x.nr_memnodes_bound, 0);
	assert_true(vmxml_numatune_movable(&x));
	/* the other namespace's <policy> is not ours */
	assert_true(x.has_policy);
	assert_string_equal(x.policy_error, "");
	assert_int_equal(x.policy.mode, GPOL_PINNED);
	assert_int_equal(x.policy.source, GPOL_SRC_METADATA);
	mask_format(&x.policy.nodes, nodes, sizeof(nodes));
	assert_string_equal(nodes, "0-1,3");
}

static void test_minimal_no_numatune(void **state)
{
	struct vmxml_info x;
	const char *xml = "<domain type='kvm'><name>a</name><uuid>" UUID "</uuid>"
			  "<memory unit='MiB'>128</memory><vcpu>3</vcpu></domain>";

	(void)state;
	assert_int_equal(parse(xml, &x), 0);
	assert_int_equal(x.vcpus, 3);
	assert_int_equal(x.mem_bytes, 128ULL << 20);
	assert_false(x.has_numatune);
	assert_false(x.has_policy);
	assert_true(vmxml_numatune_movable(&x));
	assert_int_equal(x.policy.mode, GPOL_AUTO);
}

/* libvirt refuses live nodeset changes unless the mode is restrictive;
 * a <memory> without mode is strict. */
static void test_numatune_modes(void **state)
{
	static const struct { const char *nt; const char *mode; bool movable; unsigned bound; } t[] = {
		{ "<memory nodeset='0'/>", "strict", false, 0 },
		{ "<memory mode='strict' nodeset='0-1'/>", "strict", false, 0 },
		{ "<memory mode='preferred' nodeset='1'/>", "preferred", false, 0 },
		{ "<memory mode='interleave' nodeset='0-1'/>", "interleave", false, 0 },
		{ "<memory mode='restrictive' nodeset='0'/>", "restrictive", true, 0 },
		{ "<memory mode='strict' placement='auto'/>", "strict", false, 0 },
		{ "<memory mode='restrictive' nodeset='0-1'/><memnode cellid='0' mode='strict' nodeset='0'/>"
		  "<memnode cellid='1' mode='restrictive' nodeset='1'/>", "restrictive", false, 1 },
		{ "<memnode cellid='0' nodeset='0'/>", "", false, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char xml[512];
		struct vmxml_info x;

		snprintf(xml, sizeof(xml), "<domain><name>a</name><uuid>%s</uuid><numatune>%s</numatune></domain>",
			 UUID, t[i].nt);
		assert_int_equal(parse(xml, &x), 0);
		assert_string_equal(x.numatune_mode, t[i].mode);
		assert_int_equal(x.nr_memnodes_bound, t[i].bound);
		assert_int_equal(vmxml_numatune_movable(&x), t[i].movable);
	}
}

static void test_policy_attrs(void **state)
{
	static const struct { const char *mode, *nodes; int ret; enum gpol_mode m; } t[] = {
		{ "auto", NULL, 0, GPOL_AUTO },
		{ "ignore", NULL, 0, GPOL_IGNORE },
		{ "pinned", "1", 0, GPOL_PINNED },
		{ "pinned", NULL, -EINVAL, GPOL_AUTO },
		{ "pinned", "", -EINVAL, GPOL_AUTO },
		{ "pinned", "x", -EINVAL, GPOL_AUTO },
		{ "auto", "0", -EINVAL, GPOL_AUTO },
		{ "Pinned", "0", -EINVAL, GPOL_AUTO },
		{ NULL, "0", -EINVAL, GPOL_AUTO },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct guest_policy p = { .mode = GPOL_AUTO };
		char err[160] = "";

		assert_int_equal(vmxml_policy_from_attrs(t[i].mode, t[i].nodes, &p, err, sizeof(err)), t[i].ret);
		if (t[i].ret == 0) {
			assert_int_equal(p.mode, t[i].m);
			assert_int_equal(p.source, GPOL_SRC_METADATA);
		} else {
			assert_true(strlen(err) > 0);
		}
	}
}

/* A bad element is reported, not fatal: the domain keeps the default. */
static void test_bad_policy_is_a_warning(void **state)
{
	struct vmxml_info x;
	const char *bad = "<domain><name>a</name><uuid>" UUID "</uuid><metadata>"
			  "<n:policy xmlns:n='urn:numaorch:libvirt:1' mode='sideways'/></metadata></domain>";
	const char *twice = "<domain><name>a</name><uuid>" UUID "</uuid><metadata>"
			    "<n:policy xmlns:n='urn:numaorch:libvirt:1' mode='ignore'/>"
			    "<m:policy xmlns:m='urn:numaorch:libvirt:1' mode='auto'/></metadata></domain>";
	/* matched by namespace, not by prefix */
	const char *prefix = "<domain><name>a</name><uuid>" UUID "</uuid><metadata>"
			     "<numaorch:policy xmlns:numaorch='urn:other' mode='ignore'/></metadata></domain>";

	(void)state;
	assert_int_equal(parse(bad, &x), 0);
	assert_false(x.has_policy);
	assert_non_null(strstr(x.policy_error, "sideways"));
	assert_int_equal(parse(twice, &x), 0);
	assert_false(x.has_policy);
	assert_non_null(strstr(x.policy_error, "more than one"));
	assert_int_equal(parse(prefix, &x), 0);
	assert_false(x.has_policy);
	assert_string_equal(x.policy_error, "");
}

/* OUT read from XML after BEFORE (NULL: its first read) at wall clock
 * NOW: when its policy was set, as vmxml_policy_carry says. */
static int64_t set_at(const char *xml, const struct vmxml_info *before, int64_t now, struct vmxml_info *out)
{
	assert_int_equal(parse(xml, out), 0);
	vmxml_policy_carry(out, before, now);
	return out->policy.set_real_ns;
}

/* When a metadata policy was set: not known at a domain's first read;
 * the time of the read that first saw it changed (a pin set since the
 * guest's last move is not held by its cool-down); the same policy keeps
 * its time; no policy, no time. */
static void test_policy_set_time(void **state)
{
#define POLICY_XML(attrs) "<domain><name>a</name><uuid>" UUID "</uuid><metadata>" \
			  "<n:policy xmlns:n='urn:numaorch:libvirt:1' " attrs "/></metadata></domain>"
	const char *pin0 = POLICY_XML("mode='pinned' nodes='0'"), *pin01 = POLICY_XML("mode='pinned' nodes='0-1'");
	const char *ignore = POLICY_XML("mode='ignore'");
	struct vmxml_info a, b, c, d, none;

	(void)state;
	assert_true(set_at(pin0, NULL, 1000, &a) == 0 && a.has_policy);
	/* read again unchanged: still not known */
	assert_true(set_at(pin0, &a, 2000, &b) == 0);
	/* widened to 0-1: set at this read, and kept while it stays so */
	assert_true(set_at(pin01, &b, 3000, &c) == 3000);
	assert_true(set_at(pin01, &c, 4000, &d) == 3000);
	/* another mode over the same (no) nodes is a change too */
	assert_true(set_at(ignore, &d, 5000, &a) == 5000);
	/* removed: no policy, no time; put back: set at that read */
	assert_true(set_at("<domain><name>a</name><uuid>" UUID "</uuid></domain>", &a, 6000, &none) == 0);
	assert_false(none.has_policy);
	assert_true(set_at(ignore, &none, 7000, &b) == 7000);
#undef POLICY_XML
}

static void test_not_a_domain(void **state)
{
	struct vmxml_info x;

	(void)state;
	assert_int_equal(parse("<domain><name>a</name>", &x), -EINVAL);
	assert_int_equal(parse("<network><uuid>" UUID "</uuid></network>", &x), -EINVAL);
	assert_int_equal(parse("<domain><name>a</name><uuid>nope</uuid></domain>", &x), -EINVAL);
	/* an external entity is not loaded: the parse fails or keeps it literal */
	assert_int_equal(parse("<!DOCTYPE d [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>"
			       "<domain><name>&e;</name><uuid>" UUID "</uuid></domain>", &x) == 0 ?
			 (strstr(x.name, "root") == NULL) : 1, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_xml),
		cmocka_unit_test(test_minimal_no_numatune),
		cmocka_unit_test(test_numatune_modes),
		cmocka_unit_test(test_policy_attrs),
		cmocka_unit_test(test_bad_policy_is_a_warning),
		cmocka_unit_test(test_policy_set_time),
		cmocka_unit_test(test_not_a_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
