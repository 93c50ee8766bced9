/* cglabel.h — the names operators know containers by, from their
 * runtimes' own state (no runtime is called):
 *   docker      <data root>/containers/<id>/config.v2.json "Name" (dockerd's
 *               data root: <var>/lib/docker unless configured)
 *   podman      <var>/lib/containers/storage/<driver>-containers/containers.json
 *               (containers/storage: each container's "names"; overlay, vfs, ...).
 *               A container run with --rootfs has none: named by its id.
 *   kubernetes  <var>/log/pods/<namespace>_<pod>_<uid>: the kubelet's log
 *               directories, matched by the pod uid of the cgroup
 * Each file is re-read only when it changed (its mtime and size); a
 * name that cannot be found leaves the guest named by its id.
 */
#ifndef NUMAORCH_CGLABEL_H
#define NUMAORCH_CGLABEL_H

#include <stdbool.h>
#include <stddef.h>

#define CGLABEL_NS_MAX 64
#define CGLABEL_POD_MAX 254

struct cglabel_out {
	char name[128];               /* cgname_copy'd */
	char ns[CGLABEL_NS_MAX];      /* kubernetes namespace */
	char pod[CGLABEL_POD_MAX];    /* kubernetes pod name */
};

struct cglabel;

/* Names under VARDIR ("/var", or a fixture's); docker's under DOCKER_DIR
 * (dockerd's data root as this process sees it). */
struct cglabel *cglabel_new(const char *vardir, const char *docker_dir);
void cglabel_free(struct cglabel *l);
/* A scan begins: files are checked for changes at most once per scan;
 * names of containers not asked for since the last begin are dropped. */
void cglabel_begin(struct cglabel *l);

/* The name of the container KEY (its id; a pod's uid) of RUNTIME into
 * OUT: true if one was found (OUT is untouched otherwise). */
bool cglabel_lookup(struct cglabel *l, const char *runtime, const char *key, struct cglabel_out *out);

/* dockerd's data root as its daemon.json at PATH names it ("data-root",
 * or "graph", the older name docker.io 20.10 still reads) into OUT: 1 if
 * it names one, 0 if the file is absent or names none, else negative
 * errno with why in ERR (unreadable, not a JSON object, the root not an
 * absolute path). */
int cglabel_docker_data_root(const char *path, char *out, size_t sz, char *err, size_t errsz);

/* Pure: a /var/log/pods directory name "<namespace>_<pod>_<uid>" split
 * (namespaces and pod names are DNS names: no '_'). false if malformed
 * or a part does not fit. */
bool cglabel_pod_dir(const char *dname, char ns[CGLABEL_NS_MAX], char pod[CGLABEL_POD_MAX],
		     char uid[65]);

#endif
