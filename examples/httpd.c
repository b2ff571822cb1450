/* An HTTP/1.1 server on xfiber: a fiber per connection, keep-alive and
 * pipelining, requests parsed by http-parser (docs/io.md says why that one).
 *
 *   example_httpd [--port P] [--workers N] [--slice-us S] [--cooperative]
 *                 [--header-timeout-ms T] [--idle-timeout-ms T] [--threads]
 *
 * Port 0 (the default) picks a free port; the first line printed is
 * "listening on 127.0.0.1:PORT".  Workers default to one per CPU.
 *
 *   GET /            200, "ok"
 *   GET /spin?us=N   200 after N microseconds of AVX-512 work (spin.h), ZMM
 *                    registers live throughout; the body is its checksum
 *   POST /echo       the request body back (up to 1 MiB, else 413)
 *   anything else    404; a malformed request 400 and a close; headers over
 *                    16 KiB 431; headers still incomplete after the header
 *                    timeout (10 s) 408 and a close; an idle keep-alive
 *                    connection is closed after the idle timeout (60 s)
 *
 * SIGINT or SIGTERM: it stops accepting, finishes the requests in flight,
 * closes idle connections and exits 0.
 *
 * --threads serves each connection on a kernel thread instead, without
 * xfiber (its calls are then the plain ones) and without the timeouts: the
 * thread-per-connection peer of `xfiber bench server`, the same program
 * but for the scheduling.  Out of descriptors (EMFILE), it
 * goes on serving and accepts again a little later.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xfiber.h>

#include "spin.h"

#define HEADERS_MAX (16 * 1024)	 /* beyond: 431 */
#define BODY_MAX    (1024 * 1024) /* of a POST /echo; beyond: 413 */
#define URL_MAX	    2048	  /* beyond: 414 */
#define SPIN_US_MAX 1000000	  /* /spin's longest: one second */
#define ACCEPT_RETRY_NS (50 * 1000 * 1000) /* after EMFILE */

static uint64_t header_timeout_ns = 10ull * 1000 * 1000 * 1000;
static uint64_t idle_timeout_ns = 60ull * 1000 * 1000 * 1000;

/* One connection; it lives on its fiber's stack. */
struct conn {
	int fd;
	http_parser parser;
	struct conn *prev, *next; /* in `conns`, for the stop */
	atomic_bool idle;	  /* waiting for the first byte of a request */

	/* The request being parsed. */
	bool begun, headers_done, complete;
	int refuse;		  /* a status that ends the connection, or 0 */
	size_t header_bytes;
	uint64_t deadline_ns; /* for the headers to arrive */
	char url[URL_MAX];
	size_t url_len;
	bool keep_body; /* POST /echo: the body is the answer */
	char *body;
	size_t body_len, body_cap;

	/* Responses not yet written: pipelined requests are answered at once. */
	char *out;
	size_t out_len, out_cap;

	char in[16 * 1024];
};

/* A pthread mutex: in a fiber, xfiber makes its wait a fiber's. */
static struct {
	pthread_mutex_t lock;
	struct conn *head;
	long nr;
} conns = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_bool stopping;
static bool threads; /* --threads: a kernel thread per connection, no xfiber */

static uint64_t now_ns(void)
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

static void append(struct conn *c, const char *p, size_t n)
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
	default: return "Service Unavailable";
	}
}

static void respond(struct conn *c, int status, const char *body, size_t len, bool close)
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
	struct conn *c = p->data;

	c->begun = true;
	c->headers_done = c->complete = c->keep_body = false;
	c->header_bytes = c->url_len = c->body_len = 0;
	c->deadline_ns = now_ns() + header_timeout_ns;
	return 0;
}

static int count_header(struct conn *c, size_t n)
{
	c->header_bytes += n;
	if (c->header_bytes > HEADERS_MAX) {
		c->refuse = 431;
		return -1;
	}
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

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

static bool is_path(const struct conn *c, const char *path)
{
	size_t n = strlen(path);

	return c->url_len >= n && !memcmp(c->url, path, n) &&
	       (c->url_len == n || c->url[n] == '?');
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->headers_done = true;
	c->keep_body = p->method == HTTP_POST && is_path(c, "/echo");
	if (c->keep_body && p->content_length != ULLONG_MAX && p->content_length > BODY_MAX) {
		c->refuse = 413;
		return -1;
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (!c->keep_body)
		return 0;
	if (c->body_len + n > BODY_MAX) {
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
	struct conn *c = p->data;

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
static long spin_us(const struct conn *c)
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
static bool answer(struct conn *c, bool close)
{
	const http_parser *p = &c->parser;
	char sum[32];
	int status = 404, n = 0;
	const char *body = "not found\n";
	size_t len = 10;

	if (p->method == HTTP_GET && c->url_len == 1 && c->url[0] == '/') {
		status = 200, body = "ok", len = 2;
	} else if (p->method == HTTP_GET && is_path(c, "/spin")) {
		long us = spin_us(c);

		if (us < 0) {
			status = 400, body = "us=MICROSECONDS, at most 1000000\n", len = 33;
		} else {
			n = snprintf(sum, sizeof(sum), "%016llx\n",
				     (unsigned long long)spin_work((uint64_t)us));
			status = 200, body = sum, len = (size_t)n;
		}
	} else if (c->keep_body) {
		status = 200, body = c->body ? c->body : "", len = c->body_len;
	}
	close = close || atomic_load(&stopping);
	respond(c, status, body, len, close);
	return close;
}

/* --- A connection's life. */

static bool flush(struct conn *c)
{
	bool ok = c->out_len == 0 || xf_write(c->fd, c->out, c->out_len) == (ssize_t)c->out_len;

	c->out_len = 0;
	return ok;
}

static void conn_link(struct conn *c)
{
	pthread_mutex_lock(&conns.lock);
	c->next = conns.head;
	if (c->next)
		c->next->prev = c;
	conns.head = c;
	conns.nr++;
	pthread_mutex_unlock(&conns.lock);
}

static void conn_unlink(struct conn *c)
{
	pthread_mutex_lock(&conns.lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns.head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	conns.nr--;
	pthread_mutex_unlock(&conns.lock);
}

/* Marks the connection idle or not; at the stop, one that goes idle is
 * done.  Sequentially consistent, against stop_on_signal's store and scan:
 * either it sees this connection idle, or this sees it stopping. */
static bool set_idle(struct conn *c, bool idle)
{
	atomic_store(&c->idle, idle);
	return !(idle && atomic_load(&stopping));
}

/* Parses and answers what was read; false when the connection must end. */
static bool handle_input(struct conn *c, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n = http_parser_execute(&c->parser, &settings, c->in + off, len - off);
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

static void serve(void *arg)
{
	struct conn *c = calloc(1, sizeof(*c));
	int fd = (int)(intptr_t)arg;

	if (!c) {
		xf_close(fd);
		return;
	}
	c->fd = fd;
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	conn_link(c);
	for (;;) {
		uint64_t wait_ns = idle_timeout_ns;
		ssize_t n;

		if (!flush(c))
			break;
		if (c->begun) {
			uint64_t now = now_ns();

			if (!c->headers_done && now >= c->deadline_ns) {
				respond(c, 408, "request timeout\n", 16, true);
				flush(c);
				break;
			}
			if (!c->headers_done)
				wait_ns = c->deadline_ns - now;
		} else if (!set_idle(c, true)) {
			break; /* stopping, and nothing in flight here */
		}
		if (!threads)
			xf_fd_set_timeout(fd, wait_ns, idle_timeout_ns);
		n = xf_read(fd, c->in, sizeof(c->in));
		set_idle(c, false);
		if (n < 0 && errno == ETIMEDOUT && c->begun && !c->headers_done)
			continue; /* the deadline check above answers 408 */
		if (n <= 0)
			break; /* closed, reset, or idle too long */
		if (!handle_input(c, (size_t)n)) {
			flush(c);
			break;
		}
	}
	conn_unlink(c);
	xf_close(fd);
	free(c->body);
	free(c->out);
	free(c);
}

/* --- Stopping. */

struct stop_arg {
	int sfd, lfd;
};

static atomic_long serving; /* connections accepted and not yet closed */

/* Waits for SIGINT or SIGTERM, then wakes the acceptor (which stops) and
 * ends the idle connections; busy ones end after their answer. */
static void *stop_on_signal(void *arg)
{
	struct stop_arg *a = arg;
	struct pollfd p = {.fd = a->sfd, .events = POLLIN};
	struct signalfd_siginfo si;

	while (xf_poll(&p, 1, -1) < 0 || read(a->sfd, &si, sizeof(si)) != sizeof(si))
		;
	atomic_store(&stopping, true);
	if (threads)
		shutdown(a->lfd, SHUT_RDWR); /* a blocked accept returns; a close would not end it */
	else
		xf_close(a->lfd); /* the acceptor fiber wakes with EBADF */
	pthread_mutex_lock(&conns.lock);
	for (struct conn *c = conns.head; c; c = c->next)
		if (atomic_load(&c->idle))
			shutdown(c->fd, SHUT_RD); /* its read returns 0 */
	pthread_mutex_unlock(&conns.lock);
	return NULL;
}

static void *serve_thread(void *arg)
{
	serve(arg);
	atomic_fetch_sub(&serving, 1);
	return NULL;
}

/* A fiber per connection, or with --threads a kernel thread. */
static int start(void *(*fn)(void *), void *arg)
{
	static xf_attr detached = {.detached = true, .worker = -1};
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (!threads)
		return xf_spawn(NULL, fn, arg, &detached);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, XF_STACK_SIZE_DEFAULT);
	err = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return err;
}

static void usage(void)
{
	fprintf(stderr, "usage: example_httpd [--port P] [--workers N] [--slice-us S] "
			"[--cooperative] [--header-timeout-ms T] [--idle-timeout-ms T] "
			"[--threads]\n");
	exit(2);
}

static unsigned long number(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = s ? strtoul(s, &end, 10) : 0;
	if (!s || errno || end == s || *end || v > max || *s == '-')
		usage();
	return v;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(addr);
	xf_config cfg = {0};
	struct stop_arg stop;
	struct rlimit nofile;
	sigset_t sigs;
	bool out_of_fds = false;
	int err;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--cooperative") || !strcmp(opt, "--threads")) {
			cfg.cooperative |= opt[2] == 'c';
			threads |= opt[2] == 't';
			continue;
		}
		if (!strcmp(opt, "--port"))
			addr.sin_port = htons((uint16_t)number(val, 65535));
		else if (!strcmp(opt, "--workers"))
			cfg.workers = (unsigned)number(val, XF_WORKERS_MAX);
		else if (!strcmp(opt, "--slice-us"))
			cfg.slice_us = (unsigned)number(val, 1000000);
		else if (!strcmp(opt, "--header-timeout-ms"))
			header_timeout_ns = number(val, 3600000) * 1000000;
		else if (!strcmp(opt, "--idle-timeout-ms"))
			idle_timeout_ns = number(val, 3600000) * 1000000;
		else
			usage();
		i++;
	}
	/* As many connections as the hard limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* Blocked before the runtime's threads start, so that they inherit the
	 * mask and the signals wait for the signalfd. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client gone: EPIPE, not death */
	err = threads ? 0 : xf_init(&cfg);
	if (err) {
		fprintf(stderr, "example_httpd: xf_init: %s\n", strerror(err));
		return 1;
	}
	stop.sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	stop.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(stop.lfd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
	if (stop.sfd < 0 || stop.lfd < 0 || bind(stop.lfd, (struct sockaddr *)&addr, len) ||
	    listen(stop.lfd, 4096) || getsockname(stop.lfd, (struct sockaddr *)&addr, &len)) {
		perror("example_httpd: listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
	fflush(stdout);
	err = start(stop_on_signal, &stop);
	if (err) {
		fprintf(stderr, "example_httpd: %s\n", strerror(err));
		return 1;
	}
	for (;;) {
		int fd = xf_accept4(stop.lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0) {
			out_of_fds = false;
			atomic_fetch_add(&serving, 1);
			if (start(serve_thread, (void *)(intptr_t)fd)) {
				atomic_fetch_sub(&serving, 1);
				xf_close(fd); /* no memory for its fiber: refuse it */
			}
		} else if (atomic_load(&stopping)) {
			break;
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* The connection waits in the backlog until a descriptor
			 * is free: serve the others meanwhile. */
			if (!out_of_fds)
				fprintf(stderr, "example_httpd: accept: %s; trying again every 50 ms\n",
					strerror(errno));
			out_of_fds = true;
			if (threads)
				usleep(ACCEPT_RETRY_NS / 1000);
			else
				xf_sleep_ns(ACCEPT_RETRY_NS);
		} else if (errno != EINTR && errno != ECONNABORTED && errno != EPROTO) {
			perror("example_httpd: accept");
			return 1;
		}
	}
	/* Stopping: every connection ends once its requests are answered. */
	while (atomic_load(&serving))
		if (threads)
			usleep(1000);
		else
			xf_sleep_ns(1000000);
	err = threads ? close(stop.lfd) : xf_shutdown(); /* and the signal's fiber */
	close(stop.sfd);
	return err ? 1 : 0;
}
