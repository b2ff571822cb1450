/* An HTTP/1.1 server on xfiber: a fiber per connection, keep-alive and
 * pipelining; requests and answers are http.c's.
 *
 *   example_httpd [--port P] [--workers N] [--slice-us S] [--cooperative]
 *                 [--header-timeout-ms T] [--idle-timeout-ms T] [--threads]
 *                 [--batch-over-us U] [--round-robin]
 *
 * Port 0 (the default) picks a free port; the first line printed is
 * "listening on 127.0.0.1:PORT".  Workers default to one per CPU.  The
 * routes are http.h's: GET /, GET /spin?us=N (AVX-512 work with ZMM
 * registers live throughout, so a preemption must keep them), POST /echo.
 * Headers still incomplete after the header timeout (10 s) get 408 and a
 * close; an idle keep-alive connection is closed after the idle timeout
 * (60 s).  Out of descriptors (EMFILE), it goes on serving and accepts
 * again a little later.
 *
 * SIGINT or SIGTERM: it stops accepting, finishes the requests in flight,
 * closes idle connections and exits 0.
 *
 * --batch-over-us U runs a /spin of U microseconds or more as batch work
 * (xf_fiber_set_batch): short requests go first, and long ones keep a
 * share of the CPU; what a server does for its known-heavy routes.
 *
 * --round-robin keeps a preempted request in the plain round robin
 * (xf_config.round_robin) instead of behind the requests whose bytes have
 * just arrived: the scheduling before 2026-11-27, for comparison.
 *
 * --threads serves each connection on a kernel thread instead, without
 * xfiber (its calls are then the plain ones) and without the timeouts: the
 * thread-per-connection peer of `xfiber bench server`, the same program
 * but for the scheduling.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#include "http.h"

#define ACCEPT_RETRY_NS (50 * 1000 * 1000) /* after EMFILE */

static uint64_t header_timeout_ns = 10ull * 1000 * 1000 * 1000;
static uint64_t idle_timeout_ns = 60ull * 1000 * 1000 * 1000;

/* One connection, and its fiber's. */
struct conn {
	struct http_conn http;
	int fd;
	struct conn *prev, *next; /* in `conns`, for the stop */
	atomic_bool idle;	  /* waiting for the first byte of a request */
	char in[16 * 1024];
};

/* A pthread mutex: in a fiber, xfiber makes its wait a fiber's. */
static struct {
	pthread_mutex_t lock;
	struct conn *head;
} conns = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_bool stopping;
static bool threads; /* --threads: a kernel thread per connection, no xfiber */
static unsigned long batch_over_us; /* --batch-over-us; 0: no batch work */

/* A long /spin is batch work, then the fiber is latency-critical again. */
static void around_spin(long us, bool begins)
{
	if ((unsigned long)us >= batch_over_us)
		xf_fiber_set_batch(xf_self(), begins);
}


/* --- A connection's life. */

static bool flush(struct conn *c)
{
	struct http_conn *h = &c->http;
	bool ok = h->out_len == 0 || xf_write(c->fd, h->out, h->out_len) == (ssize_t)h->out_len;

	h->out_len = 0;
	return ok;
}

static void conn_link(struct conn *c)
{
	pthread_mutex_lock(&conns.lock);
	c->next = conns.head;
	if (c->next)
		c->next->prev = c;
	conns.head = c;
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

static void serve(void *arg)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct http_conn *h;
	int fd = (int)(intptr_t)arg;

	if (!c) {
		xf_close(fd);
		return;
	}
	h = &c->http;
	c->fd = fd;
	http_conn_init(h, &stopping);
	if (batch_over_us && !threads)
		h->around_spin = around_spin;
	conn_link(c);
	for (;;) {
		uint64_t wait_ns = idle_timeout_ns;
		ssize_t n;

		if (!flush(c))
			break;
		if (h->begun && !h->headers_done) {
			uint64_t now = http_now_ns(), deadline = h->began_ns + header_timeout_ns;

			if (now >= deadline) {
				http_conn_timed_out(h);
				flush(c);
				break;
			}
			wait_ns = deadline - now;
		} else if (!h->begun && !set_idle(c, true)) {
			break; /* stopping, and nothing in flight here */
		}
		if (!threads)
			xf_fd_set_timeout(fd, wait_ns, idle_timeout_ns);
		n = xf_read(fd, c->in, sizeof(c->in));
		set_idle(c, false);
		if (n < 0 && errno == ETIMEDOUT && h->begun && !h->headers_done)
			continue; /* the deadline check above answers 408 */
		if (n <= 0)
			break; /* closed, reset, or idle too long */
		if (!http_conn_input(h, c->in, (size_t)n)) {
			flush(c);
			break;
		}
	}
	conn_unlink(c);
	xf_close(fd);
	http_conn_release(h);
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
			"[--threads] [--batch-over-us U] [--round-robin]\n");
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
		if (!strcmp(opt, "--round-robin")) {
			cfg.round_robin = true;
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
		else if (!strcmp(opt, "--batch-over-us"))
			batch_over_us = number(val, 1000000);
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
