/* Tests for agents/kubestate.c on the kubelet's checkpoints in their real
 * format (tests/fixtures/kubelet, see its README). */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/kubestate.h"
#include "orchestrator/base/fs.h"

#define FIX "tests/fixtures/kubelet/"
#define GUAR "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
#define GUAR2 "6b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e"
#define BURST "8c3e0f1a-5b6d-4e2f-9a7c-1d2e3f4a5b6c"

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len;

	assert_int_equal(fs_read_file(path, 1 << 20, &buf, &len), 0);
	return buf;
}

static int parse_file(struct kube_state *ks, bool cpu, const char *path, char *err, size_t errsz)
{
	char *t = slurp(path);
	int r = cpu ? kube_parse_cpu(ks, t, err, errsz) : kube_parse_mem(ks, t, err, errsz);

	free(t);
	return r;
}

static void fmt_cpus(const cpumask_t *m, char *buf, size_t sz)
{
	assert_int_equal(mask_format(m, buf, sz), 0);
}

static void test_fixtures(void **state)
{
	struct kube_state ks = { 0 };
	const struct kube_pod *p;
	char err[256], buf[256];

	(void)state;
	assert_int_equal(parse_file(&ks, true, FIX "cpu_manager_state", err, sizeof(err)), 0);
	assert_true(ks.cpu_static);
	fmt_cpus(&ks.shared, buf, sizeof(buf));
	assert_string_equal(buf, "0-1,3,5-7");
	assert_int_equal(ks.nr_pods, 1);
	p = kube_find(&ks, GUAR);
	assert_non_null(p);
	assert_int_equal(p->nr_excl, 1);
	assert_string_equal(p->excl_ctr, "app");
	fmt_cpus(&p->excl_cpus, buf, sizeof(buf));
	assert_string_equal(buf, "2,4");
	assert_null(kube_find(&ks, BURST));

	assert_int_equal(parse_file(&ks, false, FIX "memory_manager_state", err, sizeof(err)), 0);
	assert_true(ks.mem_static);
	assert_int_equal(ks.nr_pods, 2);
	p = kube_find(&ks, GUAR);
	assert_int_equal(p->nr_excl, 1); /* the CPU part stays */
	assert_int_equal(p->nr_numa, 1);
	assert_true(mask_test(&p->numa_nodes, 0));
	assert_int_equal(mask_count(&p->numa_nodes), 1);
	kube_owner_reason(p, buf, sizeof(buf));
	assert_string_equal(buf, "the kubelet's CPU Manager gave app exclusive CPUs 2,4; "
				 "the kubelet's Memory Manager binds app to NUMA node 0");
	p = kube_find(&ks, GUAR2);
	assert_non_null(p);
	assert_int_equal(p->nr_excl, 0);
	assert_string_equal(p->numa_ctr, "db");
	kube_owner_reason(p, buf, sizeof(buf));
	assert_string_equal(buf, "the kubelet's Memory Manager binds db to NUMA node 0");
	kube_owner_reason(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "");

	/* the CPU Manager back to none: its part goes, the memory part stays */
	assert_int_equal(parse_file(&ks, true, FIX "cpu_manager_state.none", err, sizeof(err)), 0);
	assert_false(ks.cpu_static);
	assert_true(mask_empty(&ks.shared));
	assert_int_equal(kube_find(&ks, GUAR)->nr_excl, 0);
	assert_int_equal(kube_find(&ks, GUAR)->nr_numa, 1);
	assert_int_equal(parse_file(&ks, false, FIX "memory_manager_state.none", err, sizeof(err)), 0);
	assert_false(ks.mem_static);
	assert_int_equal(ks.nr_pods, 0);
	assert_null(kube_find(&ks, GUAR));
	kube_clear(&ks);
}

struct bad_case {
	bool cpu;
	const char *text;
	const char *err;
};

static const struct bad_case bad_cases[] = {
	{ true, "", "not JSON" },
	{ true, "[]", "no \"policyName\"" },
	{ true, "{\"policyName\":\"static\",\"checksum\":1}", "\"defaultCpuSet\" is not a CPU list" },
	{ true, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-x\"}", "\"defaultCpuSet\" is not a CPU list" },
	{ true, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":[]}", "\"entries\" is not an object" },
	{ true, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{\"u\":\"1\"}}", "is not a pod's" },
	{ true, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{\"u\":{\"c\":7}}}",
	  "pod u container c: not a CPU list" },
	{ false, "{\"policyName\":\"Static\",\"entries\":{\"u\":{\"c\":{}}}}", "blocks not a list" },
	{ false, "{\"policyName\":\"Static\",\"entries\":{\"u\":{\"c\":[{\"numaAffinity\":[-1]}]}}}",
	  "bad numaAffinity" },
	{ false, "{\"policyName\":\"Static\",\"entries\":{\"u\":{\"c\":[{\"numaAffinity\":[\"0\"]}]}}}",
	  "bad numaAffinity" },
};

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct kube_state ks = { 0 };
		char err[256] = "", e2[256];

		/* what was there before is gone after a bad file */
		assert_int_equal(parse_file(&ks, true, FIX "cpu_manager_state", e2, sizeof(e2)), 0);
		assert_int_equal(parse_file(&ks, false, FIX "memory_manager_state", e2, sizeof(e2)), 0);
		assert_int_equal(c->cpu ? kube_parse_cpu(&ks, c->text, err, sizeof(err))
					: kube_parse_mem(&ks, c->text, err, sizeof(err)), -EINVAL);
		if (!strstr(err, c->err))
			fail_msg("case %zu: \"%s\" has no \"%s\"", i, err, c->err);
		if (c->cpu) {
			assert_false(ks.cpu_static);
			assert_null(kube_find(&ks, GUAR) && kube_find(&ks, GUAR)->nr_excl ? kube_find(&ks, GUAR) : NULL);
		} else {
			assert_false(ks.mem_static);
			assert_null(kube_find(&ks, GUAR2));
		}
		kube_clear(&ks);
	}
}

static void test_reserved(void **state)
{
	cpumask_t m;
	char buf[64];

	(void)state;
	assert_int_equal(kube_parse_reserved("apiVersion: kubelet.config.k8s.io/v1beta1\n"
					     "kind: KubeletConfiguration\ncpuManagerPolicy: static\n"
					     "reservedSystemCPUs: \"0,4\"\nmemoryManagerPolicy: Static\n", &m), 1);
	assert_int_equal(mask_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0,4");
	assert_int_equal(kube_parse_reserved("reservedSystemCPUs: 1-2 # the OS\n", &m), 1);
	assert_int_equal(mask_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1-2");
	assert_int_equal(kube_parse_reserved("reservedSystemCPUs: '3'\r\n", &m), 1);
	assert_int_equal(mask_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "3");
	assert_int_equal(kube_parse_reserved("kind: KubeletConfiguration\n  reservedSystemCPUs: 5\n", &m), 0);
	assert_int_equal(kube_parse_reserved("", &m), 0);
	assert_int_equal(kube_parse_reserved("reservedSystemCPUs: \"0-\"\n", &m), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_reserved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
