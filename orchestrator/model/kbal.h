/* kbal.h — working beside the kernel's own NUMA balancing.
 *
 * With kernel.numa_balancing on, the kernel migrates a page on the fault
 * that finds it remote from the running thread, inside the task's allowed
 * nodes. The agent chooses the nodes and moves the CPUs; who then moves a
 * guest's memory is this module's rule ([memory] kernel_balancing):
 *
 *   defer    the agent places the CPUs and widens cpuset.mems to old ∪ new
 *            (which migrates nothing); the kernel moves the memory on fault;
 *   migrate  the agent migrates the memory itself, as with balancing off;
 *   auto     defer for a guest whose threads run (the kernel scans only
 *            running tasks), migrate for an idle one, whose memory the
 *            kernel would never touch.
 *
 * A strictly bound guest (memory_binding = strict, pinned) is always
 * migrated by the agent: its mems must end narrow, and narrowing is a
 * migration. Pure: no I/O.
 */
#ifndef NUMAORCH_KBAL_H
#define NUMAORCH_KBAL_H

#include <stdbool.h>

enum kbal_setting {
	KBAL_AUTO = 0,
	KBAL_DEFER,
	KBAL_MIGRATE,
};

enum kbal_action {
	KBAL_ACT_MIGRATE = 0,  /* the agent moves the pages */
	KBAL_ACT_DEFER,        /* the kernel's balancing does, on fault */
};

/* What the kernel was measured doing with a guest's memory, as the rule
 * takes it (kflow_judge, kflow.h). */
enum kbal_flow {
	KBAL_FLOW_UNMEASURED = 0, /* nothing measured, or nothing to say: the rule as above */
	KBAL_FLOW_MOVING,         /* moving it toward its threads fast enough */
	KBAL_FLOW_SHORT,          /* it runs and the kernel moved none toward its threads over
				   * a whole window, or too little to finish in time */
};

/* A guest using at least this many CPUs counts as running for auto. */
#define KBAL_BUSY_CPUS 0.25

/* Names from one table; NULL / -EINVAL for what is out of range. */
const char *kbal_setting_name(enum kbal_setting s);
int kbal_setting_parse(const char *s, enum kbal_setting *out);
const char *kbal_action_name(enum kbal_action a);

/* Does the kernel migrate pages on fault? NUMA_BALANCING (the value's
 * bit 0: 1, or 3 with memory tiering). BALANCING < 0: unknown. */
bool kbal_kernel_moves(int balancing);

/* Who moves this guest's memory. CPU_USE in CPUs, NAN if unknown (then
 * auto migrates: nothing says the kernel will see its threads run). */
enum kbal_action kbal_decide(enum kbal_setting s, int balancing, bool strict, double cpu_use);
/* kbal_decide with the kernel's measured FLOW: for auto, a guest whose
 * flow falls short is migrated by the agent, since waiting for the
 * kernel is measured not to work; unmeasured or moving, kbal_decide's
 * answer (a guest the kernel moves fast enough is held before this,
 * plan_mark_kernel_holds). defer and migrate are the operator's: unchanged. */
enum kbal_action kbal_decide_flow(enum kbal_setting s, int balancing, bool strict, double cpu_use,
				  enum kbal_flow flow);

#endif
