#include "orchestrator/base/cghier.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/fs.h"
#include "orchestrator/base/strtab.h"

static const char *const ctrl_names[CGC_NR] = { "cpuset", "memory", "cpuacct", "freezer" };

STRTAB_NAME(cgh_ctrl_name, enum cg_ctrl, ctrl_names)

static const char *const layout_names[] = {
	[CG_LAYOUT_NONE] = "none",
	[CG_LAYOUT_V1] = "v1",
	[CG_LAYOUT_V2] = "v2",
	[CG_LAYOUT_HYBRID] = "hybrid",
};
STRTAB_NAME(cgh_layout_name, enum cg_layout, layout_names)

bool cgh_has(const struct cg_hier *h, enum cg_ctrl c)
{
	return (unsigned)c < CGC_NR && h->dir[c][0] != '\0';
}

/* Does the space-separated controller list in FILE name CTRL? */
static bool list_has(const char *file, const char *ctrl)
{
	char buf[512], *save = NULL;

	if (fs_read_line(file, buf, sizeof(buf)) < 0)
		return false;
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (strcmp(t, ctrl) == 0)
			return true;
	return false;
}

static bool comma_list_has(const char *name, const char *ctrl)
{
	size_t n = strlen(ctrl);

	for (const char *p = name; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && strncmp(p, ctrl, n) == 0)
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

int cgh_detect(const char *cgroupfs, struct cg_hier *out)
{
	struct cg_hier h;
	char path[PATH_MAX];
	bool have_v1 = false;
	DIR *d;

	memset(&h, 0, sizeof(h));
	if (!fs_is_dir(cgroupfs))
		return -ENOENT;
	if (strlen(cgroupfs) >= sizeof(h.root) - 64)
		return -ENAMETOOLONG;
	strcpy(h.root, cgroupfs);

	snprintf(path, sizeof(path), "%s/cgroup.controllers", cgroupfs);
	if (fs_exists(path)) {
		/* Pure v2: one tree, controllers as listed by the root. */
		strcpy(h.unified, cgroupfs);
		h.layout = CG_LAYOUT_V2;
		if (list_has(path, "cpuset")) {
			strcpy(h.dir[CGC_CPUSET], cgroupfs);
			h.v2[CGC_CPUSET] = true;
		}
		if (list_has(path, "memory")) {
			strcpy(h.dir[CGC_MEMORY], cgroupfs);
			h.v2[CGC_MEMORY] = true;
		}
		/* cpu.stat usage_usec exists in every v2 cgroup, with or without
		 * the cpu controller; cgroup.freeze likewise. */
		strcpy(h.dir[CGC_CPUACCT], cgroupfs);
		h.v2[CGC_CPUACCT] = true;
		strcpy(h.dir[CGC_FREEZER], cgroupfs);
		h.v2[CGC_FREEZER] = true;
		*out = h;
		return 0;
	}

	d = opendir(cgroupfs);
	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", cgroupfs, de->d_name) >= (int)sizeof(path))
			continue;
		if (!fs_is_dir(path))
			continue;
		if (strcmp(de->d_name, "unified") == 0) {
			char cf[PATH_MAX + 32];

			snprintf(cf, sizeof(cf), "%s/cgroup.controllers", path);
			if (fs_exists(cf))
				strcpy(h.unified, path);
			continue;
		}
		for (unsigned c = 0; c < CGC_NR; c++) {
			/* "cpu,cpuacct" is usually also reachable through the
			 * "cpuacct" symlink; take whichever comes first. */
			if (!h.dir[c][0] && comma_list_has(de->d_name, ctrl_names[c])) {
				strcpy(h.dir[c], path);
				have_v1 = true;
			}
		}
	}
	closedir(d);

	if (h.unified[0]) {
		/* Controllers not bound to v1 may be available in the v2 tree. */
		char cf[PATH_MAX + 32];

		snprintf(cf, sizeof(cf), "%s/cgroup.controllers", h.unified);
		for (unsigned c = 0; c < CGC_NR; c++) {
			if (h.dir[c][0])
				continue;
			if (c == CGC_CPUACCT || c == CGC_FREEZER || list_has(cf, ctrl_names[c])) {
				strcpy(h.dir[c], h.unified);
				h.v2[c] = true;
			}
		}
	}
	if (have_v1)
		h.layout = h.unified[0] ? CG_LAYOUT_HYBRID : CG_LAYOUT_V1;
	else if (h.unified[0])
		h.layout = CG_LAYOUT_V2;
	else
		h.layout = CG_LAYOUT_NONE;
	*out = h;
	return 0;
}

int cgh_path(const struct cg_hier *h, enum cg_ctrl c, const char *rel,
	     const char *file, char *buf, size_t bufsz)
{
	int n;

	if (!cgh_has(h, c))
		return -ENODEV;
	if (!rel || rel[0] != '/')
		return -EINVAL;
	if (strcmp(rel, "/") == 0)
		rel = "";
	if (file)
		n = snprintf(buf, bufsz, "%s%s/%s", h->dir[c], rel, file);
	else
		n = snprintf(buf, bufsz, "%s%s", h->dir[c], rel);
	if (n < 0 || (size_t)n >= bufsz)
		return -ENAMETOOLONG;
	return 0;
}

int cgh_read_value(const struct cg_hier *h, enum cg_ctrl c, const char *rel, const char *file, char **out)
{
	char path[PATH_MAX];
	size_t len;
	char *buf;
	int r;

	r = cgh_path(h, c, rel, file, path, sizeof(path));
	if (r < 0)
		return r;
	r = fs_read_file(path, 64 * 1024, &buf, &len);
	if (r < 0)
		return r;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	*out = buf;
	return 0;
}

bool cgh_rel_valid(const char *rel)
{
	const char *p;

	if (!rel || rel[0] != '/')
		return false;
	if (strcmp(rel, "/") == 0)
		return true;
	p = rel + 1;
	for (;;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 0)
			return false;
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return false;
		if (!e)
			return true;
		p = e + 1;
	}
}

bool cgh_rel_under(const char *rel, const char *scope)
{
	size_t n;

	if (!rel || !scope)
		return false;
	if (strcmp(scope, "/") == 0)
		return rel[0] == '/';
	n = strlen(scope);
	while (n > 1 && scope[n - 1] == '/')
		n--;
	if (strncmp(rel, scope, n) != 0)
		return false;
	return rel[n] == '\0' || rel[n] == '/';
}
