/* config parsing: defaults, every section, line-precise errors, lists. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/config.h"
#include "orchestrator/base/xalloc.h"

static void test_defaults_from_empty(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("", "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.mode, MODE_ENFORCE);
	assert_true(fabs(c.interval_s - 15.0) < 1e-9);
	assert_string_equal(c.api_socket, "/run/numaorch/api.sock");
	assert_int_equal(c.api_guest_metrics, CONFIG_GUEST_METRICS_DEFAULT);
	assert_null(c.decision_log);
	assert_int_equal(c.cg.nr_scopes, 0);
	assert_true(fabs(c.policy.locality_target - 0.9) < 1e-9);
	config_clear(&c);
}

static void test_full_file(void **state)
{
	struct agent_config c;
	char err[512];
	const char *text =
		"# comment\n"
		"[agent]\nmode = advise\ninterval = 2.5\ndry_run = yes\ndecision_log = /tmp/d.jsonl\n"
		"log_level = debug\n"
		"[scope]\ncgroup = /a\ncgroup = /b/c\n"
		"[containers]\nparent = /p\nrunc_root = /run/runc2\ncontainerd_root = /run/ctrd\n"
		"docker_root = /srv/docker\ndocker_config = /srv/docker.json\n"
		"[kubelet]\nroot = /srv/kubelet\nreserved_cpus = 0,4\n"
		"[policy]\nlocality_target = 80\nmax_util = 75\ncooldown = 60\nmax_moves = 2\n"
		"max_migrate_mib = 512\nmin_free_mib = 128\nmin_free_share = 10\nless_busy_margin = 20\nstart_place = no\n"
		"devices = require\n"
		"[api]\nsocket =\nlisten = 127.0.0.1:7070\ntoken_file = /etc/numaorch/token\nguest_metrics = top 20\n"
		"[libvirt]\nenabled = no\nuri = qemu:///session\n";

	(void)state;
	assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.mode, MODE_ADVISE);
	assert_true(fabs(c.interval_s - 2.5) < 1e-9);
	assert_true(c.dry_run);
	assert_string_equal(c.decision_log, "/tmp/d.jsonl");
	assert_int_equal(c.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(c.cg.nr_scopes, 2);
	assert_string_equal(c.cg.scopes[1], "/b/c");
	assert_int_equal(c.cg.nr_parents, 1);
	assert_string_equal(c.cg.runc_roots[0], "/run/runc2");
	assert_int_equal(c.cg.nr_containerd_roots, 1);
	assert_string_equal(c.cg.containerd_roots[0], "/run/ctrd");
	assert_string_equal(c.cg.docker_root, "/srv/docker");
	assert_string_equal(c.cg.docker_config, "/srv/docker.json");
	assert_string_equal(c.cg.kubelet_root, "/srv/kubelet");
	assert_string_equal(c.cg.kubelet_reserved, "0,4");
	assert_true(fabs(c.policy.locality_target - 0.8) < 1e-9);
	assert_true(fabs(c.policy.max_util - 0.75) < 1e-9);
	assert_int_equal(c.policy.cooldown_ns, 60LL * 1000000000LL);
	assert_int_equal(c.policy.max_moves, 2);
	assert_int_equal(c.policy.max_migrate_bytes, 512ULL << 20);
	/* numbers given: not auto */
	assert_false(c.policy.cooldown_auto || c.policy.max_moves_auto || c.policy.max_migrate_auto);
	assert_int_equal(c.policy.min_free_bytes, 128ULL << 20);
	assert_true(fabs(c.policy.min_free_share - 0.1) < 1e-9);
	assert_false(c.policy.start_place);
	assert_int_equal(c.policy.devices, GPOL_DEV_REQUIRE);
	assert_string_equal(c.api_socket, "");
	assert_string_equal(c.api_listen, "127.0.0.1:7070");
	assert_int_equal(c.api_guest_metrics, 20);
	assert_false(c.libvirt_enabled);
	assert_string_equal(c.libvirt_uri, "qemu:///session");

	/* copy is deep */
	struct agent_config d;
	config_copy(&d, &c);
	config_clear(&c);
	assert_string_equal(d.cg.scopes[0], "/a");
	config_clear(&d);
}

static void test_empty_value_resets_list(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("[scope]\ncgroup = /a\ncgroup =\ncgroup = /z\n", "t", &c, err,
					    sizeof(err)), 0);
	assert_int_equal(c.cg.nr_scopes, 1);
	assert_string_equal(c.cg.scopes[0], "/z");
	config_clear(&c);
}

static void test_errors(void **state)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "[agent]\nmode = fast\n", "t.conf:2: [agent] mode: must be enforce, advise or off, got \"fast\"" },
		{ "[agent]\ninterval = 0\n", "t.conf:2: [agent] interval" },
		{ "[agent]\ninterval = abc\n", "t.conf:2: [agent] interval" },
		{ "[agent]\ndry_run = maybe\n", "t.conf:2: [agent] dry_run" },
		{ "[agent]\nnope = 1\n", "t.conf:2: [agent] unknown key \"nope\"" },
		{ "[agent]\nstate_dir = relative\n", "t.conf:2: [agent] state_dir" },
		{ "\n\n[policy]\nmax_util = 150\n", "t.conf:4: [policy] max_util" },
		{ "[policy]\nmax_util = 0\n", "t.conf:2: [policy] max_util" },
		{ "[policy]\nlocality_target = -1\n", "t.conf:2: [policy] locality_target" },
		{ "[policy]\nmax_moves = 0\n", "t.conf:2: [policy] max_moves" },
		{ "[policy]\nmax_moves = 1.5\n", "t.conf:2: [policy] max_moves" },
		{ "[policy]\ncooldown = nan\n", "t.conf:2: [policy] cooldown" },
		{ "[policy]\nmax_migrate_mib = -5\n", "t.conf:2: [policy] max_migrate_mib" },
		{ "[policy]\nwhat = 1\n", "t.conf:2: [policy] unknown key \"what\"" },
		{ "[scope]\ncgroup = relative/path\n", "t.conf:2: [scope] cgroup" },
		{ "[scope]\ncgroup = /a/../b\n", "t.conf:2: [scope] cgroup" },
		{ "[containers]\nparent = /a//b\n", "t.conf:2: [containers] parent" },
		{ "[containers]\nrunc_root = run\n", "t.conf:2: [containers] runc_root" },
		{ "[api]\nsocket = rel.sock\n", "t.conf:2: [api] socket" },
		{ "[api]\nlisten = 8080\n", "t.conf:2: [api] listen" },
		{ "[api]\nlisten = 127.0.0.1:99999\n", "t.conf:2: [api] listen: must be ADDR:PORT with a port 0..65535" },
		{ "[api]\nlisten = 127.0.0.1:65536\n", "t.conf:2: [api] listen" },
		{ "[api]\nlisten = 127.0.0.1:-1\n", "t.conf:2: [api] listen" },
		{ "[api]\nlisten = 127.0.0.1:http\n", "t.conf:2: [api] listen" },
		{ "[api]\nlisten = 127.0.0.1:\n", "t.conf:2: [api] listen" },
		{ "[api]\ntls_cert = /c\ntoken_file = /t\nlisten = :1\n", "tls_cert and tls_key" },
		{ "[libvirt]\nuri =\n", "t.conf:2: [libvirt] uri" },
		{ "[weird]\na = b\n", "t.conf:2: unknown section [weird]" },
		{ "x = 1\n", "t.conf:1: key \"x\" outside any [section]" },
		{ "[agent]\nno equals sign\n", "t.conf:2: syntax error" },
		{ "[agent\n", "t.conf:1: syntax error" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct agent_config c;
		char err[512] = "";

		memset(&c, 0x5a, sizeof(c));
		int r = config_load_string(cases[i].text, "t.conf", &c, err, sizeof(err));
		if (r != -EINVAL || !strstr(err, cases[i].want))
			fail_msg("case %u: r=%d err=\"%s\", want \"%s\"", i, r, err, cases[i].want);
		/* OUT untouched on error */
		assert_int_equal(((unsigned char *)&c)[0], 0x5a);
	}
}

static void test_first_error_wins(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("[agent]\nmode = x\n[policy]\nmax_util = 500\n", "t", &c, err,
					    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:2: [agent] mode"));
}

/* Lines inih cannot take whole (Debian builds it with a 200-byte line
 * buffer) are an error with their number, never split: the tail of a
 * long commented-out line was parsed as a live setting. */
static void test_long_lines(void **state)
{
	char *text, err[512], *dir = tu_mkdtemp(), path[4096];
	struct agent_config c;

	(void)state;
	text = xasprintf("[agent]\n#%0198dmode = off\n", 0);
	assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: line longer than 198 characters"));
	free(text);
	/* A long value, not split into a shorter one and a stray line. */
	text = xasprintf("[agent]\nmode = advise\n\nstate_dir = /%0190d\n", 0);
	assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:4: line longer than"));
	free(text);
	/* 198 characters and the newline fit; so does a last line without one. */
	text = xasprintf("[agent]\n#%0197d\nmode = advise\n# %0196d", 0, 0);
	assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.mode, MODE_ADVISE);
	config_clear(&c);
	free(text);
	/* An error before the long line is the one reported. */
	text = xasprintf("[agent]\nmode = x\n#%0300d\n", 0);
	assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: [agent] mode"));
	free(text);
	/* In a file and in a drop-in. */
	text = xasprintf("[agent]\n#%04000dmode = off\n", 0);
	tu_write(dir, "main.conf", "[agent]\nmode = advise\n");
	tu_write(dir, "main.conf.d/50-long.conf", text);
	snprintf(path, sizeof(path), "%s/main.conf", dir);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "main.conf.d/50-long.conf:2: line longer than"));
	tu_write(dir, "main.conf", text);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "main.conf:2: line longer than"));
	free(text);
	tu_rm_rf(dir);
	free(dir);
}

static void test_listen_ports(void **state)
{
	(void)state;
	assert_true(config_listen_valid("127.0.0.1:65535"));
	assert_true(config_listen_valid("[::1]:1"));
	assert_true(config_listen_valid("*:0"));      /* a free port */
	assert_false(config_listen_valid("127.0.0.1:99999"));
	assert_false(config_listen_valid("127.0.0.1:18446744073709551616"));
	assert_false(config_listen_valid("127.0.0.1: 80"));
	assert_false(config_listen_valid("127.0.0.1:0x50"));
}

static void test_missing_file(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load("/nonexistent/numaorch.conf", &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot open"));
}

static void test_schedule_section(void **state)
{
	struct agent_config c, d;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("[schedule]\nwindow = Mon-Fri 08:00-18:00 mode=advise\n"
					    "window = * 22:00-06:00 max_migrate_mib=16384\n", "t", &c, err,
					    sizeof(err)), 0);
	assert_int_equal(c.schedule.n, 2);
	assert_int_equal(c.schedule.e[1].v.max_migrate_bytes, 16384ULL << 20);
	config_copy(&d, &c);
	config_clear(&c);
	assert_string_equal(d.schedule.e[0].text, "Mon-Fri 08:00-18:00 mode=advise");
	config_clear(&d);

	assert_int_equal(config_load_string("[schedule]\n\nwindow = Mon 25:00-26:00 mode=off\n", "t", &c,
					    err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:3: [schedule] window: hours"));
	assert_int_equal(config_load_string("[schedule]\nwhen = now\n", "t", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:2: [schedule] unknown key"));
}

static void test_drop_ins(void **state)
{
	char *dir = tu_mkdtemp(), path[4096], err[512];
	struct agent_config c;

	(void)state;
	tu_write(dir, "main.conf", "[agent]\ninterval = 5\n[scope]\ncgroup = /a\n");
	tu_write(dir, "main.conf.d/20-late.conf", "[agent]\ninterval = 7\n");
	tu_write(dir, "main.conf.d/10-early.conf", "[agent]\ninterval = 6\nmode = advise\n[scope]\ncgroup = /b\n");
	tu_write(dir, "main.conf.d/README", "not a drop-in: no .conf suffix\n");
	snprintf(path, sizeof(path), "%s/main.conf", dir);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), 0);
	assert_true(c.interval_s == 7.0);             /* later file wins */
	assert_int_equal(c.mode, MODE_ADVISE);
	assert_int_equal(c.cg.nr_scopes, 2);          /* repeatable keys add up */
	config_clear(&c);

	tu_write(dir, "main.conf.d/30-bad.conf", "[policy]\nmax_util = 0\n");
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "main.conf.d/30-bad.conf:2: [policy] max_util"));
	tu_rm_rf(dir);
	free(dir);
}

static void test_guest_metrics(void **state)
{
	static const struct { const char *v; unsigned want; } t[] = {
		{ "off", 0 }, { "all", CONFIG_GUEST_METRICS_ALL }, { "top 1", 1 }, { "top  250", 250 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct agent_config c;
		char text[128], err[512];

		snprintf(text, sizeof(text), "[api]\nguest_metrics = %s\n", t[i].v);
		assert_int_equal(config_load_string(text, "t.conf", &c, err, sizeof(err)), 0);
		assert_int_equal(c.api_guest_metrics, t[i].want);
		config_clear(&c);
	}
}

static void test_shipped_config_parses(void **state)
{
	struct agent_config c, d;
	char err[512];

	(void)state;
	assert_int_equal(config_load("deploy/numaorchd.conf", &c, err, sizeof(err)), 0);
	/* the shipped file states the defaults, but the mode: a first install
	 * advises until the operator enables enforcement */
	config_default(&d);
	assert_int_equal(d.mode, MODE_ENFORCE);
	assert_int_equal(c.mode, MODE_ADVISE);
	assert_true(fabs(c.interval_s - d.interval_s) < 1e-9);
	assert_memory_equal(&c.policy, &d.policy, sizeof(c.policy));
	assert_string_equal(c.api_socket, d.api_socket);
	assert_int_equal(c.api_guest_metrics, d.api_guest_metrics);
	/* every migrating move a cycle may decide gets a worker at once: a
	 * job queued behind another waits for that one's whole move */
	assert_true(d.mover_workers >= d.policy.max_moves);
	assert_int_equal(c.mover_workers, d.mover_workers);
	config_clear(&c);
	config_clear(&d);
}

/* max_moves, max_migrate_mib and cooldown take "auto" (the defaults);
 * a number after it (a drop-in's) holds as given, and auto after a
 * number sizes again. */
static void test_policy_auto_keys(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	config_default(&c);
	assert_true(c.policy.max_moves_auto && c.policy.max_migrate_auto && c.policy.cooldown_auto);
	config_clear(&c);
	assert_int_equal(config_load_string("[policy]\nmax_moves = 6\nmax_migrate_mib = 100\ncooldown = 50\n"
					    "max_moves = auto\nmax_migrate_mib = auto\ncooldown = auto\n",
					    "t.conf", &c, err, sizeof(err)), 0);
	assert_true(c.policy.max_moves_auto && c.policy.max_migrate_auto && c.policy.cooldown_auto);
	config_clear(&c);
	assert_int_equal(config_load_string("[policy]\nmax_moves = auto\nmax_moves = 6\ncooldown = auto\n"
					    "cooldown = 50\n", "t.conf", &c, err, sizeof(err)), 0);
	assert_false(c.policy.max_moves_auto);
	assert_int_equal(c.policy.max_moves, 6);
	assert_false(c.policy.cooldown_auto);
	assert_int_equal(c.policy.cooldown_ns, 50LL * 1000000000LL);
	assert_true(c.policy.max_migrate_auto);
	config_clear(&c);
	assert_int_equal(config_load_string("[policy]\nmax_moves = autox\n", "t.conf", &c, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.conf:2: [policy] max_moves: must be auto or an integer 1..10000, got \"autox\"");
}

/* The key table: every key takes its bad value with a message naming its
 * section and key and what it must be, and the config struct (heap)
 * is freed with config_free. */
static void test_every_key_checks_its_value(void **state)
{
	static const struct { const char *sec, *key, *bad, *says; } t[] = {
		{ "agent", "mode", "fast", "must be enforce, advise or off" },
		{ "agent", "interval", "0.01", "must be seconds 0.1..86400" },
		{ "agent", "sample", "61", "must be seconds 0.05..60" },
		{ "agent", "watch", "-1", "must be seconds 0..60" },
		{ "agent", "history", "-1", "must be seconds 0..86400" },
		{ "agent", "log_level", "loud", "must be error, warn, info or debug" },
		{ "agent", "state_dir", "rel", "must be an absolute path" },
		{ "agent", "dry_run", "maybe", "must be yes or no" },
		{ "agent", "log_syslog", "2", "must be yes or no" },
		{ "agent", "freeze_during_migration", "x", "must be yes or no" },
		{ "agent", "memory_binding", "hard", "must be soft or strict" },
		{ "scope", "cgroup", "a/../b", "is not an absolute cgroup path" },
		{ "containers", "parent", "rel", "is not an absolute cgroup path" },
		{ "containers", "runc_root", "rel", "must be an absolute path" },
		{ "containers", "containerd_root", "rel", "must be an absolute path" },
		{ "containers", "docker_root", "rel", "must be an absolute path" },
		{ "containers", "docker_config", "daemon.json", "must be an absolute path" },
		{ "kubelet", "root", "rel", "must be an absolute path" },
		{ "kubelet", "reserved_cpus", "0-", "must be a CPU list" },
		{ "policy", "locality_target", "101", "must be a number 0..100 (percent)" },
		{ "policy", "cpu_headroom", "1001", "must be a number 0..1000 (percent)" },
		{ "policy", "mem_headroom", "x", "must be a number 0..1000 (percent)" },
		{ "policy", "less_busy_margin", "-1", "must be a number 0..100 (percent)" },
		{ "policy", "max_util", "0", "must be a number 1..100 (percent)" },
		{ "policy", "rebalance_util", "200", "must be a number 0..100 (percent)" },
		{ "policy", "min_cpu", "5000", "must be a number of CPUs 0..4096" },
		{ "policy", "cooldown", "604801", "must be auto or seconds 0..604800" },
		{ "policy", "max_moves", "0", "must be auto or an integer 1..10000" },
		{ "policy", "max_moves", "autox", "must be auto or an integer 1..10000, got \"autox\"" },
		{ "policy", "max_migrate_mib", "1.5", "must be auto or an integer of MiB" },
		{ "policy", "cooldown", "Auto", "must be auto or seconds" },
		{ "policy", "min_free_mib", "-3", "must be an integer of MiB" },
		{ "policy", "min_free_share", "101", "must be a number 0..100 (percent)" },
		{ "policy", "devices", "always", "must be prefer, require or ignore" },
		{ "api", "socket", "rel", "must be an absolute path" },
		{ "api", "listen", "8080", "must be ADDR:PORT" },
		{ "api", "guest_metrics", "some", "must be off, all or top N (N 1..1000000)" },
		{ "api", "guest_metrics", "top 0", "must be off, all or top N" },
		{ "api", "guest_metrics", "top", "must be off, all or top N" },
		{ "api", "guest_metrics", "50", "must be off, all or top N" },
		{ "libvirt", "enabled", "sure", "must be yes or no" },
		{ "libvirt", "uri", "", "must not be empty" },
		{ "libvirt", "module", "rel.so", "must be an absolute path" },
		{ "libvirt", "keepalive_interval", "61", "must be an integer 1..60" },
		{ "libvirt", "keepalive_count", "0", "must be an integer 1..60" },
		{ "libvirt", "place_on_start", "x", "must be yes or no" },
		{ "libvirt", "place_vcpu_load", "0", "must be a number 1..100 (percent)" },
		{ "libvirt", "cpus_without_memory", "x", "must be local, never or always" },
		{ "memory", "kernel_balancing", "x", "must be auto, defer or migrate" },
		{ "memory", "mover", "x", "must be yes or no" },
		{ "memory", "workers", "17", "must be an integer 1..16" },
		{ "memory", "rate_mib", "-1", "must be MiB/s 0..1048576 (0: no limit)" },
		{ "memory", "chunk_ms", "0", "must be milliseconds 1..1000" },
		{ "memory", "job_timeout", "0", "must be seconds 1..86400" },
		{ "schedule", "window", "Mon", "[schedule] window: " },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct agent_config *c = calloc(1, sizeof(*c));
		char text[256], err[512], head[128];

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", t[i].sec, t[i].key, t[i].bad);
		assert_int_equal(config_load_string(text, "t.conf", c, err, sizeof(err)), -EINVAL);
		snprintf(head, sizeof(head), "t.conf:2: [%s] %s: ", t[i].sec, t[i].key);
		if (strncmp(err, head, strlen(head)) != 0 || !strstr(err, t[i].says))
			fail_msg("%s %s = %s: got \"%s\"", t[i].sec, t[i].key, t[i].bad, err);
		/* a good file into the same heap struct, freed with the object */
		assert_int_equal(config_load_string("[agent]\nmode = advise\n", "t.conf", c, err, sizeof(err)), 0);
		assert_int_equal(c->mode, MODE_ADVISE);
		config_free(c);
	}
	config_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_from_empty),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_empty_value_resets_list),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_first_error_wins),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_shipped_config_parses),
		cmocka_unit_test(test_guest_metrics),
		cmocka_unit_test(test_schedule_section),
		cmocka_unit_test(test_drop_ins),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_listen_ports),
		cmocka_unit_test(test_policy_auto_keys),
		cmocka_unit_test(test_every_key_checks_its_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
