#include "orchestrator/actuator/vmplugin.h"
#include "orchestrator/base/strtab.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"

#ifndef NUMAORCH_PKGLIBDIR
#define NUMAORCH_PKGLIBDIR "/usr/lib/numaorch"
#endif

static const char *const cpus_without_memory_names[] = {
	[VM_CPUS_LOCAL] = "local",
	[VM_CPUS_NEVER] = "never",
	[VM_CPUS_ALWAYS] = "always",
};
STRTAB_NAME(vm_cpus_without_memory_name, enum vm_cpus_without_memory, cpus_without_memory_names)
STRTAB_PARSE(vm_cpus_without_memory_parse, enum vm_cpus_without_memory, cpus_without_memory_names)

/* One module per process: libvirt's event loop, once started by it, runs
 * until exit, so it is neither unloaded nor loaded twice. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const struct vmplugin *loaded;

/* numaorch-libvirt.so in the directory of the running executable. */
static int beside_exe(char *out, size_t outsz)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if ((size_t)snprintf(out, outsz, "%s/%s", exe, VMPLUGIN_FILE) >= outsz)
		return -ENAMETOOLONG;
	return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

/* The module runs as root inside the daemon: whoever can replace it, or
 * the directory it is in, owns the host. So it is opened as the files
 * root writes are (STYLE.md 19): its directory owned by root (or us) and
 * not group/world-writable, the file itself by one component with
 * O_NOFOLLOW, a regular file owned by root (or us) that only its owner
 * can write. Returns the fd, or -errno with ERR saying what is wrong. */
static int open_module(const char *path, char *err, size_t errsz)
{
	const char *base;
	char why[400];
	struct stat st;
	int dfd, fd;

	dfd = fs_open_parent_trusted("libvirt module", path, &base, why, sizeof(why));
	if (dfd < 0) {
		snprintf(err, errsz, "cannot load %s: %s", path, why);
		return dfd;
	}
	fd = fs_openat_regular(dfd, base, O_RDONLY, 0);
	close(dfd);
	if (fd < 0) {
		snprintf(err, errsz, "cannot load %s: %s%s", path, strerror(-fd),
			 fd == -ELOOP ? " (a symlink: refused; name the file itself)" :
			 fd == -EISDIR || fd == -EINVAL ? " (not a regular file)" : "");
		return fd;
	}
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		snprintf(err, errsz, "cannot load %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errsz, "cannot load %s: it is owned by uid %u, not by root%s: refusing to run "
			 "its code (chown root it)", path, (unsigned)st.st_uid, geteuid() ? " or us" : "");
		close(fd);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errsz, "cannot load %s: it is writable by %s (mode %04o): refusing to run its "
			 "code (chmod go-w it)", path, st.st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int load_path(const char *path, const struct vmplugin **out, char *err, size_t errsz)
{
	const struct vmplugin *p;
	char fdpath[64];
	void *h;
	int fd;

	fd = open_module(path, err, errsz);
	if (fd < 0)
		return fd;
	/* What was checked is what is loaded: dlopen by the open file, not
	 * by the name, which could be swapped in between. RTLD_NOW: an
	 * unresolved symbol (a module from another build) fails here, with
	 * dlerror's name of it, not later in a cycle. */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	h = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	close(fd);
	if (!h) {
		snprintf(err, errsz, "cannot load %s: %s", path, dlerror());
		return -ELIBBAD;
	}
	p = dlsym(h, VMPLUGIN_SYMBOL);
	if (!p) {
		snprintf(err, errsz, "%s has no %s table: not a numaorch module", path, VMPLUGIN_SYMBOL);
		dlclose(h);
		return -ELIBBAD;
	}
	if (p->abi != VMPLUGIN_ABI || p->size != sizeof(*p)) {
		snprintf(err, errsz, "%s is of module ABI %u (size %zu), this numaorchd needs %u (size %zu)",
			 path, p->abi, p->size, VMPLUGIN_ABI, sizeof(*p));
		dlclose(h);
		return -ELIBBAD;
	}
	*out = p;
	return 0;
}

int vmplugin_find(const char *path, char *out, size_t outsz, char *err, size_t errsz)
{
	if (path && *path) {
		int fd;

		if ((size_t)snprintf(out, outsz, "%s", path) >= outsz)
			return -ENAMETOOLONG;
		/* The checks vmplugin_load makes, so --check-config says what
		 * start-up would refuse. */
		fd = open_module(out, err, errsz);
		if (fd < 0)
			return fd;
		close(fd);
		return 0;
	}
	if (beside_exe(out, outsz) < 0) {
		snprintf(out, outsz, "%s/%s", NUMAORCH_PKGLIBDIR, VMPLUGIN_FILE);
		if (access(out, R_OK) < 0) {
			snprintf(err, errsz, "the libvirt module %s is not installed (nor beside numaorchd)", out);
			return -ENOENT;
		}
	}
	{
		int fd = open_module(out, err, errsz);

		if (fd < 0)
			return fd;
		close(fd);
	}
	return 0;
}

int vmplugin_load(const char *path, const struct vmplugin **out, char *err, size_t errsz)
{
	char buf[PATH_MAX];
	int r = 0;

	pthread_mutex_lock(&lock);
	if (loaded) {
		*out = loaded;
		goto out;
	}
	if (!path || !*path) {
		r = vmplugin_find(NULL, buf, sizeof(buf), err, errsz);
		if (r < 0)
			goto out;
		path = buf;
	}
	r = load_path(path, &loaded, err, errsz);
	if (r == 0)
		*out = loaded;
out:
	pthread_mutex_unlock(&lock);
	return r;
}
