/* http.c - requests and their answers (http.h). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "spin.h"

#define SPIN_US_MAX 1000000 /* /spin's longest: one second */

uint64_t http_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static bool grow(char **buf, size_t *cap, size_t need)
{
	size_t cap2 = *cap ? *cap : 4096;
	char *p;

	if (need <= *cap)
		return true;
	while (cap2 < need)
		cap2 *= 2;
	p = realloc(*buf, cap2);
	if (!p)
		return false;
	*buf = p;
	*cap = cap2;
	return true;
}

static void append(struct http_conn *c, const char *p, size_t n)
{
	if (!grow(&c->out, &c->out_cap, c->out_len + n)) {
		c->refuse = 503; /* cannot answer: drop the connection */
		return;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Service Unavailable";
	}
}

static void respond(struct http_conn *c, int status, const char *body, size_t len, bool close)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
			 status, reason(status), len, close ? "Connection: close\r\n" : "");

	append(c, head, (size_t)n);
	append(c, body, len);
}

/* --- The parser's callbacks: they only collect. */

static int on_message_begin(http_parser *p)
{
	struct http_conn *c = p->data;

	c->begun = true;
	c->headers_done = c->complete = c->keep_body = false;
	c->header_bytes = c->url_len = c->body_len = 0;
	c->began_ns = http_now_ns();
	return 0;
}

static int count_header(struct http_conn *c, size_t n)
{
	c->header_bytes += n;
	if (c->header_bytes > HTTP_HEADERS_MAX) {
		c->refuse = 431;
		return -1;
	}
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = p->data;

	if (c->url_len + n >= sizeof(c->url)) {
		c->refuse = 414;
		return -1;
	}
	memcpy(c->url + c->url_len, at, n);
	c->url_len += n;
	return count_header(c, n);
}

/* Field and value bytes, and 4 for ": " and the line's CRLF. */
static int on_header_field(http_parser *p, const char *at, size_t n)
{
	(void)at;
	return count_header(p->data, n + 2);
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	(void)at;
	return count_header(p->data, n + 2);
}

static bool is_path(const struct http_conn *c, const char *path)
{
	size_t n = strlen(path);

	return c->url_len >= n && !memcmp(c->url, path, n) &&
	       (c->url_len == n || c->url[n] == '?');
}

static int on_headers_complete(http_parser *p)
{
	struct http_conn *c = p->data;

	c->headers_done = true;
	c->keep_body = p->method == HTTP_POST && is_path(c, "/echo");
	if (c->keep_body && p->content_length != ULLONG_MAX && p->content_length > HTTP_BODY_MAX) {
		c->refuse = 413;
		return -1;
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct http_conn *c = p->data;

	if (!c->keep_body)
		return 0;
	if (c->body_len + n > HTTP_BODY_MAX) {
		c->refuse = 413;
		return -1;
	}
	if (!grow(&c->body, &c->body_cap, c->body_len + n)) {
		c->refuse = 503;
		return -1;
	}
	memcpy(c->body + c->body_len, at, n);
	c->body_len += n;
	return 0;
}

/* Stops the parser after each request, which is answered before the next
 * one (pipelining) is parsed. */
static int on_message_complete(http_parser *p)
{
	struct http_conn *c = p->data;

	c->complete = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* --- Routes. */

/* us=N from the query, N digits only; -1 if absent or malformed. */
static long spin_us(const struct http_conn *c)
{
	const char *q = memchr(c->url, '?', c->url_len), *end = c->url + c->url_len;
	long us = 0;

	if (!q || end - q < 5 || memcmp(q, "?us=", 4))
		return -1;
	for (q += 4; q < end; q++) {
		if (*q < '0' || *q > '9' || us > SPIN_US_MAX)
			return -1;
		us = us * 10 + (*q - '0');
	}
	return us <= SPIN_US_MAX ? us : -1;
}

/* Answers the request; whether the connection ends after it (asked for,
 * or the server stopping meanwhile). */
static bool answer(struct http_conn *c, bool close)
{
	const http_parser *p = &c->parser;
	char sum[32];
	int status = 404, n = 0;
	const char *body = "not found\n";
	size_t len = 10;

	if (p->http_major != 1) {
		/* As Go and nginx answer HTTP/2.0 or 9.9 over this text protocol:
		 * a version it does not speak, and the connection ends. */
		status = 505, body = "HTTP version not supported\n", len = 27, close = true;
	} else if (p->method == HTTP_GET && c->url_len == 1 && c->url[0] == '/') {
		status = 200, body = "ok", len = 2;
	} else if (p->method == HTTP_GET && is_path(c, "/spin")) {
		long us = spin_us(c);

		if (us < 0) {
			status = 400, body = "us=MICROSECONDS, at most 1000000\n", len = 33;
		} else {
			uint64_t work;

			if (c->around_spin)
				c->around_spin(us, true);
			work = spin_work((uint64_t)us);
			if (c->around_spin)
				c->around_spin(us, false);
			n = snprintf(sum, sizeof(sum), "%016llx\n", (unsigned long long)work);
			status = 200, body = sum, len = (size_t)n;
		}
	} else if (c->keep_body) {
		status = 200, body = c->body ? c->body : "", len = c->body_len;
	}
	close = close || (c->stopping && atomic_load(c->stopping));
	respond(c, status, body, len, close);
	return close;
}

/* --- The connection. */

void http_conn_init(struct http_conn *c, const atomic_bool *stopping)
{
	memset(c, 0, sizeof(*c));
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->stopping = stopping;
}

void http_conn_release(struct http_conn *c)
{
	free(c->body);
	free(c->out);
	c->body = c->out = NULL;
}

bool http_conn_input(struct http_conn *c, const char *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n = http_parser_execute(&c->parser, &settings, data + off, len - off);
		enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);

		off += n;
		if (c->refuse) {
			respond(c, c->refuse, reason(c->refuse), strlen(reason(c->refuse)), true);
			return false;
		}
		if (err == HPE_PAUSED && c->complete) {
			bool close = answer(c, !http_should_keep_alive(&c->parser) ||
						       c->parser.upgrade);

			c->begun = false;
			if (close || c->refuse)
				return false;
			http_parser_pause(&c->parser, 0);
		} else if (err != HPE_OK) {
			respond(c, 400, "malformed request\n", 18, true);
			return false;
		}
	}
	return true;
}

void http_conn_timed_out(struct http_conn *c)
{
	respond(c, 408, "request timeout\n", 16, true);
}
