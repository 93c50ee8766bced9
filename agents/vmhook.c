#include "vmhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *vmhook_event(const char *op, const char *subop)
{
	static const struct { const char *op, *subop, *event; } map[] = {
		{ "started", "begin", "started" },
		{ "stopped", "end", "stopped" },
		{ "release", "end", "release" },
		{ "reconnect", "begin", "reconnect" },
	};

	if (!op || !subop)
		return NULL;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(op, map[i].op) == 0 && strcmp(subop, map[i].subop) == 0)
			return map[i].event;
	return NULL;
}

enum { S_TEXT, S_LT, S_NAME, S_ATTRS, S_SQ, S_DQ, S_COMMENT, S_DECL, S_PI };

void vmhook_uuid_init(struct vmhook_uuid_scan *s)
{
	memset(s, 0, sizeof(*s));
	s->state = S_TEXT;
}

static bool uuid_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* '>' closes a tag: a start tag opens an element unless it ended "/>". */
static void tag_end(struct vmhook_uuid_scan *s, char last)
{
	s->state = S_TEXT;
	if (s->closing) {
		if (s->depth > 0)
			s->depth--;
		return;
	}
	if (last == '/')
		return;
	s->depth++;
	s->tag[s->taglen < sizeof(s->tag) ? s->taglen : sizeof(s->tag) - 1] = '\0';
	if (s->depth == 2 && !s->tag_overflow && strcmp(s->tag, "uuid") == 0) {
		s->in_uuid = true;
		s->textlen = 0;
	}
}

bool vmhook_uuid_feed(struct vmhook_uuid_scan *s, const char *buf, size_t len)
{
	for (size_t i = 0; i < len && !s->done; i++) {
		char c = buf[i], last = s->prev[2];

		memmove(s->prev, s->prev + 1, 2);
		s->prev[2] = c;
		switch (s->state) {
		case S_TEXT:
			if (c == '<') {
				if (s->in_uuid) {
					if (s->textlen == 36) {
						s->uuid[36] = '\0';
						s->done = true;
						break;
					}
					s->in_uuid = false;
				}
				s->state = S_LT;
			} else if (s->in_uuid && !space(c)) {
				if (s->textlen < 36 && uuid_char(c))
					s->uuid[s->textlen++] = c;
				else
					s->in_uuid = false; /* not a uuid: keep looking */
			}
			break;
		case S_LT:
			s->closing = false;
			s->taglen = 0;
			s->tag_overflow = false;
			if (c == '!') {
				s->state = S_DECL; /* "<!--" turns into a comment below */
			} else if (c == '?') {
				s->state = S_PI;
			} else if (c == '/') {
				s->closing = true;
				s->state = S_NAME;
			} else {
				s->state = S_NAME;
				s->tag[s->taglen++] = c;
			}
			break;
		case S_NAME:
			if (c == '>') {
				tag_end(s, last);
			} else if (space(c) || c == '/') {
				s->state = S_ATTRS;
			} else if (s->taglen < sizeof(s->tag) - 1) {
				s->tag[s->taglen++] = c;
			} else {
				s->tag_overflow = true;
			}
			break;
		case S_ATTRS:
			if (c == '\'')
				s->state = S_SQ;
			else if (c == '"')
				s->state = S_DQ;
			else if (c == '>')
				tag_end(s, last);
			break;
		case S_SQ:
			if (c == '\'')
				s->state = S_ATTRS;
			break;
		case S_DQ:
			if (c == '"')
				s->state = S_ATTRS;
			break;
		case S_DECL:
			if (c == '-' && last == '-' && s->prev[0] == '!')
				s->state = S_COMMENT;
			else if (c == '>')
				s->state = S_TEXT;
			break;
		case S_COMMENT:
			if (c == '>' && last == '-' && s->prev[0] == '-')
				s->state = S_TEXT;
			break;
		case S_PI:
			if (c == '>' && last == '?')
				s->state = S_TEXT;
			break;
		}
	}
	return s->done;
}

static int put(char *out, size_t outsz, size_t *off, const char *s, size_t n)
{
	if (*off + n >= outsz)
		return -1;
	memcpy(out + *off, s, n);
	*off += n;
	out[*off] = '\0';
	return 0;
}

static int put_json_string(char *out, size_t outsz, size_t *off, const char *s)
{
	if (put(out, outsz, off, "\"", 1) < 0)
		return -1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			if (put(out, outsz, off, esc, 2) < 0)
				return -1;
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			if (put(out, outsz, off, esc, 6) < 0)
				return -1;
		} else if (put(out, outsz, off, (const char *)p, 1) < 0) {
			return -1;
		}
	}
	return put(out, outsz, off, "\"", 1);
}

int vmhook_body(char *out, size_t outsz, const char *event, const char *name, const char *uuid)
{
	size_t off = 0;

	if (!outsz)
		return -1;
	out[0] = '\0';
	if (put(out, outsz, &off, "{\"source\":\"libvirt-hook\",\"event\":", 33) < 0 ||
	    put_json_string(out, outsz, &off, event) < 0 ||
	    put(out, outsz, &off, ",\"domain\":", 10) < 0 ||
	    put_json_string(out, outsz, &off, name) < 0)
		return -1;
	if (uuid && *uuid && (put(out, outsz, &off, ",\"uuid\":", 8) < 0 ||
			      put_json_string(out, outsz, &off, uuid) < 0))
		return -1;
	if (put(out, outsz, &off, "}", 1) < 0)
		return -1;
	return (int)off;
}

static void trim(char *s)
{
	char *e, *b = s;

	while (*b == ' ' || *b == '\t')
		b++;
	memmove(s, b, strlen(b) + 1);
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
}

void vmhook_socket_from_config(const char *text, char *out, size_t outsz)
{
	char section[64] = "";
	const char *p = text;

	snprintf(out, outsz, "%s", VMHOOK_DEFAULT_SOCKET);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024], *eq;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl ? nl + 1 : NULL;
		trim(line);
		if (!line[0] || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			char *close = strchr(line, ']');

			if (close) {
				*close = '\0';
				snprintf(section, sizeof(section), "%.63s", line + 1);
				trim(section);
			}
			continue;
		}
		eq = strchr(line, '=');
		if (!eq || strcmp(section, "api") != 0)
			continue;
		*eq = '\0';
		trim(line);
		trim(eq + 1);
		if (strcmp(line, "socket") == 0) {
			/* inih's inline comments: " ;" starts one */
			char *sc = strstr(eq + 1, " ;");

			if (sc)
				*sc = '\0';
			trim(eq + 1);
			snprintf(out, outsz, "%s", eq + 1);
		}
	}
}

int vmhook_http_status(const char *buf, size_t len)
{
	int code = 0;

	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -1;
	for (size_t i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		code = code * 10 + (buf[i] - '0');
	}
	return code;
}
