/*
 * test_httpd.c - examples/httpd.c as a client sees it, including the clients
 * a server meets on the Internet.  Each case starts the server, does its
 * worst, then checks that a normal request still succeeds, that the server
 * holds as many descriptors as before, and that SIGTERM ends it with exit 0.
 *
 *   examples_test_httpd PATH-TO-example_httpd CASE
 *
 *   routes      every route, chunked bodies, HTTP/1.0, 404 and 400s
 *   pipeline    100 requests in one write, answered in order
 *   preempt     concurrent /spin requests on one worker with 100 us slices:
 *               the ZMM registers must survive every preemption (checksums)
 *   malformed   request lines and headers that are not HTTP: 400 and a close;
 *               an HTTP major version other than 1: 505 and a close
 *   headers     headers over 16 KiB: 431; just under: 200
 *   slowloris   one header byte every 100 ms: 408 after the header timeout,
 *               while other clients are served
 *   disconnect  clients that leave mid-request and mid-response
 *   halfclose   requests followed by shutdown(SHUT_WR)
 *   body        a body longer than announced, and one over the limit
 *   idle        10,000 idle connections, and a request among them
 *   emfile      the server out of descriptors: it serves those it has and
 *               accepts the rest once some are closed
 *   stop        SIGTERM with a request in flight: answered, then exit 0
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"
#include "testlib.h"

static pid_t server;
static int port;
static const char *server_path;

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void start_server(const char *workers, const char *slice)
{
	char *args[] = {(char *)server_path,
			"--workers",
			(char *)workers,
			"--slice-us",
			(char *)slice,
			"--header-timeout-ms",
			"1000",
			NULL};

	server = xf_test_start_server(args, &port, NULL);
}

static int open_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	CHECK(d != NULL);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int connect_server(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		xf_test_fail("connect: %s", strerror(errno));
	/* No test waits forever for the server. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){.tv_sec = 20}, sizeof(struct timeval));
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			xf_test_fail("send: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

struct response {
	int status;
	bool close; /* Connection: close */
	size_t len;
	char body[256 * 1024];
};

/* Reads one response (Content-Length framed) from fd, through a small
 * per-connection buffer: pipelined responses may arrive in one read.
 * False at EOF before a status line. */
struct reader {
	int fd;
	char buf[512 * 1024];
	size_t len;
};

static bool read_more(struct reader *r)
{
	ssize_t n;

	CHECK(r->len < sizeof(r->buf));
	n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
	if (n < 0)
		xf_test_fail("read: %s", strerror(errno));
	r->len += (size_t)n;
	return n > 0;
}

static bool read_response(struct reader *r, struct response *resp)
{
	char *end;
	size_t head, clen;
	const char *cl;

	while (!(end = memmem(r->buf, r->len, "\r\n\r\n", 4)))
		if (!read_more(r)) {
			if (r->len)
				xf_test_fail("EOF inside a response head: %.*s", (int)r->len, r->buf);
			return false;
		}
	head = (size_t)(end - r->buf) + 4;
	if (sscanf(r->buf, "HTTP/1.1 %d", &resp->status) != 1)
		xf_test_fail("not a status line: %.40s", r->buf);
	cl = memmem(r->buf, head, "Content-Length: ", 16);
	CHECK(cl != NULL);
	clen = strtoul(cl + 16, NULL, 10);
	resp->close = memmem(r->buf, head, "Connection: close", 17) != NULL;
	CHECK(clen < sizeof(resp->body));
	while (r->len < head + clen)
		if (!read_more(r))
			xf_test_fail("EOF inside a body");
	memcpy(resp->body, r->buf + head, clen);
	resp->body[clen] = 0;
	resp->len = clen;
	memmove(r->buf, r->buf + head + clen, r->len - head - clen);
	r->len -= head + clen;
	return true;
}

static struct reader *reader_new(int fd)
{
	struct reader *r = calloc(1, sizeof(*r));

	CHECK(r != NULL);
	r->fd = fd;
	return r;
}

/* One request on a new connection; the response's status. */
static int request(const char *raw, size_t n, struct response *resp)
{
	int fd = connect_server();
	struct reader *r = reader_new(fd);

	send_all(fd, raw, n);
	if (!read_response(r, resp))
		xf_test_fail("no response to %.30s", raw);
	free(r);
	close(fd);
	return resp->status;
}

static int request_str(const char *raw, struct response *resp)
{
	return request(raw, strlen(raw), resp);
}

/* The server closes fd: EOF after whatever it sent. */
static void expect_eof(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0 && errno != ECONNRESET)
		xf_test_fail("expected the server to close: %s", strerror(errno));
}

/* GET / on a connection the server closes after answering: when the
 * client sees the end, the server's descriptor is gone too. */
static void expect_ok(void)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	static struct response resp;
	int fd = connect_server();
	struct reader *r = reader_new(fd);

	send_all(fd, req, sizeof(req) - 1);
	CHECK(read_response(r, &resp) && resp.status == 200 && resp.close);
	CHECK(resp.len == 2 && !memcmp(resp.body, "ok", 2));
	expect_eof(fd);
	free(r);
	close(fd);
}

static void expect_spin(struct response *resp, unsigned us)
{
	char want[32];

	snprintf(want, sizeof(want), "%016llx\n", (unsigned long long)spin_work(us));
	if (resp->status != 200 || strcmp(resp->body, want))
		xf_test_fail("/spin?us=%u: status %d, body %s, expected %s", us, resp->status,
			     resp->body, want);
}

/* The server's descriptors come back to `want` (it closes asynchronously). */
static void expect_fds(int want)
{
	uint64_t until = now_ms() + 10000;
	int n;

	while ((n = open_fds(server)) != want) {
		if (now_ms() > until)
			xf_test_fail("the server holds %d descriptors, %d before", n, want);
		usleep(10000);
	}
}

static void stop_server(void)
{
	int status;

	CHECK(kill(server, SIGTERM) == 0);
	CHECK(waitpid(server, &status, 0) == server);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		xf_test_fail("the server ended with status 0x%x, not exit 0", status);
}

/* --- The cases. */

static void case_routes(void)
{
	static struct response resp;
	static char req[200 * 1024], body[100 * 1024];
	int n;

	expect_ok();
	CHECK(request_str("GET /spin?us=10 HTTP/1.1\r\n\r\n", &resp) == 200);
	expect_spin(&resp, 10);
	CHECK(request_str("GET /spin?us=0 HTTP/1.1\r\n\r\n", &resp) == 200);
	expect_spin(&resp, 0);
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 26);
	n = snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
		     sizeof(body));
	memcpy(req + n, body, sizeof(body));
	CHECK(request(req, (size_t)n + sizeof(body), &resp) == 200);
	CHECK(resp.len == sizeof(body) && !memcmp(resp.body, body, sizeof(body)));
	CHECK(request_str("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			  &resp) == 200);
	CHECK(!strcmp(resp.body, "hello world"));
	CHECK(request_str("POST /echo HTTP/1.1\r\n\r\n", &resp) == 200 && resp.len == 0);
	CHECK(request_str("GET /nope HTTP/1.1\r\n\r\n", &resp) == 404);
	CHECK(request_str("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", &resp) == 404);
	CHECK(request_str("GET /echo HTTP/1.1\r\n\r\n", &resp) == 404);
	CHECK(request_str("GET /spinning HTTP/1.1\r\n\r\n", &resp) == 404);
	CHECK(request_str("GET /spin?us=abc HTTP/1.1\r\n\r\n", &resp) == 400);
	CHECK(request_str("GET /spin?us=99999999999 HTTP/1.1\r\n\r\n", &resp) == 400);
	CHECK(request_str("GET /spin HTTP/1.1\r\n\r\n", &resp) == 400);
	/* HTTP/1.0 without keep-alive: answered, then closed. */
	{
		int fd = connect_server();
		struct reader *r = reader_new(fd);

		send_all(fd, "GET / HTTP/1.0\r\n\r\n", 18);
		CHECK(read_response(r, &resp) && resp.status == 200 && resp.close);
		CHECK(!read_response(r, &resp));
		free(r);
		close(fd);
	}
}

static void case_pipeline(void)
{
	static char req[64 * 1024];
	static struct response resp;
	size_t n = 0;
	int fd = connect_server();
	struct reader *r = reader_new(fd);

	for (int i = 0; i < 100; i++) {
		if (i % 3 == 0)
			n += (size_t)sprintf(req + n, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
		else if (i % 3 == 1)
			n += (size_t)sprintf(req + n, "GET /spin?us=%d HTTP/1.1\r\n\r\n", i);
		else
			n += (size_t)sprintf(req + n,
					     "POST /echo HTTP/1.1\r\nContent-Length: 6\r\n\r\nn=%04d", i);
	}
	send_all(fd, req, n);
	for (int i = 0; i < 100; i++) {
		char want[16];

		CHECK(read_response(r, &resp));
		if (i % 3 == 0) {
			CHECK(resp.status == 200 && !strcmp(resp.body, "ok"));
		} else if (i % 3 == 1) {
			expect_spin(&resp, (unsigned)i);
		} else {
			snprintf(want, sizeof(want), "n=%04d", i);
			CHECK(resp.status == 200 && !strcmp(resp.body, want));
		}
	}
	free(r);
	close(fd);
}

#define SPINNERS 16

static void *spinner(void *arg)
{
	static __thread struct response resp;
	unsigned us = 1000 + 100 * (unsigned)(uintptr_t)arg;
	char req[64];
	int fd = connect_server();
	struct reader *r = reader_new(fd);

	for (int i = 0; i < 10; i++) {
		int n = snprintf(req, sizeof(req), "GET /spin?us=%u HTTP/1.1\r\n\r\n", us);

		send_all(fd, req, (size_t)n);
		CHECK(read_response(r, &resp));
		expect_spin(&resp, us);
	}
	free(r);
	close(fd);
	return NULL;
}

static void case_preempt(void)
{
	pthread_t t[SPINNERS];

	for (int i = 0; i < SPINNERS; i++)
		CHECK(pthread_create(&t[i], NULL, spinner, (void *)(uintptr_t)i) == 0);
	for (int i = 0; i < 20; i++)
		expect_ok(); /* served between the slices of the spinners */
	for (int i = 0; i < SPINNERS; i++)
		pthread_join(t[i], NULL);
}

static void expect_refused(const char *raw, size_t n, int status)
{
	static struct response resp;
	int fd = connect_server();
	struct reader *r = reader_new(fd);

	send_all(fd, raw, n);
	if (!read_response(r, &resp) || resp.status != status || !resp.close)
		xf_test_fail("%.40s...: expected %d and a close, got %d", raw, status, resp.status);
	expect_eof(fd);
	free(r);
	close(fd);
}

static void case_malformed(void)
{
	static const char *bad[] = {
	    "GARBAGE\r\n\r\n",
	    "GET\r\n\r\n",
	    "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
	    "GET / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
	    "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	    "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
	    "GET / HTTP/1.1 extra\r\n\r\n",
	    "\x01\x02\x03\x04\r\n\r\n",
	    "GET /\x7f HTTP/1.1\r\n\r\n",
	};
	char big_url[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		expect_refused(bad[i], strlen(bad[i]), 400);
	/* A major version other than 1: 505, as Go and nginx answer (it was
	 * 200, issue 32). */
	expect_refused("GET / HTTP/9.9\r\n\r\n", 18, 505);
	expect_refused("GET / HTTP/2.0\r\n\r\n", 18, 505);
	memset(big_url, 'a', sizeof(big_url));
	memcpy(big_url, "GET /", 5);
	expect_refused(big_url, sizeof(big_url), 414);
}

static void case_headers(void)
{
	static char req[40 * 1024];
	static struct response resp;
	int n = sprintf(req, "GET / HTTP/1.1\r\nX-Big: ");

	/* Just under 16 KiB of headers: served. */
	memset(req + n, 'h', 15 * 1024);
	n += 15 * 1024;
	n += sprintf(req + n, "\r\n\r\n");
	CHECK(request(req, (size_t)n, &resp) == 200);
	/* Over: 431. */
	n = sprintf(req, "GET / HTTP/1.1\r\nX-Big: ");
	memset(req + n, 'h', 17 * 1024);
	n += 17 * 1024;
	n += sprintf(req + n, "\r\n\r\n");
	expect_refused(req, (size_t)n, 431);
	/* Many small ones, over 16 KiB in all. */
	n = sprintf(req, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 1000; i++)
		n += sprintf(req + n, "X-H%04d: vvvvvvvvvv\r\n", i);
	n += sprintf(req + n, "\r\n");
	expect_refused(req, (size_t)n, 431);
}

static void case_slowloris(void)
{
	static struct response resp;
	int slow = connect_server();
	struct reader *r = reader_new(slow);
	uint64_t start = now_ms();
	bool refused = false;

	send_all(slow, "GET / HTTP/1.1\r\n", 16);
	/* One byte every 100 ms, forever: the server's 1 s header timeout
	 * ends it.  Meanwhile others are served. */
	for (int i = 0; i < 100 && !refused; i++) {
		struct pollfd p = {.fd = slow, .events = POLLIN};

		if (send(slow, "X", 1, MSG_NOSIGNAL) != 1)
			break; /* closed already */
		expect_ok();
		refused = poll(&p, 1, 100) == 1;
	}
	CHECK(refused);
	CHECK(read_response(r, &resp) && resp.status == 408 && resp.close);
	expect_eof(slow);
	if (now_ms() - start > 5000)
		xf_test_fail("the slow client was cut after %llu ms; the timeout is 1 s",
			     (unsigned long long)(now_ms() - start));
	free(r);
	close(slow);
}

static void case_disconnect(void)
{
	for (int i = 0; i < 50; i++) {
		int fd = connect_server();

		switch (i % 5) {
		case 0: /* half a request line */
			send_all(fd, "GET /sp", 7);
			break;
		case 1: /* half the headers */
			send_all(fd, "GET / HTTP/1.1\r\nHost:", 21);
			break;
		case 2: /* half a body */
			send_all(fd, "POST /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\nabc", 49);
			break;
		case 3: /* gone while its answer is computed */
			send_all(fd, "GET /spin?us=20000 HTTP/1.1\r\n\r\n", 31);
			break;
		case 4: /* gone with a big answer unread, reset */
		{
			static char req[300 * 1024];
			int n = sprintf(req, "POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
					256 * 1024);

			memset(req + n, 'x', 256 * 1024);
			send_all(fd, req, (size_t)n + 256 * 1024);
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){1, 0},
				   sizeof(struct linger));
			break;
		}
		}
		close(fd);
	}
	usleep(100000); /* the spins in flight finish */
}

static void case_halfclose(void)
{
	static struct response resp;

	for (int i = 0; i < 20; i++) {
		int fd = connect_server();
		struct reader *r = reader_new(fd);

		if (i % 2 == 0) {
			/* A whole request, then no more: answered, then closed. */
			send_all(fd, "GET / HTTP/1.1\r\n\r\n", 18);
			CHECK(shutdown(fd, SHUT_WR) == 0);
			CHECK(read_response(r, &resp) && resp.status == 200);
		} else {
			/* Half a request, then no more. */
			send_all(fd, "GET / HT", 8);
			CHECK(shutdown(fd, SHUT_WR) == 0);
		}
		expect_eof(fd);
		free(r);
		close(fd);
	}
}

static void case_body(void)
{
	static struct response resp;
	static char req[2 * 1024 * 1024];
	int fd = connect_server();
	struct reader *r = reader_new(fd);
	int n;

	/* 10 bytes where 5 were announced: the 5 are the body, and the rest is
	 * not a request. */
	send_all(fd, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloEXTRA", 53);
	CHECK(read_response(r, &resp) && resp.status == 200 && !strcmp(resp.body, "hello"));
	CHECK(read_response(r, &resp) && resp.status == 400 && resp.close);
	expect_eof(fd);
	free(r);
	close(fd);
	/* Over the 1 MiB limit, announced or chunked: 413. */
	expect_refused("POST /echo HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 48, 413);
	n = sprintf(req, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 20; i++) {
		n += sprintf(req + n, "10000\r\n");
		memset(req + n, 'c', 0x10000);
		n += 0x10000;
		n += sprintf(req + n, "\r\n");
	}
	fd = connect_server();
	r = reader_new(fd);
	send(fd, req, (size_t)n, MSG_NOSIGNAL); /* the server may close before the end */
	CHECK(read_response(r, &resp) && resp.status == 413 && resp.close);
	free(r);
	close(fd);
}

#define IDLE 10000

static void case_idle(void)
{
	struct rlimit lim;
	int before = open_fds(server), *fds = malloc(IDLE * sizeof(int));

	CHECK(fds != NULL);
	CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
	if (lim.rlim_max < IDLE + 100)
		xf_test_skip("RLIMIT_NOFILE's hard limit %llu is below %d", (unsigned long long)lim.rlim_max,
			     IDLE + 100);
	lim.rlim_cur = lim.rlim_max;
	CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
	for (int i = 0; i < IDLE; i++)
		fds[i] = connect_server();
	expect_fds(before + IDLE);
	expect_ok();
	for (int i = 0; i < IDLE; i++)
		close(fds[i]);
	free(fds);
}

static void case_emfile(void)
{
	enum { CLIENTS = 60 };
	static struct response resp;
	struct rlimit lim = {.rlim_cur = 40, .rlim_max = 40};
	struct reader *r[CLIENTS];
	int fds[CLIENTS];

	/* The server may hold 40; it holds a few already. */
	CHECK(prlimit(server, RLIMIT_NOFILE, &lim, NULL) == 0);
	for (int i = 0; i < CLIENTS; i++) {
		fds[i] = connect_server(); /* the kernel's backlog accepts them all */
		r[i] = reader_new(fds[i]);
	}
	/* The first ones are served now. */
	send_all(fds[0], "GET / HTTP/1.1\r\n\r\n", 18);
	CHECK(read_response(r[0], &resp) && resp.status == 200);
	/* Half go away: the rest are accepted and served. */
	for (int i = 0; i < CLIENTS / 2; i++) {
		free(r[i]);
		close(fds[i]);
	}
	for (int i = CLIENTS / 2; i < CLIENTS; i++) {
		send_all(fds[i], "GET / HTTP/1.1\r\n\r\n", 18);
		CHECK(read_response(r[i], &resp) && resp.status == 200);
		free(r[i]);
		close(fds[i]);
	}
	/* The limit stays: the checks after the case fit under it. */
}

static void case_stop(void)
{
	static struct response resp;
	int busy = connect_server(), idle = connect_server(), status;
	struct reader *r = reader_new(busy);

	send_all(busy, "GET /spin?us=300000 HTTP/1.1\r\n\r\n", 32);
	usleep(50000); /* the spin is under way */
	CHECK(kill(server, SIGTERM) == 0);
	CHECK(read_response(r, &resp));
	expect_spin(&resp, 300000);
	CHECK(resp.close); /* no more requests on it */
	expect_eof(busy);
	expect_eof(idle);
	CHECK(waitpid(server, &status, 0) == server);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		xf_test_fail("the server ended with status 0x%x, not exit 0", status);
	free(r);
	close(busy);
	close(idle);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
		const char *workers, *slice;
	} cases[] = {
	    {"routes", case_routes, "2", "1000"},	 {"pipeline", case_pipeline, "2", "1000"},
	    {"preempt", case_preempt, "1", "100"},	 {"malformed", case_malformed, "2", "1000"},
	    {"headers", case_headers, "2", "1000"},	 {"slowloris", case_slowloris, "2", "1000"},
	    {"disconnect", case_disconnect, "2", "1000"}, {"halfclose", case_halfclose, "2", "1000"},
	    {"body", case_body, "2", "1000"},		 {"idle", case_idle, "2", "1000"},
	    {"emfile", case_emfile, "1", "1000"},	 {"stop", case_stop, "2", "1000"},
	};

	if (argc != 3)
		xf_test_fail("usage: examples_test_httpd PATH-TO-example_httpd CASE");
	server_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int before;

		if (strcmp(argv[2], cases[i].name))
			continue;
		start_server(cases[i].workers, cases[i].slice);
		expect_ok(); /* and its descriptors settle */
		before = open_fds(server);
		cases[i].run();
		if (cases[i].run == case_stop)
			return 0;
		expect_fds(before);
		expect_ok();
		stop_server();
		printf("%s: passed; the server held %d descriptors before and after\n", argv[2], before);
		return 0;
	}
	xf_test_fail("unknown case %s", argv[2]);
}
