/* vmhook.h — the pure parts of numaorch's libvirt hook
 * (deploy/libvirt/numaorch-hook.c): which hook calls matter, the domain
 * uuid from the XML on stdin, the JSON request body, the socket path from
 * the agent's configuration. No libvirt, no allocation beyond the
 * caller's buffers: the hook binary links only this file.
 */
#ifndef NUMAORCH_VMHOOK_H
#define NUMAORCH_VMHOOK_H

#include <stdbool.h>
#include <stddef.h>

#define VMHOOK_DEFAULT_SOCKET "/run/numaorch/api.sock"
#define VMHOOK_DEFAULT_CONFIG "/etc/numaorch/numaorchd.conf"

/* libvirt calls /etc/libvirt/hooks/qemu.d/X with "<name> <op> <subop>
 * <extra>". The event to send for OP SUBOP — "started" (started begin),
 * "stopped" (stopped end), "release" (release end), "reconnect"
 * (reconnect begin) — or NULL: every other call is none of numaorch's
 * business and the hook exits at once. */
const char *vmhook_event(const char *op, const char *subop);

/* Incremental search for the domain's <uuid> in the XML stream: feed the
 * bytes as they are read; returns true once the uuid (36 characters) is
 * in UUID. The element is the domain's first few lines, so the hook stops
 * reading there. Only <uuid> directly inside <domain> counts: the
 * scanner tracks element depth and skips comments, so a <uuid> of a
 * nested element (a vTPM, a disk's secret) is not taken. */
struct vmhook_uuid_scan {
	char uuid[37];
	bool done;
	/* scanner state */
	int state, depth;
	char tag[16];
	unsigned taglen, textlen;
	bool closing, in_uuid, tag_overflow;
	char prev[3];
};
void vmhook_uuid_init(struct vmhook_uuid_scan *s);
bool vmhook_uuid_feed(struct vmhook_uuid_scan *s, const char *buf, size_t len);

/* The request body: {"source":"libvirt-hook","event":EVENT,"domain":NAME
 * [,"uuid":UUID]} with NAME escaped for JSON. Returns the length, or -1
 * if it does not fit OUTSZ. */
int vmhook_body(char *out, size_t outsz, const char *event, const char *name, const char *uuid);

/* The agent's unix socket from the text of numaorchd.conf: [api] socket,
 * else the default. An empty value (API socket disabled) gives "". Pure:
 * the caller reads the file. */
void vmhook_socket_from_config(const char *text, char *out, size_t outsz);

/* Parse the status code of an HTTP/1.x status line; -1 if malformed. */
int vmhook_http_status(const char *buf, size_t len);

#endif
