#include "ctl_http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct buf {
	char *p;
	size_t len, cap, max;
	int overflow;
	CURL *h;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	if (b->len + n > b->max) {
		b->overflow = 1;
		return 0;
	}
	if (!b->cap) {
		curl_off_t cl = -1;

		/* The whole reply in one allocation when its length is known:
		 * growing by doubling copies it and leaves the old blocks in
		 * the heap. */
		if (curl_easy_getinfo(b->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl > 0 &&
		    (curl_off_t)n <= cl && cl <= (curl_off_t)b->max) {
			b->p = malloc((size_t)cl + 1);
			if (!b->p)
				abort(); /* the project's OOM policy */
			b->cap = (size_t)cl + 1;
		}
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 8192;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			abort(); /* the project's OOM policy */
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, ptr, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

char *ctl_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *r;

	if (!e)
		abort();
	r = strdup(e);
	curl_free(e);
	if (!r)
		abort();
	return r;
}

/* curl says "Failed to connect to localhost port 80" for a unix socket
 * too; say what is actually wrong. */
static void unix_why(const char *path, char *err, size_t errsz)
{
	struct stat st;

	if (stat(path, &st) < 0)
		snprintf(err, errsz, "cannot connect to %s: %s (is numaorchd running? --socket to choose another)",
			 path, strerror(errno));
	else if (!S_ISSOCK(st.st_mode))
		snprintf(err, errsz, "cannot connect to %s: not a socket", path);
	else if (access(path, W_OK) < 0)
		snprintf(err, errsz, "cannot connect to %s: %s (run as root or as a member of its group)", path,
			 strerror(errno));
	else
		snprintf(err, errsz, "cannot connect to %s: connection refused (numaorchd is not running)", path);
}

int ctl_request(const struct ctl_conn *c, const char *method, const char *path, const char *body, size_t max,
		struct ctl_reply *out, char *err, size_t errsz)
{
	char errbuf[CURL_ERROR_SIZE] = "", url[4096], *auth = NULL;
	struct curl_slist *hdr = NULL;
	struct buf b = { .max = max };
	const char *ct = NULL;
	CURLcode rc;
	CURL *h;

	memset(out, 0, sizeof(*out));
	h = curl_easy_init();
	if (!h) {
		snprintf(err, errsz, "libcurl failed to initialise");
		return -1;
	}
	b.h = h;
	if (c->url) {
		size_t n = strlen(c->url);

		snprintf(url, sizeof(url), "%.*s%s", (int)(n && c->url[n - 1] == '/' ? n - 1 : n), c->url, path);
	} else {
		/* The host part is ignored on a unix socket; "localhost" keeps
		 * the Host header well-formed. */
		snprintf(url, sizeof(url), "http://localhost%s", path);
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 5000 ? c->timeout_ms : 5000L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	/* refused on its Content-Length, before any of it is read */
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->agent ? c->agent : "numaorchctl");
	/* Never follow redirects: the token must not travel elsewhere. */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (c->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
	hdr = curl_slist_append(hdr, "Accept: application/json, application/problem+json, text/plain");
	if (c->token) {
		size_t n = strlen(c->token) + 32;

		auth = malloc(n);
		if (!auth)
			abort();
		snprintf(auth, n, "Authorization: Bearer %s", c->token);
		hdr = curl_slist_append(hdr, auth);
	}
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	/* No "Expect: 100-continue" round trip for our small bodies. */
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);

	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		int ret = -1;

		if (b.overflow || rc == CURLE_FILESIZE_EXCEEDED) {
			snprintf(err, errsz, "%s %s: the reply is larger than %zu MiB: not what numaorchd sends", method,
				 path, max >> 20);
			ret = -EFBIG;
		} else if (!c->url && rc == CURLE_COULDNT_CONNECT)
			unix_why(c->socket, err, errsz);
		else if (!c->url)
			snprintf(err, errsz, "cannot talk to numaorchd on %s: %s", c->socket,
				 errbuf[0] ? errbuf : curl_easy_strerror(rc));
		else
			snprintf(err, errsz, "cannot talk to %s at %s: %s", c->peer ? c->peer : "numaorchd", c->url,
				 errbuf[0] ? errbuf : curl_easy_strerror(rc));
		free(b.p);
		curl_slist_free_all(hdr);
		free(auth);
		curl_easy_cleanup(h);
		return ret;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(out->content_type, sizeof(out->content_type), "%s", ct);
	if (!b.p) {
		b.p = strdup("");
		if (!b.p)
			abort();
	}
	out->body = b.p;
	out->len = b.len;
	curl_slist_free_all(hdr);
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	curl_easy_cleanup(h);
	return 0;
}

void ctl_reply_free(struct ctl_reply *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

int ctl_read_token(const char *path, char *buf, size_t bufsz, char *err, size_t errsz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		int r = -errno;

		snprintf(err, errsz, "token file %s: %s", path, strerror(-r));
		return r;
	}
	if (!fgets(buf, (int)bufsz, f))
		buf[0] = '\0';
	fclose(f);
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	if (!n) {
		snprintf(err, errsz, "token file %s is empty", path);
		return -EINVAL;
	}
	return 0;
}
