/* config.h — numaorchd's configuration: INI file (parsed with inih) plus
 * command-line overrides. Parsed into a new struct, validated, then
 * swapped in by the caller; a bad file never replaces a good config
 * (STYLE.md §9).
 */
#ifndef NUMAORCH_CONFIG_H
#define NUMAORCH_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "orchestrator/model/kbal.h"
#include "orchestrator/base/log.h"
#include "orchestrator/model/mode.h"
#include "orchestrator/model/policy.h"
#include "orchestrator/store/schedule.h"
#include "orchestrator/model/source.h"
#include "orchestrator/actuator/vmplugin.h"

/* [api] guest_metrics = all; the default keeps a 1000-guest host's
 * scrape near a thousand per-guest series instead of eleven thousand. */
#define CONFIG_GUEST_METRICS_ALL UINT_MAX
#define CONFIG_GUEST_METRICS_DEFAULT 100

struct agent_config {
	enum agent_mode mode;
	double interval_s;          /* between cycles */
	double sample_s;            /* rate window for the very first cycle */
	double watch_s;             /* guests' CPU counters between cycles (agents/drift.h); 0: off */
	double history_s;           /* per-guest history window (history.h); 0: the last cycles */
	bool dry_run;
	char *decision_log;         /* JSON Lines file, NULL: none */
	char *state_dir;
	enum log_level log_level;
	bool log_syslog;
	bool freeze_during_migration; /* freeze a guest while its memory moves */
	bool strict_mems;           /* memory_binding = strict (default soft) */

	struct cgscan_config cg;    /* scopes, parents, runc roots */
	struct policy_config policy;

	/* REST API */
	char *api_socket;           /* unix socket path, "" disables */
	char *api_listen;           /* "ADDR:PORT", NULL: no TCP */
	char *api_token_file;
	char *api_tls_cert;
	char *api_tls_key;
	/* Guests with per-guest series on /metrics: 0 none, CONFIG_GUEST_METRICS_ALL
	 * every one, else the N with the most memory ([api] guest_metrics). */
	unsigned api_guest_metrics;

	/* libvirt VM source */
	bool libvirt_enabled;
	char *libvirt_uri;
	char *libvirt_module;                /* path of numaorch-libvirt.so, NULL: the default */
	unsigned libvirt_keepalive_interval; /* seconds between keepalive probes */
	unsigned libvirt_keepalive_count;    /* unanswered probes before the connection is dropped */
	bool libvirt_place_on_start;         /* initial placement of a starting domain */
	double libvirt_place_vcpu_load;      /* CPUs each vCPU is expected to use at start, 0..1 */
	enum vm_cpus_without_memory libvirt_cpus_without_memory; /* vmplugin.h */

	/* [memory]: how memory follows a move (kbal.h, mover.h) */
	enum kbal_setting kernel_balancing;  /* kbal.h */
	double kernel_follow_s;              /* the kernel's flow must finish within (kflow.h) */
	bool mover;                          /* the agent's mover (move_pages) vs the cpuset.mems write */
	unsigned mover_workers;              /* jobs run in parallel */
	double mover_rate_mib;               /* host-wide MiB/s, 0: no limit */
	double mover_chunk_ms;               /* each move_pages call's target duration */
	bool mover_on_target;                /* a job's worker runs on its target nodes' CPUs */
	double mover_job_timeout_s;          /* a job still running after this stops */

	/* [schedule] windows whose settings override the above (schedule.h). */
	struct schedule schedule;
};

/* Built-in defaults (what an empty file means). */
void config_default(struct agent_config *c);
/* Free C's members (C itself is the caller's: on the stack, in a struct);
 * C is all zero after. Accepts NULL. */
void config_clear(struct agent_config *c);
/* config_clear, then free C (one from the heap, such as a reload's new
 * config). Accepts NULL. */
void config_free(struct agent_config *c);
/* Deep copy. */
void config_copy(struct agent_config *dst, const struct agent_config *src);

/* Parse PATH on top of the defaults into OUT, then every "*.conf" in PATH.d
 * drop-in in name order (later files override earlier ones; repeatable
 * keys add up). On error returns -EINVAL (or -errno if a file cannot be
 * read) and writes one line to ERR such as
 * "numaorchd.conf:12: [policy] max_util: must be 1..100, got 150". OUT is
 * written only on success. A missing PATH is an error; a missing PATH.d
 * is not. */
int config_load(const char *path, struct agent_config *out, char *err, size_t errsz);
/* Same, from a string (tests, API). NAME is used in messages. */
int config_load_string(const char *text, const char *name, struct agent_config *out,
		       char *err, size_t errsz);

/* true if A and B differ in a setting the sources, the applier or the
 * libvirt module are built from (scopes, parents, runc roots, the room
 * reserve, freezing, mems binding, [libvirt]): the engine rebuilds them. */
bool config_sources_differ(const struct agent_config *a, const struct agent_config *b);

/* Cross-field checks; 0 or -EINVAL with ERR filled. */
int config_validate(const struct agent_config *c, char *err, size_t errsz);
/* An [api] listen / --listen value: ADDR:PORT with PORT a decimal number
 * 0..65535 (0: a free port the kernel picks). */
bool config_listen_valid(const char *v);

/* Append to a string list (scopes, parents). */
void strv_push(unsigned *n, char ***v, const char *s);
void strv_free(unsigned *n, char ***v);

#endif
