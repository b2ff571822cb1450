/* httpd_uv.c - the libuv peer of `xfiber bench server` (Debian libuv1-dev):
 * examples/http.h's requests and answers on libuv event loops, one per
 * worker thread, each with a listening socket of its own on the same port
 * (SO_REUSEPORT: the kernel spreads the connections).  A request's work
 * runs inside its loop's read callback, as it would in any event-loop
 * server: a long /spin holds up every connection of that loop.
 *
 *   xfiber-httpd-uv [--port P] [--workers N]
 *
 * The first line printed is "listening on 127.0.0.1:PORT".  SIGINT or
 * SIGTERM: it exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "http.h"

static struct sockaddr_in addr = {.sin_family = AF_INET};

struct uconn {
	uv_tcp_t tcp; /* first: the handle's address is the connection's */
	struct http_conn http;
	bool ending; /* closes once its answers are written */
};

struct answer {
	uv_write_t req;
	struct uconn *c;
	uv_buf_t buf;
};

static void on_closed(uv_handle_t *h)
{
	struct uconn *c = (struct uconn *)h;

	http_conn_release(&c->http);
	free(c);
}

static void on_written(uv_write_t *req, int status)
{
	struct answer *a = (struct answer *)req;

	if ((status || a->c->ending) && !uv_is_closing((uv_handle_t *)&a->c->tcp))
		uv_close((uv_handle_t *)&a->c->tcp, on_closed);
	free(a->buf.base);
	free(a);
}

/* One buffer per loop's thread: a read is parsed before the next. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static __thread char in[64 * 1024];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(in, sizeof(in));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct uconn *c = (struct uconn *)s;
	struct answer *a;

	if (n == 0)
		return;
	if (n < 0) {
		if (!uv_is_closing((uv_handle_t *)s))
			uv_close((uv_handle_t *)s, on_closed);
		return;
	}
	c->ending = !http_conn_input(&c->http, buf->base, (size_t)n);
	if (!c->http.out_len) {
		if (c->ending)
			uv_close((uv_handle_t *)s, on_closed);
		return;
	}
	/* The answers go with their write; the connection starts a new buffer. */
	a = malloc(sizeof(*a));
	if (!a) {
		uv_close((uv_handle_t *)s, on_closed);
		return;
	}
	a->c = c;
	a->buf = uv_buf_init(c->http.out, (unsigned)c->http.out_len);
	c->http.out = NULL;
	c->http.out_len = c->http.out_cap = 0;
	if (c->ending)
		uv_read_stop(s);
	if (uv_write(&a->req, s, &a->buf, 1, on_written))
		on_written(&a->req, -1);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct uconn *c;

	if (status)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	uv_tcp_init(server->loop, &c->tcp);
	if (uv_accept(server, (uv_stream_t *)&c->tcp)) {
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	http_conn_init(&c->http, NULL);
	uv_tcp_nodelay(&c->tcp, 1);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* A listening socket on addr's port, shared with the other loops. */
static int listen_socket(void)
{
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &(int){1}, sizeof(int)) ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 4096) ||
	    getsockname(fd, (struct sockaddr *)&addr, &len)) {
		perror("xfiber-httpd-uv: listen");
		exit(1);
	}
	return fd;
}

static void *run_loop(void *arg)
{
	uv_loop_t loop;
	uv_tcp_t server;

	uv_loop_init(&loop);
	uv_tcp_init(&loop, &server);
	if (uv_tcp_open(&server, (uv_os_sock_t)(intptr_t)arg) ||
	    uv_listen((uv_stream_t *)&server, 4096, on_connection)) {
		fprintf(stderr, "xfiber-httpd-uv: cannot listen\n");
		exit(1);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned workers = 1;
	sigset_t sigs;
	pthread_t t;
	int sig, fd;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--port"))
			addr.sin_port = htons((uint16_t)atoi(argv[i + 1]));
		else if (!strcmp(argv[i], "--workers"))
			workers = (unsigned)atoi(argv[i + 1]);
		else
			break;
	}
	if (workers < 1 || workers > 256 || argc % 2 == 0) {
		fprintf(stderr, "usage: xfiber-httpd-uv [--port P] [--workers N]\n");
		return 2;
	}
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* the loops' threads inherit it */
	signal(SIGPIPE, SIG_IGN);
	fd = listen_socket(); /* port 0: the kernel picks, and the others share it */
	printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
	fflush(stdout);
	for (unsigned i = 0; i < workers; i++) {
		if (i)
			fd = listen_socket();
		if (pthread_create(&t, NULL, run_loop, (void *)(intptr_t)fd)) {
			fprintf(stderr, "xfiber-httpd-uv: cannot start a loop\n");
			return 1;
		}
	}
	sigwait(&sigs, &sig);
	return 0;
}
