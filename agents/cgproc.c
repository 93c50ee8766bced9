/* cgproc.c — a process's cgroups from /proc/PID/cgroup (see cgproc.h). */
#include "cgproc.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/fs.h"

static bool list_has(const char *s, size_t n, const char *word)
{
	size_t wl = strlen(word);

	while (n) {
		const char *c = memchr(s, ',', n);
		size_t l = c ? (size_t)(c - s) : n;

		if (l == wl && memcmp(s, word, wl) == 0)
			return true;
		if (!c)
			break;
		n -= l + 1;
		s = c + 1;
	}
	return false;
}

int cgproc_parse(const char *text, const char *ctrl, char *out, size_t sz)
{
	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		const char *c1 = memchr(l, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - l)) : NULL;

		if (c2) {
			size_t cn = (size_t)(c2 - c1 - 1), pn = n - (size_t)(c2 + 1 - l);
			bool hit = ctrl ? list_has(c1 + 1, cn, ctrl)
					: (cn == 0 && c1 == l + 1 && l[0] == '0');

			if (hit) {
				if (!pn || c2[1] != '/')
					return -ENOENT;
				if (pn >= sz)
					return -ENAMETOOLONG;
				memcpy(out, c2 + 1, pn);
				out[pn] = '\0';
				return 0;
			}
		}
		l = e ? e + 1 : NULL;
	}
	return -ENOENT;
}

int cgproc_read(const char *procfs, pid_t pid, const char *ctrl, char *out, size_t sz)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len;
	int r;

	if (pid <= 0)
		return -ESRCH;
	if (snprintf(path, sizeof(path), "%s/%d/cgroup", procfs, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fs_read_file(path, 64 * 1024, &buf, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	r = cgproc_parse(buf, ctrl, out, sz);
	free(buf);
	return r;
}
