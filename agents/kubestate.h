/* kubestate.h — what the kubelet decided, from its checkpoints (pure: the
 * caller reads the files). The kubelet is another placer: its CPU Manager
 * (static policy) gives containers of Guaranteed pods exclusive CPUs and
 * keeps everyone else in the shared pool (defaultCpuSet); its Memory
 * Manager (Static policy) binds containers to NUMA nodes. Both write a
 * JSON checkpoint under the kubelet's root (/var/lib/kubelet):
 *   cpu_manager_state     {"policyName":"static","defaultCpuSet":"0,3-7",
 *                          "entries":{"<pod uid>":{"<container>":"1-2"}},
 *                          "checksum":N}
 *   memory_manager_state  {"policyName":"Static","machineState":{...},
 *                          "entries":{"<pod uid>":{"<container>":
 *                            [{"numaAffinity":[0],"type":"memory","size":N}]}},
 *                          "checksum":N}
 * (kubernetes pkg/kubelet/cm/{cpumanager,memorymanager}/state/checkpoint.go,
 * their v2 format). Its device manager keeps what device plugins gave
 * each container under device-plugins/:
 *   kubelet_internal_checkpoint {"Data":{"PodDeviceEntries":[
 *                          {"PodUID":"<uid>","ContainerName":"c",
 *                           "ResourceName":"vendor.com/nic",
 *                           "DeviceIDs":{"1":["0000:3b:02.0"]},
 *                           "AllocResp":"<base64>"}],
 *                          "RegisteredDevices":{...}},"Checksum":N}
 * (pkg/kubelet/cm/devicemanager/checkpoint): DeviceIDs by the NUMA node
 * the plugin reported for them, "-1" for none; before Kubernetes 1.20 a
 * plain list, with no node. The checksum is a hash of Go's dump of the structure:
 * not verified here; a file the kubelet is replacing is read again on
 * the next change.
 */
#ifndef NUMAORCH_KUBESTATE_H
#define NUMAORCH_KUBESTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "../orchestrator/base/mask.h"

/* PCI addresses without a node kept per pod (kube_pod.dev_pci). */
#define KUBE_DEV_PCI_MAX 4

/* What the kubelet holds for one pod (by uid). */
struct kube_pod {
	char uid[65];
	/* Containers with exclusive CPUs (CPU Manager entries): the first
	 * one's name and CPUs, and their union. */
	unsigned nr_excl;
	char excl_ctr[64];
	cpumask_t excl_cpus;
	/* Containers with NUMA assignments (Memory Manager entries): the
	 * first one's name, and the union of their nodes. */
	unsigned nr_numa;
	char numa_ctr[64];
	nodemask_t numa_nodes;
	/* Devices the device plugins gave its containers: how many, the
	 * nodes the checkpoint gives for them, and the first few of those it
	 * gives none for whose ids are PCI addresses (an SR-IOV plugin's),
	 * for the caller to look up in sysfs. */
	unsigned nr_dev;
	nodemask_t dev_nodes;
	unsigned nr_dev_pci;
	char dev_pci[KUBE_DEV_PCI_MAX][16];
	/* The nodes sysfs gives for dev_pci: cleared by kube_parse_dev,
	 * filled by the caller once per parse (sysfs is I/O, and a scan
	 * reads every pod). */
	nodemask_t dev_pci_nodes;
};

struct kube_state {
	bool cpu_static;          /* the CPU Manager's static policy is on */
	bool mem_static;          /* the Memory Manager's Static policy is on */
	cpumask_t shared;         /* defaultCpuSet (cpu_static only) */
	unsigned nr_pods;
	struct kube_pod *pods;    /* sorted by uid */
};

/* Parse cpu_manager_state's TEXT into KS (its CPU part replaced).
 * 0, or -EINVAL with ERR saying what is wrong (KS's CPU part cleared). */
int kube_parse_cpu(struct kube_state *ks, const char *text, char *err, size_t errsz);
/* The same for memory_manager_state. */
int kube_parse_mem(struct kube_state *ks, const char *text, char *err, size_t errsz);
/* The same for the device manager's kubelet_internal_checkpoint. Its
 * devices never make the kubelet the pod's placer: they say where the
 * pod would rather be. */
int kube_parse_dev(struct kube_state *ks, const char *text, char *err, size_t errsz);
/* The pod UID's entry, NULL if the kubelet holds nothing for it. */
const struct kube_pod *kube_find(const struct kube_state *ks, const char *uid);
/* The reason the kubelet owns POD's placement, into BUF: "" when it does
 * not (no exclusive CPUs, no NUMA assignment). */
void kube_owner_reason(const struct kube_pod *pod, char *buf, size_t sz);
/* The kubelet's reservedSystemCPUs from its configuration file's TEXT
 * (KubeletConfiguration YAML, a top-level `reservedSystemCPUs: "0,4"`
 * line; kubeadm writes it to /var/lib/kubelet/config.yaml) into OUT: 1
 * if given, 0 if not, -EINVAL if not a CPU list. */
int kube_parse_reserved(const char *text, cpumask_t *out);
/* Forget everything (KS stays usable). */
void kube_clear(struct kube_state *ks);

#endif
