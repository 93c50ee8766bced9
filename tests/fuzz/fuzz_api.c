/* libFuzzer target: the REST API's request handling (routing, path and
 * query decoding, authentication, JSON body parsing, every handler) with
 * a real engine on a fixture host, without sockets.
 *
 * Input: "METHOD TARGET\n", then header lines ("Content-Type: ...",
 * "Authorization: ...", "Transport: tcp"), an empty line, then the body.
 * Besides the sanitizers, each answer must be well-formed: a status
 * 100..599, a JSON body that parses when the content type says JSON, a
 * problem body whose status matches, Allow on 405.
 *
 * The engine runs in dry-run mode (the API cannot change that), so
 * rebalances decide but never write to the fixture.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "agents/acquire.h"
#include "agents/topo.h"
#include "api/api.h"
#include "orchestrator/store/config.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/store/gpolstore.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"
#include "policies/policies.h"

#define TOKEN "fuzz-token-0123456789abcdef"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct engine *eng;
static struct gpolstore *gs;
static struct api *api;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_api: %s\n", what);
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/numaorch-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *dir = mkdtemp(tmpl), *cmd, err[300];
	struct agent_config cfg;
	struct host_paths hp;
	struct api_opts ao = { .version = "fuzz", .token = TOKEN, .engine_timeout_ms = 2000 };

	(void)argc;
	(void)argv;
	if (!dir)
		die("mkdtemp");
	/* Run from the repository root (make check-fuzz does). */
	cmd = xasprintf("set -e; r=%s/host; mkdir -p $r/sys/fs; "
			"cp -r tests/fixtures/host-2node/sys/. $r/sys/; cp -r tests/fixtures/host-2node/proc $r/; "
			"cp -r tests/fixtures/cg-v2/sys/fs/cgroup $r/sys/fs/; cp -r tests/fixtures/cg-v2/run $r/; "
			": > $r/sys/fs/cgroup/.numaorch-writes", dir);
	if (system(cmd) != 0)
		die("cannot compose the fixture host (run from the repository root)");
	free(cmd);
	cmd = xasprintf("%s/host", dir);
	if (host_paths_from_root(&hp, cmd) < 0)
		die("host_paths_from_root");
	free(cmd);
	config_default(&cfg);
	cfg.sample_s = 0.05;
	cfg.dry_run = true;
	cfg.libvirt_enabled = false;
	cfg.log_level = LOG_LEVEL_ERROR;
	free(cfg.state_dir);
	cfg.state_dir = xasprintf("%s/state", dir);
	log_set_level(LOG_LEVEL_ERROR);
	static const struct source_ops src = {
		.acquirer_new = acquirer_new, .acquirer_free = acquirer_free, .add_source = acquirer_add_source,
		.hier = acquirer_hier, .snapshot = acquirer_snapshot, .read_meminfo = topo_read_meminfo,
	};
	static const struct policy_ops pol = { .decide = policy_decide_reserved, .advise = policy_advise };
	static const struct engine_parts parts = { .sources = &src, .policy = &pol };

	if (engine_new(&cfg, &hp, &parts, &eng) < 0)
		die("engine_new");
	if (gpolstore_open(cfg.state_dir, GPOLSTORE_CREATE, &gs, err, sizeof(err)) < 0)
		die(err);
	/* This thread becomes the engine's: engine_call runs inline. */
	if (engine_prepare_loop(eng) < 0 || engine_cycle(eng, true, NULL) < 0)
		die("the first cycle failed");
	engine_use_gpolstore(eng, gs);
	if (api_new(eng, gs, &ao, &api) < 0)
		die("api_new");
	config_clear(&cfg);
	free(tmpl);
	return 0;
}

static char *dupn(const uint8_t *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void check(const struct api_request *rq, const struct api_response *r)
{
	json_t *j;

	if (r->status < 100 || r->status > 599)
		abort();
	if (!r->body || strlen(r->body) != r->body_len)
		abort();
	if (r->status == 405 && !r->allow)
		abort();
	if (r->status == 401 && !r->www_authenticate)
		abort();
	if (r->status == 204 || !r->content_type || strncmp(r->content_type, "application/", 12) != 0)
		return;
	j = json_loadb(r->body, r->body_len, 0, NULL);
	if (!j)
		abort(); /* JSON that does not parse */
	if (strcmp(r->content_type, "application/problem+json") == 0) {
		const char *type = json_string_value(json_object_get(j, "type"));

		if (json_integer_value(json_object_get(j, "status")) != (json_int_t)r->status || !type ||
		    strncmp(type, "urn:numaorch:problem:", 21) != 0 || !json_is_string(json_object_get(j, "detail")))
			abort();
	}
	json_decref(j);
	(void)rq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *p = data, *nl;
	struct api_request rq = { .content_length = -1, .transport = API_UNIX };
	struct api_response resp;
	char *line, *sp, *method, *ctype = NULL, *auth = NULL, *body;

	nl = memchr(p, '\n', (size_t)(end - p));
	line = dupn(p, nl ? (size_t)(nl - p) : (size_t)(end - p));
	p = nl ? nl + 1 : end;
	sp = strchr(line, ' ');
	method = line;
	rq.target = "/";
	if (sp) {
		*sp = '\0';
		rq.target = sp + 1;
	}
	rq.method = method;
	/* Headers until an empty line. */
	while (p < end) {
		const uint8_t *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		char *h = dupn(p, n);

		p = e ? e + 1 : end;
		if (n == 0) {
			free(h);
			break;
		}
		if (strncasecmp(h, "Content-Type: ", 14) == 0 && !ctype)
			ctype = xstrdup(h + 14);
		else if (strncasecmp(h, "Authorization: ", 15) == 0 && !auth)
			auth = xstrdup(h + 15);
		else if (strcasecmp(h, "Transport: tcp") == 0)
			rq.transport = API_TCP;
		free(h);
	}
	body = dupn(p, (size_t)(end - p));
	rq.content_type = ctype;
	rq.authorization = auth;
	rq.body = body;
	rq.body_len = (size_t)(end - p);
	rq.content_length = (int64_t)rq.body_len;

	/* Both entry points, as the server uses them. */
	if (api_preflight(api, &rq, &resp))
		check(&rq, &resp);
	api_response_clear(&resp);
	api_handle(api, &rq, &resp);
	check(&rq, &resp);
	api_response_clear(&resp);

	free(line);
	free(ctype);
	free(auth);
	free(body);
	return 0;
}
