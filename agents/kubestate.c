/* kubestate.c — the kubelet's CPU and Memory Manager checkpoints (see
 * kubestate.h). Pure. */
#include "kubestate.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

static int pod_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kube_pod *)a)->uid, ((const struct kube_pod *)b)->uid);
}

void kube_clear(struct kube_state *ks)
{
	free(ks->pods);
	memset(ks, 0, sizeof(*ks));
}

const struct kube_pod *kube_find(const struct kube_state *ks, const char *uid)
{
	struct kube_pod key;

	if (!ks->nr_pods || strlen(uid) >= sizeof(key.uid))
		return NULL;
	snprintf(key.uid, sizeof(key.uid), "%s", uid);
	return bsearch(&key, ks->pods, ks->nr_pods, sizeof(*ks->pods), pod_cmp);
}

/* The pod UID's entry, added (unsorted: kube_sort after) if absent. */
static struct kube_pod *pod_get(struct kube_state *ks, const char *uid)
{
	struct kube_pod *p;

	for (unsigned i = 0; i < ks->nr_pods; i++)
		if (strcmp(ks->pods[i].uid, uid) == 0)
			return &ks->pods[i];
	ks->pods = xrealloc(ks->pods, (ks->nr_pods + 1) * sizeof(*ks->pods));
	p = &ks->pods[ks->nr_pods++];
	memset(p, 0, sizeof(*p));
	snprintf(p->uid, sizeof(p->uid), "%s", uid);
	return p;
}

/* Drop pods with nothing left (one part re-parsed), then sort. */
static void kube_tidy(struct kube_state *ks)
{
	unsigned k = 0;

	for (unsigned i = 0; i < ks->nr_pods; i++)
		if (ks->pods[i].nr_excl || ks->pods[i].nr_numa || ks->pods[i].nr_dev)
			ks->pods[k++] = ks->pods[i];
	ks->nr_pods = k;
	if (k)
		qsort(ks->pods, k, sizeof(*ks->pods), pod_cmp);
}

static bool uid_ok(const char *uid)
{
	size_t n = strlen(uid);

	return n > 0 && n < sizeof(((struct kube_pod *)0)->uid) && !strchr(uid, '/');
}

static json_t *load(const char *text, const char *what, char *err, size_t errsz)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (!j) {
		snprintf(err, errsz, "%s: not JSON: %s (line %d)", what, jerr.text, jerr.line);
		return NULL;
	}
	if (!json_is_object(j) || !json_is_string(json_object_get(j, "policyName"))) {
		snprintf(err, errsz, "%s: no \"policyName\"", what);
		json_decref(j);
		return NULL;
	}
	return j;
}

int kube_parse_cpu(struct kube_state *ks, const char *text, char *err, size_t errsz)
{
	const char *what = "cpu_manager_state", *policy, *uid;
	json_t *j, *entries, *ctrs;
	int r = 0;

	for (unsigned i = 0; i < ks->nr_pods; i++) {
		ks->pods[i].nr_excl = 0;
		ks->pods[i].excl_ctr[0] = '\0';
		mask_zero(&ks->pods[i].excl_cpus);
	}
	ks->cpu_static = false;
	mask_zero(&ks->shared);
	j = load(text, what, err, errsz);
	if (!j) {
		kube_tidy(ks);
		return -EINVAL;
	}
	policy = json_string_value(json_object_get(j, "policyName"));
	entries = json_object_get(j, "entries");
	if (strcmp(policy, "static") != 0) {
		/* "none": every container shares every CPU; nothing is the kubelet's. */
		goto out;
	}
	if (!json_is_string(json_object_get(j, "defaultCpuSet")) ||
	    mask_parse(json_string_value(json_object_get(j, "defaultCpuSet")), &ks->shared) < 0) {
		snprintf(err, errsz, "%s: \"defaultCpuSet\" is not a CPU list", what);
		r = -EINVAL;
		goto out;
	}
	ks->cpu_static = true;
	if (entries && !json_is_object(entries)) {
		snprintf(err, errsz, "%s: \"entries\" is not an object", what);
		r = -EINVAL;
		goto out;
	}
	json_object_foreach(entries, uid, ctrs) {
		const char *ctr;
		json_t *cpus;

		if (!uid_ok(uid) || !json_is_object(ctrs)) {
			snprintf(err, errsz, "%s: entry \"%.64s\" is not a pod's", what, uid);
			r = -EINVAL;
			goto out;
		}
		json_object_foreach(ctrs, ctr, cpus) {
			struct kube_pod *p;
			cpumask_t m;

			if (!json_is_string(cpus) || mask_parse(json_string_value(cpus), &m) < 0) {
				snprintf(err, errsz, "%s: pod %s container %.63s: not a CPU list", what, uid, ctr);
				r = -EINVAL;
				goto out;
			}
			if (mask_empty(&m))
				continue;
			p = pod_get(ks, uid);
			if (!p->nr_excl++)
				snprintf(p->excl_ctr, sizeof(p->excl_ctr), "%s", ctr);
			mask_or(&p->excl_cpus, &p->excl_cpus, &m);
		}
	}
out:
	if (r < 0) {
		for (unsigned i = 0; i < ks->nr_pods; i++)
			ks->pods[i].nr_excl = 0;
		ks->cpu_static = false;
		mask_zero(&ks->shared);
	}
	json_decref(j);
	kube_tidy(ks);
	return r;
}

int kube_parse_mem(struct kube_state *ks, const char *text, char *err, size_t errsz)
{
	const char *what = "memory_manager_state", *uid;
	json_t *j, *entries, *ctrs;
	int r = 0;

	for (unsigned i = 0; i < ks->nr_pods; i++) {
		ks->pods[i].nr_numa = 0;
		ks->pods[i].numa_ctr[0] = '\0';
		mask_zero(&ks->pods[i].numa_nodes);
	}
	ks->mem_static = false;
	j = load(text, what, err, errsz);
	if (!j) {
		kube_tidy(ks);
		return -EINVAL;
	}
	if (strcmp(json_string_value(json_object_get(j, "policyName")), "Static") != 0)
		goto out; /* "None": no NUMA assignments */
	ks->mem_static = true;
	entries = json_object_get(j, "entries");
	if (entries && !json_is_object(entries)) {
		snprintf(err, errsz, "%s: \"entries\" is not an object", what);
		r = -EINVAL;
		goto out;
	}
	json_object_foreach(entries, uid, ctrs) {
		const char *ctr;
		json_t *blocks;

		if (!uid_ok(uid) || !json_is_object(ctrs)) {
			snprintf(err, errsz, "%s: entry \"%.64s\" is not a pod's", what, uid);
			r = -EINVAL;
			goto out;
		}
		json_object_foreach(ctrs, ctr, blocks) {
			nodemask_t nodes;
			struct kube_pod *p;
			json_t *b, *n;
			size_t i, k;

			if (!json_is_array(blocks)) {
				snprintf(err, errsz, "%s: pod %s container %.63s: blocks not a list", what, uid, ctr);
				r = -EINVAL;
				goto out;
			}
			mask_zero(&nodes);
			json_array_foreach(blocks, i, b) {
				json_array_foreach(json_object_get(b, "numaAffinity"), k, n) {
					json_int_t v = json_integer_value(n);

					if (!json_is_integer(n) || v < 0 || v >= (json_int_t)MASK_BITS(&nodes)) {
						snprintf(err, errsz, "%s: pod %s container %.63s: bad numaAffinity",
							 what, uid, ctr);
						r = -EINVAL;
						goto out;
					}
					mask_set(&nodes, (int)v);
				}
			}
			if (mask_empty(&nodes))
				continue;
			p = pod_get(ks, uid);
			if (!p->nr_numa++)
				snprintf(p->numa_ctr, sizeof(p->numa_ctr), "%s", ctr);
			mask_or(&p->numa_nodes, &p->numa_nodes, &nodes);
		}
	}
out:
	if (r < 0) {
		for (unsigned i = 0; i < ks->nr_pods; i++)
			ks->pods[i].nr_numa = 0;
		ks->mem_static = false;
	}
	json_decref(j);
	kube_tidy(ks);
	return r;
}

/* The device ids IDS (an array) of one entry, on node NODE (-1: none
 * given), into pod P. */
static void dev_ids(struct kube_pod *p, json_t *ids, long node)
{
	size_t i;
	json_t *id;

	json_array_foreach(ids, i, id) {
		const char *s = json_string_value(id);

		if (!s)
			continue;
		p->nr_dev++;
		if (node >= 0)
			mask_set(&p->dev_nodes, (int)node);
		else if (p->nr_dev_pci < KUBE_DEV_PCI_MAX && strlen(s) < sizeof(p->dev_pci[0]))
			snprintf(p->dev_pci[p->nr_dev_pci++], sizeof(p->dev_pci[0]), "%s", s);
	}
}

/* One PodDeviceEntries element. */
static int dev_entry(struct kube_state *ks, json_t *e, char *err, size_t errsz)
{
	static const char what[] = "kubelet_internal_checkpoint";
	const char *uid = json_string_value(json_object_get(e, "PodUID")), *key;
	json_t *ids = json_object_get(e, "DeviceIDs"), *v;
	struct kube_pod *p;

	if (!uid || !uid_ok(uid)) {
		snprintf(err, errsz, "%s: an entry has no pod uid", what);
		return -EINVAL;
	}
	if (json_is_null(ids) || (json_is_array(ids) && !json_array_size(ids)))
		return 0;
	if (!json_is_array(ids) && !json_is_object(ids)) {
		snprintf(err, errsz, "%s: pod %s: DeviceIDs is neither a list nor a map by node", what, uid);
		return -EINVAL;
	}
	p = pod_get(ks, uid);
	if (json_is_array(ids)) {
		dev_ids(p, ids, -1);
		return 0;
	}
	json_object_foreach(ids, key, v) {
		char *end;
		long node;

		errno = 0;
		node = strtol(key, &end, 10);
		if (errno || end == key || *end || node < -1 || node >= MASK_MAX_NODES || !json_is_array(v)) {
			snprintf(err, errsz, "%s: pod %s: DeviceIDs key \"%.16s\" is not a node", what, uid, key);
			return -EINVAL;
		}
		dev_ids(p, v, node);
	}
	return 0;
}

int kube_parse_dev(struct kube_state *ks, const char *text, char *err, size_t errsz)
{
	json_t *j, *entries, *e;
	json_error_t jerr;
	size_t i;
	int r = 0;

	for (unsigned k = 0; k < ks->nr_pods; k++) {
		ks->pods[k].nr_dev = ks->pods[k].nr_dev_pci = 0;
		mask_zero(&ks->pods[k].dev_nodes);
		mask_zero(&ks->pods[k].dev_pci_nodes);
	}
	j = json_loads(text, 0, &jerr);
	if (!j) {
		snprintf(err, errsz, "kubelet_internal_checkpoint: not JSON: %s (line %d)", jerr.text, jerr.line);
		kube_tidy(ks);
		return -EINVAL;
	}
	entries = json_object_get(json_object_get(j, "Data"), "PodDeviceEntries");
	if (!json_is_object(json_object_get(j, "Data")) || (entries && !json_is_null(entries) && !json_is_array(entries))) {
		snprintf(err, errsz, "kubelet_internal_checkpoint: no \"Data\" with \"PodDeviceEntries\"");
		r = -EINVAL;
	}
	json_array_foreach(r == 0 ? entries : NULL, i, e) {
		if ((r = dev_entry(ks, e, err, errsz)) < 0)
			break;
	}
	if (r < 0)
		for (unsigned k = 0; k < ks->nr_pods; k++)
			ks->pods[k].nr_dev = ks->pods[k].nr_dev_pci = 0;
	json_decref(j);
	kube_tidy(ks);
	return r;
}

void kube_owner_reason(const struct kube_pod *pod, char *buf, size_t sz)
{
	char cpus[CPULIST_BUFSZ > 256 ? 256 : CPULIST_BUFSZ], nodes[NODELIST_BUFSZ];
	size_t n = 0;

	buf[0] = '\0';
	if (!pod)
		return;
	if (pod->nr_excl) {
		if (mask_format(&pod->excl_cpus, cpus, sizeof(cpus)) < 0)
			snprintf(cpus, sizeof(cpus), "...");
		n = (size_t)snprintf(buf, sz, "the kubelet's CPU Manager gave %s%s exclusive CPUs %s",
				     pod->excl_ctr, pod->nr_excl > 1 ? " and others" : "", cpus);
	}
	if (pod->nr_numa && n < sz) {
		if (mask_format(&pod->numa_nodes, nodes, sizeof(nodes)) < 0)
			snprintf(nodes, sizeof(nodes), "...");
		snprintf(buf + n, sz - n, "%sthe kubelet's Memory Manager binds %s%s to NUMA node%s %s",
			 n ? "; " : "", pod->numa_ctr, pod->nr_numa > 1 ? " and others" : "",
			 mask_count(&pod->numa_nodes) > 1 ? "s" : "", nodes);
	}
}

int kube_parse_reserved(const char *text, cpumask_t *out)
{
	static const char key[] = "reservedSystemCPUs:";

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		char v[256];
		size_t n;

		/* Top level only: a nested key of the same name is another's. */
		if (strncmp(l, key, sizeof(key) - 1) != 0)
			continue;
		l += sizeof(key) - 1;
		l += strspn(l, " \t");
		n = strcspn(l, "\r\n#");
		while (n && (l[n - 1] == ' ' || l[n - 1] == '\t'))
			n--;
		if (n >= 2 && (l[0] == '"' || l[0] == '\'') && l[n - 1] == l[0]) {
			l++;
			n -= 2;
		}
		if (n >= sizeof(v))
			return -EINVAL;
		memcpy(v, l, n);
		v[n] = '\0';
		return mask_parse(v, out) < 0 ? -EINVAL : 1;
	}
	return 0;
}
