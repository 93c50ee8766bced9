/* cgname.c — container names (see cgname.h). Pure. */
#include "cgname.h"

#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/cghier.h"

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool starts(const char *s, size_t n, const char *pfx)
{
	size_t p = strlen(pfx);

	return n >= p && memcmp(s, pfx, p) == 0;
}

static bool ends(const char *s, size_t n, const char *sfx)
{
	size_t p = strlen(sfx);

	return n >= p && memcmp(s + n - p, sfx, p) == 0;
}

static bool comp_is(const char *s, size_t n, const char *word)
{
	return s && n == strlen(word) && memcmp(s, word, n) == 0;
}

void cgname_copy(char name[128], const char *s, size_t n)
{
	if (n > 127) {
		uint32_t h = 2166136261u;

		for (size_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)s[i]) * 16777619u;
		memcpy(name, s, 118);
		snprintf(name + 118, 10, "~%08x", h);
		return;
	}
	memcpy(name, s, n);
	name[n] = '\0';
}

bool cgname_excluded(const char *b, size_t n)
{
	if (ends(b, n, ".libvirt-qemu") || ends(b, n, ".libvirt-lxc"))
		return true;
	if (starts(b, n, "machine-qemu\\x2d") || starts(b, n, "machine-lxc\\x2d"))
		return true;
	if (starts(b, n, "libpod-conmon-"))
		return true;
	if (comp_is(b, n, "lxc.monitor") || starts(b, n, "lxc.monitor."))
		return true;
	return false;
}

/* A pod uid as found in a cgroup name: lowercase hex and '-' (cgroupfs
 * driver) or '_' (systemd driver, which reserves '-'). Normalised to '-'. */
static bool pod_uid(const char *s, size_t n, char name[128])
{
	if (n < 8 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '_'))
			return false;
	}
	cgname_copy(name, s, n);
	for (char *p = name; *p; p++)
		if (*p == '_')
			*p = '-';
	return true;
}

/* systemd unit-name unescaping of \xNN; false if the result is unusable. */
static bool unit_unescape(const char *s, size_t n, char name[128])
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] == 'x' &&
		    isxdigit((unsigned char)s[i + 2]) && isxdigit((unsigned char)s[i + 3])) {
			char hex[3] = { s[i + 2], s[i + 3], 0 };
			long v = strtol(hex, NULL, 16);

			if (v <= 0)
				return false;
			c = (char)v;
			i += 3;
		}
		if (o >= 127)
			return false;
		name[o++] = c;
	}
	name[o] = '\0';
	return o > 0;
}

bool cgname_classify_one(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128])
{
	const char *b, *p = NULL, *g = NULL;
	size_t bn, pn = 0, gn = 0;
	char nm[128];
	const char *rt = NULL;

	b = strrchr(rel, '/');
	if (!b || !b[1])
		return false;
	b++;
	bn = strlen(b);
	if (b - 1 > rel) {
		const char *e = b - 1;

		p = e - 1;
		while (p > rel && p[-1] != '/')
			p--;
		pn = (size_t)(e - p);
		if (p - 1 > rel) {
			const char *ge = p - 1;

			g = ge - 1;
			while (g > rel && g[-1] != '/')
				g--;
			gn = (size_t)(ge - g);
		}
	}
	if (cgname_excluded(b, bn))
		return false;

	/* docker: systemd driver scope, or cgroupfs driver /docker/<id>. */
	if (starts(b, bn, "docker-") && ends(b, bn, ".scope") &&
	    is_hex64(b + 7, bn - 7 - 6)) {
		cgname_copy(nm, b + 7, 64);
		rt = "docker";
	} else if (comp_is(p, pn, "docker") && is_hex64(b, bn)) {
		cgname_copy(nm, b, 64);
		rt = "docker";
	}
	/* podman: systemd scope anywhere; cgroupfs under libpod_parent. */
	else if (starts(b, bn, "libpod-") && ends(b, bn, ".scope") &&
		 is_hex64(b + 7, bn - 7 - 6)) {
		cgname_copy(nm, b + 7, 64);
		rt = "podman";
	} else if (starts(b, bn, "libpod-") && is_hex64(b + 7, bn - 7) &&
		   (strstr(rel, "/libpod_parent/") != NULL)) {
		cgname_copy(nm, b + 7, 64);
		rt = "podman";
	}
	/* kubernetes pods, cgroupfs driver. */
	else if (starts(b, bn, "pod") &&
		 (comp_is(p, pn, "kubepods") ||
		  ((comp_is(p, pn, "burstable") || comp_is(p, pn, "besteffort")) &&
		   comp_is(g, gn, "kubepods")))) {
		if (pod_uid(b + 3, bn - 3, nm))
			rt = "kubernetes";
	}
	/* kubernetes pods, systemd driver. */
	else if (starts(b, bn, "kubepods-") && ends(b, bn, ".slice")) {
		const char *q = b + 9;
		size_t qn = bn - 9 - 6;

		if (starts(q, qn, "burstable-pod")) {
			q += 13;
			qn -= 13;
		} else if (starts(q, qn, "besteffort-pod")) {
			q += 14;
			qn -= 14;
		} else if (starts(q, qn, "pod")) {
			q += 3;
			qn -= 3;
		} else {
			return false;
		}
		if (pod_uid(q, qn, nm))
			rt = "kubernetes";
	}
	/* lxc 4+: /lxc.payload.<name>; older: /lxc/<name>. */
	else if (starts(b, bn, "lxc.payload.") && bn > 12) {
		cgname_copy(nm, b + 12, bn - 12);
		rt = "lxc";
	} else if (comp_is(p, pn, "lxc")) {
		cgname_copy(nm, b, bn);
		rt = "lxc";
	}
	/* systemd-nspawn / machined. */
	else if (comp_is(p, pn, "machine.slice") && starts(b, bn, "machine-") &&
		 ends(b, bn, ".scope") && bn > 8 + 6) {
		if (unit_unescape(b + 8, bn - 8 - 6, nm))
			rt = "nspawn";
	}
	if (!rt)
		return false;
	snprintf(runtime, GUEST_RUNTIME_MAX, "%s", rt);
	memcpy(name, nm, sizeof(nm));
	return true;
}

static bool rel_excluded(const char *rel)
{
	const char *b = strrchr(rel, '/');

	return b && cgname_excluded(b + 1, strlen(b + 1));
}

bool cgname_classify(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128])
{
	char buf[PATH_MAX], rt[GUEST_RUNTIME_MAX], nm[128];
	size_t n;

	if (!cgh_rel_valid(rel) || strcmp(rel, "/") == 0)
		return false;
	n = strlen(rel);
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, rel, n + 1);
	/* Nothing below a guest (or below libvirt's groups) is a guest. */
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (rel_excluded(buf) || cgname_classify_one(buf, rt, nm))
			return false;
		buf[i] = '/';
	}
	if (!cgname_classify_one(rel, rt, nm))
		return false;
	memcpy(runtime, rt, sizeof(rt));
	memcpy(name, nm, sizeof(nm));
	return true;
}
