#include "vmxml.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/mask.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

/* libxml2 wants one explicit initialisation before threads use it. */
static void xml_init(void)
{
	xmlInitParser();
}

static bool is_el(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0 &&
	       (!n->ns || !n->ns->href || !*n->ns->href);
}

static const xmlNode *child(const xmlNode *parent, const char *name)
{
	for (const xmlNode *c = parent->children; c; c = c->next)
		if (is_el(c, name))
			return c;
	return NULL;
}

/* Copy the text content of N (trimmed) into BUF; false if it does not fit. */
static bool text_of(const xmlNode *n, char *buf, size_t sz)
{
	xmlChar *t = xmlNodeGetContent(n);
	const char *s = (const char *)t, *e;
	bool ok;

	if (!t)
		return false;
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	ok = (size_t)(e - s) < sz;
	if (ok) {
		memcpy(buf, s, (size_t)(e - s));
		buf[e - s] = '\0';
	}
	xmlFree(t);
	return ok;
}

/* Attribute NAME (no namespace) into BUF; false if absent or too long. */
static bool attr_of(const xmlNode *n, const char *name, char *buf, size_t sz)
{
	xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
	bool ok;

	if (!v)
		return false;
	ok = strlen((const char *)v) < sz;
	if (ok)
		strcpy(buf, (const char *)v);
	xmlFree(v);
	return ok;
}

/* <memory unit='KiB'>131072</memory> and friends, in bytes. */
static int memory_bytes(const xmlNode *n, uint64_t *out)
{
	static const struct { const char *u; uint64_t mult; } units[] = {
		{ "b", 1 }, { "bytes", 1 },
		{ "KB", 1000ULL }, { "k", 1024ULL }, { "KiB", 1024ULL },
		{ "MB", 1000000ULL }, { "M", 1ULL << 20 }, { "MiB", 1ULL << 20 },
		{ "GB", 1000000000ULL }, { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
		{ "TB", 1000000000000ULL }, { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
	};
	char unit[16] = "KiB", val[32];
	uint64_t v, mult = 0;

	if (!text_of(n, val, sizeof(val)) || parse_u64(val, &v) < 0)
		return -EINVAL;
	attr_of(n, "unit", unit, sizeof(unit));
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(unit, units[i].u) == 0)
			mult = units[i].mult;
	if (!mult || v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

int vmxml_policy_from_attrs(const char *mode, const char *nodes, struct guest_policy *out,
			    char *err, size_t errsz)
{
	struct guest_policy p = { .source = GPOL_SRC_METADATA };

	if (!mode) {
		snprintf(err, errsz, "policy element has no mode attribute (auto, pinned or ignore)");
		return -EINVAL;
	}
	if (gpol_mode_parse(mode, &p.mode) < 0) {
		snprintf(err, errsz, "policy mode \"%.32s\" is not auto, pinned or ignore", mode);
		return -EINVAL;
	}
	if (p.mode == GPOL_PINNED) {
		if (!nodes || !*nodes) {
			snprintf(err, errsz, "policy mode pinned needs a nodes attribute (\"0-1\")");
			return -EINVAL;
		}
		if (mask_parse(nodes, &p.nodes) < 0 || mask_empty(&p.nodes)) {
			snprintf(err, errsz, "policy nodes \"%.32s\" is not a node list", nodes);
			return -EINVAL;
		}
	} else if (nodes) {
		snprintf(err, errsz, "policy nodes is only meaningful with mode pinned");
		return -EINVAL;
	}
	*out = p;
	return 0;
}

void vmxml_policy_carry(struct vmxml_info *now, const struct vmxml_info *before, int64_t now_real_ns)
{
	now->policy.set_real_ns = 0;
	if (!now->has_policy || !before)
		return;
	if (before->has_policy && before->policy.mode == now->policy.mode &&
	    before->policy.devices == now->policy.devices && mask_equal(&before->policy.nodes, &now->policy.nodes))
		now->policy.set_real_ns = before->policy.set_real_ns;
	else
		now->policy.set_real_ns = now_real_ns;
}

/* Our element in <metadata>: matched by namespace URI, never by prefix
 * (the prefix is the writer's choice). */
static void parse_policy(const xmlNode *meta, struct vmxml_info *x)
{
	for (const xmlNode *c = meta->children; c; c = c->next) {
		xmlChar *mode, *nodes, *devs;
		int r;

		if (c->type != XML_ELEMENT_NODE || !c->ns || !c->ns->href ||
		    strcmp((const char *)c->ns->href, VMXML_NS) != 0)
			continue;
		if (strcmp((const char *)c->name, "policy") != 0) {
			snprintf(x->policy_error, sizeof(x->policy_error),
				 "unknown element <%.32s> in the numaorch namespace", (const char *)c->name);
			return;
		}
		if (x->has_policy) {
			snprintf(x->policy_error, sizeof(x->policy_error), "more than one numaorch policy element");
			x->has_policy = false;
			memset(&x->policy, 0, sizeof(x->policy));
			return;
		}
		mode = xmlGetNoNsProp(c, (const xmlChar *)"mode");
		nodes = xmlGetNoNsProp(c, (const xmlChar *)"nodes");
		devs = xmlGetNoNsProp(c, (const xmlChar *)"devices");
		r = vmxml_policy_from_attrs((const char *)mode, (const char *)nodes, &x->policy,
					    x->policy_error, sizeof(x->policy_error));
		if (r == 0 && devs && gpol_devices_parse((const char *)devs, &x->policy.devices) < 0) {
			snprintf(x->policy_error, sizeof(x->policy_error),
				 "policy devices \"%.32s\" is not prefer, require or ignore", (const char *)devs);
			memset(&x->policy, 0, sizeof(x->policy));
			r = -EINVAL;
		}
		xmlFree(mode);
		xmlFree(nodes);
		xmlFree(devs);
		if (r < 0)
			return;
		x->has_policy = true;
	}
}

static void parse_numatune(const xmlNode *nt, struct vmxml_info *x)
{
	for (const xmlNode *c = nt->children; c; c = c->next) {
		char mode[16] = "strict";

		if (is_el(c, "memory")) {
			x->has_numatune = true;
			attr_of(c, "mode", mode, sizeof(mode));
			snprintf(x->numatune_mode, sizeof(x->numatune_mode), "%s", mode);
			attr_of(c, "nodeset", x->numatune_nodeset, sizeof(x->numatune_nodeset));
		} else if (is_el(c, "memnode")) {
			attr_of(c, "mode", mode, sizeof(mode));
			if (strcmp(mode, "restrictive") != 0)
				x->nr_memnodes_bound++;
		}
	}
}

/* <address domain='0x0000' bus='0x3b' slot='0x00' function='0x1'/> as
 * sysfs names the function ("0000:3b:00.1"); false if not one. */
static bool pci_addr(const xmlNode *a, char *buf, size_t sz)
{
	static const char *const names[] = { "domain", "bus", "slot", "function" };
	static const unsigned long max[] = { 0xffff, 0xff, 0x1f, 7 };
	unsigned long v[4];

	for (unsigned i = 0; i < 4; i++) {
		char t[16], *end;

		if (!attr_of(a, names[i], t, sizeof(t)))
			return false;
		errno = 0;
		v[i] = strtoul(t, &end, 0);
		if (errno || end == t || *end || v[i] > max[i])
			return false;
	}
	snprintf(buf, sz, "%04lx:%02lx:%02lx.%lx", v[0], v[1], v[2], v[3]);
	return true;
}

/* One device of KIND found: counted, and kept while there is room (ADDR
 * "" when its address could not be read: counted, on no node). */
static void dev_add(struct vmxml_info *x, enum devnode_kind kind, const char *addr)
{
	if (x->nr_devs < VMXML_DEV_MAX) {
		x->devs[x->nr_devs].kind = kind;
		snprintf(x->devs[x->nr_devs].addr, sizeof(x->devs[x->nr_devs].addr), "%s", addr);
	}
	x->nr_devs++;
}

/* <hostdev mode='subsystem' type='pci|mdev|vdpa'> and <interface
 * type='hostdev|vdpa'>: the devices a domain holds on the host. */
static void parse_devices(const xmlNode *devs, struct vmxml_info *x)
{
	for (const xmlNode *c = devs->children; c; c = c->next) {
		const xmlNode *src, *a;
		char type[16] = "", addr[40] = "";
		bool host = is_el(c, "hostdev"), iface = is_el(c, "interface");

		if ((!host && !iface) || !attr_of(c, "type", type, sizeof(type)))
			continue;
		src = child(c, "source");
		a = src ? child(src, "address") : NULL;
		if ((host && strcmp(type, "pci") == 0) || (iface && strcmp(type, "hostdev") == 0)) {
			if (!a || !pci_addr(a, addr, sizeof(addr)))
				addr[0] = '\0';
			dev_add(x, DEVNODE_PCI, addr);
		} else if ((host || iface) && strcmp(type, "vdpa") == 0) {
			if (!src || !attr_of(src, "dev", addr, sizeof(addr)))
				addr[0] = '\0';
			dev_add(x, DEVNODE_VDPA, addr);
		} else if (host && strcmp(type, "mdev") == 0) {
			if (!a || !attr_of(a, "uuid", addr, sizeof(addr)))
				addr[0] = '\0';
			dev_add(x, DEVNODE_MDEV, addr);
		}
	}
}

int vmxml_parse(const char *xml, size_t len, struct vmxml_info *out, char *err, size_t errsz)
{
	struct vmxml_info x = { 0 };
	const xmlNode *root, *n;
	char buf[32];
	xmlDoc *doc;
	int r = -EINVAL;

	pthread_once(&xml_once, xml_init);
	if (len > INT_MAX) {
		snprintf(err, errsz, "domain XML too large");
		return -EINVAL;
	}
	doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc) {
		snprintf(err, errsz, "domain XML is not well-formed");
		return -EINVAL;
	}
	root = xmlDocGetRootElement(doc);
	if (!root || !is_el(root, "domain")) {
		snprintf(err, errsz, "root element is not <domain>");
		goto out;
	}
	if (!(n = child(root, "uuid")) || !text_of(n, x.uuid, sizeof(x.uuid)) || strlen(x.uuid) != 36) {
		snprintf(err, errsz, "domain has no valid <uuid>");
		goto out;
	}
	if ((n = child(root, "name")))
		text_of(n, x.name, sizeof(x.name));
	if ((n = child(root, "vcpu"))) {
		uint64_t v;

		if ((attr_of(n, "current", buf, sizeof(buf)) || text_of(n, buf, sizeof(buf))) &&
		    parse_u64(buf, &v) == 0 && v <= 65536)
			x.vcpus = (unsigned)v;
	}
	if ((n = child(root, "currentMemory")) || (n = child(root, "memory")))
		memory_bytes(n, &x.mem_bytes);
	if ((n = child(root, "numatune")))
		parse_numatune(n, &x);
	if ((n = child(root, "metadata")))
		parse_policy(n, &x);
	if ((n = child(root, "devices")))
		parse_devices(n, &x);
	*out = x;
	r = 0;
out:
	xmlFreeDoc(doc);
	return r;
}

bool vmxml_numatune_movable(const struct vmxml_info *x)
{
	if (x->nr_memnodes_bound)
		return false;
	return !x->has_numatune || strcmp(x->numatune_mode, "restrictive") == 0;
}
