/* http.h - HTTP/1.1 requests and their answers for example_httpd and the
 * libuv peer of `xfiber bench server`, whatever moves the bytes: parsed by
 * http-parser (Debian libhttp-parser-dev; docs/io.md says why that one).
 *
 *   GET /            200, "ok"
 *   GET /spin?us=N   200 after N microseconds of vector work (spin.h); the
 *                    body is its checksum
 *   POST /echo       the request body back (up to 1 MiB, else 413)
 *   anything else    404; a malformed request 400, headers over 16 KiB 431,
 *                    a URL over 2 KiB 414 - each ending the connection
 */
#ifndef XF_EXAMPLES_HTTP_H
#define XF_EXAMPLES_HTTP_H

#include <http_parser.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEADERS_MAX (16 * 1024)   /* beyond: 431 */
#define HTTP_BODY_MAX	 (1024 * 1024) /* of a POST /echo; beyond: 413 */
#define HTTP_URL_MAX	 2048	       /* beyond: 414 */

/* One connection's requests; `out` holds the answers not yet written, in
 * order: pipelined requests are answered as they are parsed. */
struct http_conn {
	http_parser parser;
	const atomic_bool *stopping; /* the server stops: answers end the connection */
	bool begun;		     /* a request's first byte has come */
	bool headers_done, complete;
	int refuse; /* a status that ends the connection, or 0 */
	size_t header_bytes;
	uint64_t began_ns; /* CLOCK_MONOTONIC when the request began */
	char url[HTTP_URL_MAX];
	size_t url_len;
	bool keep_body; /* POST /echo: the body is the answer */
	char *body;
	size_t body_len, body_cap;
	char *out;
	size_t out_len, out_cap;
	/* Called before (begins) and after a /spin of us microseconds, or
	 * NULL: example_httpd's --batch-over-us marks long work there. */
	void (*around_spin)(long us, bool begins);
};

void http_conn_init(struct http_conn *c, const atomic_bool *stopping);
void http_conn_release(struct http_conn *c);

/* Parses len bytes, appending the answer of every whole request to c->out.
 * False when the connection must end once c->out is written (the client
 * asked, the request was refused, or the server stops). */
bool http_conn_input(struct http_conn *c, const char *data, size_t len);

/* The request under way did not get its headers in time: 408, to end with. */
void http_conn_timed_out(struct http_conn *c);

uint64_t http_now_ns(void);

#endif
