#include "vmplugin.h"
#include "strtab.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

static int load_path(const char *path, const struct vmplugin **out, char *err, size_t errsz)
{
	const struct vmplugin *p;
	void *h;

	/* RTLD_NOW: an unresolved symbol (a module from another build) fails
	 * here, with dlerror's name of it, not later in a cycle. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
		if ((size_t)snprintf(out, outsz, "%s", path) >= outsz)
			return -ENAMETOOLONG;
		if (access(out, R_OK) < 0) {
			snprintf(err, errsz, "cannot load %s: %s", path, strerror(errno));
			return -ENOENT;
		}
		return 0;
	}
	if (beside_exe(out, outsz) == 0)
		return 0;
	snprintf(out, outsz, "%s/%s", NUMAORCH_PKGLIBDIR, VMPLUGIN_FILE);
	if (access(out, R_OK) < 0) {
		snprintf(err, errsz, "the libvirt module %s is not installed (nor beside numaorchd)", out);
		return -ENOENT;
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
	/* An explicit path goes to dlopen as it is, for dlerror's message. */
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
