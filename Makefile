# numaorch — top-level build.
#
#   make            build build/numaorchd
#   make run        install what is missing, build, run the agent in the foreground
#   make check      install what is missing, run every test (unit under ASan+UBSan,
#                   then integration on real cgroups; those needing root skip with a reason)
#   make bench      cycle CPU time and RSS on generated 10/100/1000-guest hosts
#   make check-numa boot Debian's kernel with 4 NUMA nodes under QEMU and check the agent
#                   there (part of make check; skips with a reason where QEMU cannot run),
#                   last a libvirt domain's memory moved by the agent's mover
#   make check-numa-libvirt  that last stage alone (libvirtd + QEMU inside the VM)
#   make demo       watch the agent place misplaced containers on the 4-node testbed (~1 min)
#   make bench-numa numaorchd vs numad vs kernel balancing on every testbed scenario
#                   → tests/numa-vm/results/REPORT.md (long: see tests/numa-vm/README.md)
#
# Everything lands in build/. Sources are found by wildcard: a new .c file in
# orchestrator/*/, agents/ or policies/ joins the core library; a new
# tests/unit/test_*.c becomes a unit-test binary.

CC       ?= gcc
PKG_CONFIG ?= pkg-config
BUILD    := build
# The daemon's libraries; the libvirt module (numaorch-libvirt.so, loaded by
# the daemon only where [libvirt] enabled) links VM_PKGS; the CLI
# (numaorchctl) links only CLI_PKGS.
PKGS     := numa libcgroup jansson inih libmicrohttpd
VM_PKGS  := libvirt libxml-2.0
CLI_PKGS := libcurl jansson

# Debian packages: what building needs, and what the tests need on top.
BUILD_DEPS := gcc make pkg-config libnuma-dev libcgroup-dev libjansson-dev libinih-dev \
              libmicrohttpd-dev libvirt-dev libcurl4-openssl-dev libxml2-dev
TEST_DEPS  := libcmocka-dev cgroup-tools numactl python3 strace
# numaorchctl top is tested live under tmux (send-keys, capture-pane).
TEST_DEPS  += tmux
# test_deploy parses the shipped deploy/logrotate/numaorchd with logrotate --debug.
TEST_DEPS  += logrotate
# test_deploy lints the man pages with mandoc -T lint (groff alone accepts broken .TP tags).
TEST_DEPS  += mandoc
# API tests: promtool checks /metrics, PyYAML reads api/openapi.yaml, openssl makes a TLS
# certificate, clang + its runtime build the libFuzzer target, wrk drives make bench-api.
TEST_DEPS  += prometheus python3-yaml openssl clang libclang-rt-14-dev wrk
# make check-openapi runs a real OpenAPI validator (npm's @apidevtools/swagger-parser) on
# api/openapi.yaml; the API tests check live responses against it with python3-jsonschema.
# (npm itself comes with nodesource's nodejs, or Debian's npm: check-openapi installs it
# if missing, as naming it here would conflict with the former.)
TEST_DEPS  += nodejs python3-jsonschema
# make check-libvirt: a private libvirtd (no init scripts, no autostarted daemon) and QEMU
TEST_DEPS  += libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86
# test_runtimes: containers started by real runtimes on a busybox rootfs (runc ~9 MB,
# busybox-static ~2 MB, containerd ~98 MB, podman ~88 MB with its dependencies installed;
# a private containerd per test). test_docker: docker.io ~148 MB (with the containerd and
# runc above; its packaged service is not used: the test starts a private dockerd).
TEST_DEPS  += runc busybox-static containerd podman docker.io

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) $(VM_PKGS) $(CLI_PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
VM_LIBS    := $(shell $(PKG_CONFIG) --libs $(VM_PKGS) 2>/dev/null)
CLI_LIBS   := $(shell $(PKG_CONFIG) --libs $(CLI_PKGS) 2>/dev/null)

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-unused-parameter \
            -Wstrict-prototypes -Wmissing-prototypes -Wvla
CFLAGS   ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -I. $(PKG_CFLAGS) -MMD -MP
LDLIBS   := $(PKG_LIBS) -lpthread -lm -ldl

# What is installed is hardened as dpkg-buildflags' hardening=+all hardens a
# Debian package, whoever builds it: stack protector, fortified libc calls
# (unless CFLAGS already choose a level, or -O0, which glibc warns about),
# position-independent executables and full RELRO (BIND_NOW). The sanitizer
# builds of the tests go without.
HARDEN_CFLAGS  := -fstack-protector-strong \
                  $(if $(findstring _FORTIFY_SOURCE,$(CFLAGS) $(CPPFLAGS))$(filter -O0,$(CFLAGS)),,-D_FORTIFY_SOURCE=2)
HARDEN_LDFLAGS := -Wl,-z,relro -Wl,-z,now
PIE_LDFLAGS    := -pie $(HARDEN_LDFLAGS)

SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# api/ctl_*.c and api/numaorchctl.c make the CLI; the rest of api/ is the
# server, part of the daemon's core library.
CLI_SRCS  := $(wildcard api/numaorchctl.c api/ctl_*.c)
# The NodeResourceTopology exporter (numaorch-nrt-export): its own program,
# a client of the agent and of the API server like the CLI, sharing the
# CLI's HTTP client; api/nrtx.c is its pure part.
EXPORT_SRCS := $(wildcard api/nrtx*.c)
# The libvirt module's sources, by name (the hook's helpers, agents/vmhook.c,
# are core: the hook binary links them without libvirt).
VM_SRCS   := agents/vmapply.c agents/vmjournal.c agents/vmplan.c agents/vmproc.c agents/vmsrc.c agents/vmsrc_loop.c agents/vmxml.c agents/vmplugin_export.c
CORE_SRCS := $(wildcard orchestrator/*/*.c) $(filter-out agents/numaorchd.c $(VM_SRCS),$(wildcard agents/*.c)) \
             $(wildcard policies/*.c) $(filter-out $(CLI_SRCS) $(EXPORT_SRCS),$(wildcard api/*.c))
DAEMON_SRCS := agents/numaorchd.c
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_HELPERS := $(filter-out $(UNIT_SRCS),$(wildcard tests/unit/*.c))
# The test build's hooks (tests/hooks/): linked into the unit tests,
# build/numaorchd-test, the live core tests (build/it/) and migbench in
# place of the shipped objects of the same symbols (the archive's member
# is then never pulled in): cgwfixture_hooks.c (cgroup writes into a
# fixture tree) and moverfixture_hooks.c (the mover's relocate_all). The
# shipped daemon has none of them (make check-shipped).
HOOK_SRCS := $(wildcard tests/hooks/*.c)
BENCH_SRCS := $(wildcard tests/bench/*.c)
IT_SRCS   := $(wildcard tests/integration/*.c)
IT_BINS   := $(IT_SRCS:tests/integration/%.c=$(BUILD)/it/%)

CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
VM_OBJS   := $(VM_SRCS:%.c=$(BUILD)/pic/%.o)
# Unit tests link the module's sources too, directly.
SAN_OBJS  := $(CORE_SRCS:%.c=$(BUILD)/san/%.o) $(filter-out %/vmplugin_export.o,$(VM_SRCS:%.c=$(BUILD)/san/%.o))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(BUILD)/bench/%)

.PHONY: all run check check-layers check-shipped check-unit check-openapi check-integration check-fuzz bench-api check-libvirt check-numa check-numa-libvirt bench bench-numa bench-migrate demo deps test-deps clean install deb \
	image check-image
all: $(BUILD)/numaorchd $(BUILD)/numaorch-libvirt.so $(if $(CLI_SRCS),$(BUILD)/numaorchctl) \
     $(BUILD)/numaorch-libvirt-hook $(if $(EXPORT_SRCS),$(BUILD)/numaorch-nrt-export)

# Where the installed module lives (see orchestrator/actuator/vmplugin.h).
PREFIX     ?= /usr
PKGLIBDIR  ?= $(PREFIX)/lib/numaorch
$(BUILD)/obj/orchestrator/actuator/vmplugin.o: ALL_CFLAGS += -DNUMAORCH_PKGLIBDIR='"$(PKGLIBDIR)"'

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) -fPIE -c -o $@ $<

# The module's objects: position-independent, for a shared object.
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(shell $(PKG_CONFIG) --cflags cmocka) -c -o $@ $<

$(BUILD)/libnumaorch.a: $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libnumaorch-san.a: $(SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The libvirt module resolves the core functions it calls from the daemon
# rather than carrying a second copy of them (and of their state: the log
# level, ...). The daemon exports exactly those, no more: the list is the
# module's undefined symbols that the core defines, made from the two
# builds (build/numaorchd.dynlist), and each is pulled out of the archive
# with -u. Everything else in the daemon stays private to it.
$(BUILD)/numaorchd.imports: $(BUILD)/numaorch-libvirt.so $(BUILD)/libnumaorch.a
	@nm -D --undefined-only $(BUILD)/numaorch-libvirt.so | awk '{print $$NF}' | sort -u > $@.mod
	@nm --defined-only $(BUILD)/libnumaorch.a | awk 'NF == 3 && $$2 ~ /^[TDBR]$$/ {print $$3}' | sort -u > $@.core
	@comm -12 $@.mod $@.core > $@ && rm -f $@.mod $@.core

$(BUILD)/numaorchd.dynlist: $(BUILD)/numaorchd.imports
	@{ echo '{'; sed 's/.*/  &;/' $<; echo '};'; } > $@

$(BUILD)/numaorchd: $(BUILD)/obj/agents/numaorchd.o $(BUILD)/libnumaorch.a $(BUILD)/numaorchd.dynlist
	$(CC) $(CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Wl,--dynamic-list=$(BUILD)/numaorchd.dynlist -o $@ $< \
		$$(sed 's/^/-Wl,-u,/' $(BUILD)/numaorchd.imports) $(BUILD)/libnumaorch.a $(LDLIBS)

# The daemon as the integration tests on fixture roots run it: the same
# objects plus the test hooks (tests/hooks/cgwfixture_hooks.c: ".refuse"
# files, the ".numaorch-writes" log; moverfixture_hooks.c: relocate_all,
# off unless a test turns it on). Never installed.
$(BUILD)/numaorchd-test: $(BUILD)/obj/agents/numaorchd.o $(HOOK_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/libnumaorch.a \
		$(BUILD)/numaorchd.dynlist
	$(CC) $(CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Wl,--dynamic-list=$(BUILD)/numaorchd.dynlist -o $@ $< \
		$(HOOK_SRCS:%.c=$(BUILD)/obj/%.o) \
		$$(sed 's/^/-Wl,-u,/' $(BUILD)/numaorchd.imports) $(BUILD)/libnumaorch.a $(LDLIBS)

$(BUILD)/numaorch-libvirt.so: $(VM_OBJS)
	$(CC) $(CFLAGS) $(HARDEN_LDFLAGS) $(LDFLAGS) -shared -fPIC -Wl,-soname,numaorch-libvirt.so -o $@ $^ $(VM_LIBS)

# The libvirt hook links only its pure helpers: no libvirt, no jansson.
# libvirtd runs it as root at every domain start: hardened as the rest.
$(BUILD)/numaorch-libvirt-hook: $(BUILD)/obj/deploy/libvirt/numaorch-hook.o $(BUILD)/obj/agents/vmhook.o
	$(CC) $(CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $^

# The CLI links no core library, only the one foundation file it shares
# (escaping names from the host for the terminal).
$(BUILD)/numaorchctl: $(CLI_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/orchestrator/base/utf8.o
	$(CC) $(CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $^ $(CLI_LIBS) -lm

$(BUILD)/tests/%: $(BUILD)/san/tests/unit/%.o $(UNIT_HELPERS:%.c=$(BUILD)/san/%.o) $(HOOK_SRCS:%.c=$(BUILD)/san/%.o) \
		$(BUILD)/libnumaorch-san.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) $(VM_LIBS) $(shell $(PKG_CONFIG) --libs cmocka)

# The exporter links what the CLI links: libcurl (TLS to the API server,
# verified; the agent's unix socket) and jansson, not the daemon's core.
$(BUILD)/numaorch-nrt-export: $(EXPORT_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/api/ctl_http.o
	$(CC) $(CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $^ $(CLI_LIBS)

# Its pure part's unit test links that part alone, without its main.
$(BUILD)/tests/test_nrtx: $(BUILD)/san/tests/unit/test_nrtx.o $(UNIT_HELPERS:%.c=$(BUILD)/san/%.o) \
		$(HOOK_SRCS:%.c=$(BUILD)/san/%.o) $(BUILD)/san/api/nrtx.o $(BUILD)/libnumaorch-san.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) $(VM_LIBS) $(shell $(PKG_CONFIG) --libs cmocka)

# Unit tests of the CLI's pure parts (tests/unit/test_ctl_*.c) link its
# objects, without its main, and its libraries.
$(BUILD)/tests/test_ctl_%: $(BUILD)/san/tests/unit/test_ctl_%.o $(UNIT_HELPERS:%.c=$(BUILD)/san/%.o) \
		$(HOOK_SRCS:%.c=$(BUILD)/san/%.o) $(filter-out %/numaorchctl.o,$(CLI_SRCS:%.c=$(BUILD)/san/%.o)) \
		$(BUILD)/libnumaorch-san.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) $(VM_LIBS) $(CLI_LIBS) $(shell $(PKG_CONFIG) --libs cmocka)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(BUILD)/libnumaorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Integration tests of core modules against the live host (test_mover.py).
IT_CORE_BINS := $(patsubst tests/integration/core/%.c,$(BUILD)/it/%,$(wildcard tests/integration/core/*.c))
# They link the test hooks (mover_live turns relocate_all on).
$(BUILD)/it/%: tests/integration/core/%.c $(HOOK_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/libnumaorch.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< $(HOOK_SRCS:%.c=$(BUILD)/obj/%.o) \
		$(BUILD)/libnumaorch.a $(LDLIBS)

$(BUILD)/it/%: tests/integration/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -Wno-missing-prototypes -o $@ $< -lpthread

# Installs only what is missing; uses sudo when not root.
deps:
	@./deploy/install-deps.sh $(BUILD_DEPS)

test-deps:
	@./deploy/install-deps.sh $(BUILD_DEPS) $(TEST_DEPS)

RUN_ARGS ?= --config deploy/numaorchd.conf --decision-log $(BUILD)/decisions.jsonl \
            --socket $(BUILD)/api.sock --state-dir $(BUILD)/state
run: deps
	$(MAKE) all
	$(BUILD)/numaorchd $(RUN_ARGS)

check: test-deps
	$(MAKE) check-layers
	$(MAKE) check-shipped
	$(MAKE) check-unit
	$(MAKE) check-openapi
	$(MAKE) check-integration
	$(MAKE) check-fuzz
	$(MAKE) check-libvirt
	$(MAKE) check-numa
	$(MAKE) check-deb
	$(MAKE) check-image

check-unit: $(UNIT_BINS)
	@set -e; fail=0; for t in $(UNIT_BINS); do \
		echo "== $$t"; \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			$$t || fail=1; \
	done; test $$fail = 0

# api/openapi.yaml through a real OpenAPI 3 validator: the registry's package is
# installed into build/npm the first time (nothing else is fetched).
OPENAPI_VALIDATOR := @apidevtools/swagger-parser@13.1.0
check-openapi:
	@command -v npm >/dev/null || ./deploy/install-deps.sh npm
	@test -d $(BUILD)/npm/node_modules/@apidevtools/swagger-parser || \
		npm install --no-audit --no-fund --loglevel=error --prefix $(BUILD)/npm $(OPENAPI_VALIDATOR)
	NODE_PATH=$(BUILD)/npm/node_modules node tests/openapi/validate.js api/openapi.yaml

# ARCHITECTURE.md's layering: no upward include, no include loop, policies/
# pure (from the objects' undefined symbols and its includes), no function
# over 150 lines; the checker's self-test first proves it finds each kind.
# tests/tools/layers-known.txt (empty now) may only shrink.
check-layers: $(CORE_OBJS)
	@python3 tests/tools/check_layers.py --self-test
	@python3 tests/tools/check_layers.py $(BUILD)/obj

# The shipped daemon carries no test hook: none of the hooks' marker
# strings is in build/numaorchd, and all are in build/numaorchd-test (so
# the check can tell the two apart).
check-shipped: $(BUILD)/numaorchd $(BUILD)/numaorchd-test
	@python3 tests/tools/check_shipped.py $(BUILD)/numaorchd $(BUILD)/numaorchd-test

check-integration: all $(BUILD)/numaorchd-test $(IT_BINS) $(IT_CORE_BINS)
	@./tests/integration/run.sh

# A private libvirtd + virtlogd in their own mount namespace, tiny TCG domains.
check-libvirt: all
	@./tests/integration/libvirt/run.sh

bench: $(BUILD)/numaorchd $(BENCH_BINS)
	@./tests/bench/run.sh

# The REST API under load: wrk on GET /v1/status and /v1/guests over TCP with
# 1000 guests while rebalance cycles run (tests/bench/bench_api.sh).
bench-api: all $(BENCH_BINS)
	@./tests/bench/bench_api.sh

# libFuzzer target for the API's request handling: the core built again with
# clang and coverage; run for FUZZ_SECONDS (60) from tests/fuzz/corpus.
FUZZ_CC    ?= clang
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJS  := $(CORE_SRCS:%.c=$(BUILD)/fuzz/%.o)

$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 $(filter-out -Werror,$(WARN)) -Wno-unknown-warning-option $(FUZZ_FLAGS) \
		-fsanitize=fuzzer-no-link -D_GNU_SOURCE -I. $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz/fuzz_api: $(BUILD)/fuzz/tests/fuzz/fuzz_api.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

check-fuzz:
	@if ! command -v $(FUZZ_CC) >/dev/null 2>&1; then \
		echo "check-fuzz: SKIP: $(FUZZ_CC) is not installed (Debian: clang libclang-rt-14-dev)"; exit 0; fi; \
	$(MAKE) $(BUILD)/fuzz/fuzz_api && ./tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_api

# The multi-node testbed (tests/numa-vm): in-VM helpers are static, so the
# initramfs needs no libraries for them. numavm.py fetches the kernel,
# busybox-static and numad packages into build/numa-vm and installs
# qemu-system-x86 (and gnuplot-nox for bench-numa) when missing.
NUMA_VM_BINS := $(BUILD)/numa-vm/bin/numavm-run $(BUILD)/numa-vm/bin/guestload $(BUILD)/numa-vm/bin/migbench

# make bench-migrate's benchmark links the agent's own mover (and libnuma),
# static like the other in-VM helpers, with the test build's mover hook.
MIGBENCH_SRCS := tests/numa-vm/guest/migbench.c orchestrator/mover/mover.c orchestrator/mover/mover_plan.c \
                 tests/hooks/moverfixture_hooks.c orchestrator/base/fs.c orchestrator/base/xalloc.c orchestrator/base/parse.c \
                 orchestrator/base/clock.c orchestrator/base/log.c orchestrator/base/utf8.c \
                 orchestrator/base/mask.c orchestrator/base/numamig.c orchestrator/base/hostpaths.c orchestrator/base/procstat.c \
                 orchestrator/base/numamaps.c orchestrator/model/policy.c orchestrator/model/hold.c
$(BUILD)/numa-vm/bin/migbench: $(MIGBENCH_SRCS) orchestrator/mover/mover.h orchestrator/mover/moverfixture.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -I. -static -pthread -o $@ $(MIGBENCH_SRCS) -lnuma -lm

$(BUILD)/numa-vm/bin/%: tests/numa-vm/guest/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -static -pthread -o $@ $<

check-numa: all $(NUMA_VM_BINS)
	@python3 tests/numa-vm/numavm.py check

# libvirtd and a nested TCG domain inside the 4-node VM: the agent moves
# the domain's memory through its mover (tests/numa-vm/README.md).
check-numa-libvirt: all $(NUMA_VM_BINS)
	@python3 tests/numa-vm/numavm.py check-libvirt

bench-numa: all $(NUMA_VM_BINS)
	@python3 tests/numa-vm/numavm.py bench

# The agent at work where one NUMA node is all there is: the 4-node testbed,
# three misplaced busy containers, numaorchd with deploy/numaorchd.conf, a
# live view streamed out of the VM, a summary and build/demo/demo-timeline.png.
demo: all $(NUMA_VM_BINS)
	@python3 tests/numa-vm/demo.py

# Migration speed in the testbed VM (4 nodes): raw move_pages, the mover
# with 1/2/4 workers, a cpuset.mems write; 4 KiB and THP. Run it under
# the shared lock on a shared machine.
bench-migrate: all $(NUMA_VM_BINS)
	@python3 tests/numa-vm/numavm.py script bench_migrate

# Installation layout (Debian's): make install DESTDIR=... installs what the
# packages ship; `make deb` builds them from deploy/debian/.
SBINDIR    ?= $(PREFIX)/sbin
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
# The Grafana dashboard and Prometheus rules: files for the operator's own
# Grafana and Prometheus to import, not configuration the agent reads.
SHAREDIR   ?= $(PREFIX)/share/numaorch
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
# Where bash-completion loads a command's completion from on first use.
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

install: all
	install -D -m 0755 $(BUILD)/numaorchd $(DESTDIR)$(SBINDIR)/numaorchd
	install -D -m 0644 $(BUILD)/numaorch-libvirt.so $(DESTDIR)$(PKGLIBDIR)/numaorch-libvirt.so
	$(if $(CLI_SRCS),install -D -m 0755 $(BUILD)/numaorchctl $(DESTDIR)$(BINDIR)/numaorchctl)
	install -D -m 0644 deploy/numaorchd.conf $(DESTDIR)$(SYSCONFDIR)/numaorch/numaorchd.conf
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/numaorch/numaorchd.conf.d
	install -D -m 0644 -t $(DESTDIR)$(UNITDIR) deploy/systemd/numaorchd.service \
		deploy/systemd/numaorch-rebalance.service deploy/systemd/numaorch-rebalance.timer
	install -D -m 0644 deploy/logrotate/numaorchd $(DESTDIR)$(SYSCONFDIR)/logrotate.d/numaorchd
	install -D -m 0644 -t $(DESTDIR)$(MANDIR)/man8 deploy/man/numaorchd.8
	install -D -m 0644 -t $(DESTDIR)$(MANDIR)/man5 deploy/man/numaorchd.conf.5
	$(if $(wildcard deploy/man/numaorchctl.1),install -D -m 0644 -t $(DESTDIR)$(MANDIR)/man1 deploy/man/numaorchctl.1)
	$(if $(CLI_SRCS),install -D -m 0644 deploy/bash-completion/numaorchctl $(DESTDIR)$(BASHCOMPDIR)/numaorchctl)
	$(if $(EXPORT_SRCS),install -D -m 0755 $(BUILD)/numaorch-nrt-export $(DESTDIR)$(BINDIR)/numaorch-nrt-export)
	$(if $(EXPORT_SRCS),install -D -m 0644 -t $(DESTDIR)$(MANDIR)/man8 deploy/man/numaorch-nrt-export.8)
	install -D -m 0755 $(BUILD)/numaorch-libvirt-hook $(DESTDIR)$(PREFIX)/libexec/numaorch/libvirt-hook
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d
	ln -sf $(PREFIX)/libexec/numaorch/libvirt-hook $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d/numaorch
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/grafana deploy/grafana/numaorch-dashboard.json
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/prometheus deploy/prometheus/numaorch-rules.yml

DEB_DEPS := debhelper dpkg-dev lintian
VERSION  := $(shell dpkg-parsechangelog -l deploy/debian/changelog -S Version 2>/dev/null)
DEB_SRC  := $(BUILD)/deb/numaorch-$(VERSION)
# The agent alone (no libvirt, no libcurl), the libvirt module + hook, the
# CLI: deploy/debian/<package>.install says what each ships.
DEB_PKGS := numaorch numaorch-libvirt numaorch-client

# Build the .debs from a copy of the tree with deploy/debian/ as debian/;
# dpkg-buildpackage runs the Makefile's all and install. No network.
deb:
	@./deploy/install-deps.sh $(BUILD_DEPS) $(DEB_DEPS)
	rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC)
	tar --exclude=./build --exclude=./.git -cf - . | tar -C $(DEB_SRC) -xf -
	cp -r deploy/debian $(DEB_SRC)/debian
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning $(foreach p,$(DEB_PKGS),$(BUILD)/deb/$(p)_$(VERSION)_*.deb)

# The packages' life on this machine: build + lintian, dpkg -i, run the
# installed agent and CLI, upgrade, purge (tests/deb). Needs root.
check-deb:
	@./deploy/install-deps.sh $(BUILD_DEPS) $(DEB_DEPS) systemd man-db groff
	@cd tests/deb && python3 -m unittest -v test_deb

# The container image, from the .debs (make deb; run `make deb image` after
# a change to the sources): no registry and no base image. mmdebstrap makes
# the root filesystem from the build host's own apt sources, so the image's
# release is the one the .debs were built against, with the agent and the CLI
# (the DaemonSet's probes run numaorchctl health) installed from a flat
# repository of the .debs; buildah packs it as deploy/kubernetes/Containerfile
# says, into containers-storage (where podman finds it) and a docker-archive
# for `ctr images import` or `docker load` on nodes or a push to a registry.
IMAGE          ?= localhost/numaorch:$(VERSION)
IMAGE_PACKAGES ?= numaorch numaorch-client
IMAGE_SUITE    ?= $(shell . /etc/os-release && echo $$VERSION_CODENAME)
IMAGE_SOURCES  ?= $(firstword $(wildcard /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list))
IMAGE_DIR      := $(BUILD)/image
IMAGE_ARCH     := $(shell dpkg --print-architecture 2>/dev/null)
IMAGE_DEBS      = $(foreach p,$(IMAGE_PACKAGES),$(BUILD)/deb/$(p)_$(VERSION)_$(IMAGE_ARCH).deb)
image:
	@./deploy/install-deps.sh buildah mmdebstrap dpkg-dev
	@test -n "$(IMAGE_SOURCES)" || { echo "make image: no apt sources (set IMAGE_SOURCES)"; exit 1; }
	@for d in $(IMAGE_DEBS); do test -f $$d || { $(MAKE) deb || exit 1; break; }; done
	rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)/repo
	cp $(IMAGE_DEBS) $(IMAGE_DIR)/repo/
	cd $(IMAGE_DIR)/repo && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages
	# Essential packages only (no apt: nothing is installed in the image
	# afterwards); merged /usr set up by the hook, so usr-is-merged
	# satisfies init-system-helpers rather than usrmerge and its perl.
	mmdebstrap --variant=essential --mode=root --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--include="$(IMAGE_PACKAGES)" $(IMAGE_SUITE) $(IMAGE_DIR)/rootfs.tar $(IMAGE_SOURCES) \
		"deb [trusted=yes] copy://$(abspath $(IMAGE_DIR)/repo) ./"
	buildah build --layers=false --pull=never -f deploy/kubernetes/Containerfile \
		--label org.opencontainers.image.version=$(VERSION) -t $(IMAGE) $(IMAGE_DIR)
	buildah push $(IMAGE) docker-archive:$(IMAGE_DIR)/numaorch-$(VERSION).tar:$(IMAGE)
	@echo "image $(IMAGE): $$(podman image inspect --format '{{.Size}}' $(IMAGE) 2>/dev/null | \
		awk '{printf "%.1f MiB", $$1 / 1048576}') in containers-storage; $(IMAGE_DIR)/numaorch-$(VERSION).tar"

# The image run as the DaemonSet runs it, against real containers (tests/image):
# the image is built first (in make check after check-deb, from its fresh
# .debs). Where buildah cannot run, it says why and skips.
check-image:
	@if [ "$$(id -u)" != 0 ]; then echo "check-image: skipped: needs root (buildah, privileged podman)"; exit 0; fi; \
	./deploy/install-deps.sh buildah mmdebstrap dpkg-dev podman runc busybox-static python3-yaml; \
	if ! err=$$(buildah info 2>&1 >/dev/null); then echo "check-image: skipped: buildah cannot run here: $$err"; exit 0; fi; \
	$(MAKE) image && cd tests/image && python3 -m unittest -v test_image

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
