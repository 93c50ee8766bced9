/* nrtx.h — numaorch-nrt-export's pure parts: the NodeResourceTopology
 * object it writes to the API server, whether a new reading of the agent
 * is worth a write, and the next step of a create-or-update exchange. No
 * I/O and no clock: the program (nrtx_main.c) passes the time in.
 */
#ifndef NUMAORCH_NRTX_H
#define NUMAORCH_NRTX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define NRTX_API_PATH "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
/* The label every object the exporter writes carries, so an operator can
 * list (and delete) them: kubectl get noderesourcetopologies -l ... */
#define NRTX_MANAGED_BY "numaorch-nrt-export"

/* The object to write for NODE from the agent's GET /v1/topology reply
 * AGENT: apiVersion and kind fixed, metadata rebuilt (name NODE, the
 * managed-by label, resourceVersion RV when not NULL: an update), the
 * zones, attributes and topologyPolicies copied. Returns a new reference,
 * or NULL (with ERR filled) when AGENT is not a topology object. */
json_t *nrtx_object(const json_t *agent, const char *node, const char *rv, char *err, size_t errsz);

/* Whether A and B (agent replies or objects from nrtx_object) say the
 * same thing about the node: the whole object but metadata and the
 * attributes that change with every reading whatever the host does (when
 * it was measured, the snapshot's number, the sampling window). */
int nrtx_same(const json_t *a, const json_t *b);

struct nrtx_sched {
	int written;           /* an object was written (or found equal) once */
	uint64_t last_write_ns; /* monotonic time of that write */
	uint64_t retry_at_ns;  /* after a failure: not before this */
	unsigned failures;     /* failed syncs in a row */
};

enum nrtx_why { NRTX_SKIP, NRTX_FIRST, NRTX_CHANGED, NRTX_HEARTBEAT, NRTX_RETRY };

/* Whether to write now, and why: at the start, after a failure once its
 * back-off has passed, when the content CHANGED, or when HEARTBEAT_NS
 * passed since the last write (so a reader sees the object is kept up). */
enum nrtx_why nrtx_decide(const struct nrtx_sched *s, int changed, uint64_t now_ns, uint64_t heartbeat_ns);
const char *nrtx_why_name(enum nrtx_why w);

/* The wait after FAILURES failed syncs in a row: BASE_NS doubled each
 * time, at most MAX_NS. */
uint64_t nrtx_backoff(unsigned failures, uint64_t base_ns, uint64_t max_ns);

/* One exchange with the API server: GET the object; 404: POST it; 200:
 * PUT it with the resourceVersion just read; a 409 (someone wrote in
 * between, or it was created meanwhile) reads again and tries once more. */
enum nrtx_step { NRTX_GET, NRTX_POST, NRTX_PUT, NRTX_DONE, NRTX_FAIL };

/* The step after STEP answered STATUS; *RETRIED says whether the one
 * retry after a conflict is spent (set when it is taken). */
enum nrtx_step nrtx_next(enum nrtx_step step, long status, int *retried);
const char *nrtx_step_method(enum nrtx_step s);

/* metadata.resourceVersion of the object in BODY (a GET's reply) into
 * BUF. Returns 0, or -EINVAL when BODY has none. */
int nrtx_resource_version(const char *body, char *buf, size_t sz);

/* What the API server said in an error reply: a Status object's message
 * (and reason), else the body's first line, clipped to SZ. */
void nrtx_server_message(const char *body, char *buf, size_t sz);

#endif
