/*
 * loadgen.c - the HTTP load generator (loadgen.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/loadgen.h"

#define OUTSTANDING_MAX 64 /* pipelined on one connection at most */
#define DRAIN_NS	2000000000ull

struct pending {
	uint64_t intended_ns; /* when it was due to leave */
	bool is_long, counted;
};

struct conn {
	int fd;
	struct pending q[OUTSTANDING_MAX]; /* in the order sent */
	unsigned head, n;
	char buf[8192];
	size_t len;
};

struct samples {
	double *v;
	size_t n, cap;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int add_sample(struct samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		double *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return ENOMEM;
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of sorted samples (nearest rank); 0 for none. */
static double quantile(const struct samples *s, double q)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)ceil(q * (double)s->n);
	return s->v[i ? i - 1 : 0];
}

/* xorshift64*: the arrival times and the mix, reproducible from the seed. */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1Dull;
}

static double uniform01(uint64_t *state)
{
	return ((double)(next_random(state) >> 11) + 0.5) / 9007199254740992.0;
}

/* A connection to port on loopback, in *fd, watched by ep for input with
 * data `ptr`. */
static int open_conn(int port, int ep, int *fd, void *ptr)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return errno;
	setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	if (connect(*fd, (struct sockaddr *)&a, sizeof(a)) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, *fd, &ev))
		return errno;
	return 0;
}

static int send_request(struct conn *c, const char *req, size_t len, uint64_t intended,
			bool is_long, bool counted)
{
	struct pending *p = &c->q[(c->head + c->n) % OUTSTANDING_MAX];

	/* Requests are small: the socket buffer takes them whole. */
	if (send(c->fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return errno ? errno : EIO;
	*p = (struct pending){intended, is_long, counted};
	c->n++;
	return 0;
}

/* Whole responses at the front of c->buf: their sizes, or 0 for none yet;
 * -1 for something that is not an HTTP response. */
static long response_size(const struct conn *c)
{
	const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4), *cl;
	size_t head;

	if (!end)
		return c->len == sizeof(c->buf) ? -1 : 0;
	head = (size_t)(end - c->buf) + 4;
	if (memcmp(c->buf, "HTTP/1.1 200", 12))
		return -1;
	cl = memmem(c->buf, head, "Content-Length: ", 16);
	if (!cl)
		cl = memmem(c->buf, head, "content-length: ", 16);
	if (!cl)
		return -1;
	head += strtoul(cl + 16, NULL, 10);
	return head <= c->len ? (long)head : head > sizeof(c->buf) ? -1 : 0;
}

struct run {
	const struct xf_loadgen_opts *o;
	struct conn *conns;
	char short_req[256], long_req[256];
	size_t short_len, long_len;
	struct samples shorts, longs;
	uint64_t answered, counted, seed;
	uint64_t window_start, window_end;
};

static int send_next(struct run *r, struct conn *c, uint64_t intended)
{
	bool is_long = uniform01(&r->seed) < r->o->long_fraction;
	bool counted = intended >= r->window_start && intended < r->window_end;

	r->counted += counted;
	return is_long ? send_request(c, r->long_req, r->long_len, intended, true, counted)
		       : send_request(c, r->short_req, r->short_len, intended, false, counted);
}

/* Reads what c has; records each answered request.  Closed loop: each
 * answer sends the next request. */
static int on_readable(struct run *r, struct conn *c, uint64_t now)
{
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	long size;

	if (n == 0)
		return ECONNRESET;
	if (n < 0)
		return errno == EAGAIN ? 0 : errno;
	c->len += (size_t)n;
	while ((size = response_size(c)) > 0) {
		struct pending *p = &c->q[c->head];
		double us = (double)(now - p->intended_ns) / 1000.0;
		int err = 0;

		if (!c->n)
			return EPROTO; /* an answer nobody asked for */
		if (p->counted) {
			r->answered++;
			err = add_sample(p->is_long ? &r->longs : &r->shorts, us);
		}
		c->head = (c->head + 1) % OUTSTANDING_MAX;
		c->n--;
		memmove(c->buf, c->buf + size, c->len - (size_t)size);
		c->len -= (size_t)size;
		if (!err && !r->o->rate && now < r->window_end)
			err = send_next(r, c, now);
		if (err)
			return err;
	}
	return size < 0 ? EPROTO : 0;
}

/* The connection for the next open-loop request: an idle one, else the
 * one with the fewest outstanding. */
static struct conn *pick(struct run *r)
{
	struct conn *best = NULL;

	for (unsigned i = 0; i < r->o->conns; i++) {
		struct conn *c = &r->conns[i];

		if (!c->n)
			return c;
		if (c->n < OUTSTANDING_MAX && (!best || c->n < best->n))
			best = c;
	}
	return best;
}

static int drive(struct run *r, int ep)
{
	const struct xf_loadgen_opts *o = r->o;
	uint64_t next = r->window_start - (uint64_t)(o->warmup_s * 1e9), deadline;
	struct epoll_event ev[64];
	int err = 0;

	if (!o->rate)
		for (unsigned i = 0; !err && i < o->conns; i++)
			err = send_next(r, &r->conns[i], now_ns());
	deadline = r->window_end + DRAIN_NS;
	while (!err) {
		uint64_t now = now_ns();
		int timeout_ms, n;

		if (o->rate) {
			/* Everything due leaves now, each stamped with when it was due. */
			while (next <= now && next < r->window_end) {
				struct conn *c = pick(r);

				if (!c)
					return ENOBUFS; /* every connection is full: far past capacity */
				err = send_next(r, c, next);
				if (err)
					return err;
				next += (uint64_t)(-log(uniform01(&r->seed)) / o->rate * 1e9);
			}
		}
		if (now >= deadline || (now >= r->window_end && r->answered == r->counted))
			break;
		/* Busy-polling while arrivals are due: they are microseconds
		 * apart, and the generator has a CPU of its own. */
		timeout_ms = o->rate && next < r->window_end ? 0 : 1;
		n = epoll_wait(ep, ev, 64, timeout_ms);
		if (n < 0 && errno != EINTR)
			return errno;
		now = now_ns();
		for (int i = 0; i < n && !err; i++)
			err = on_readable(r, ev[i].data.ptr, now);
	}
	return err;
}

static void summarize(struct run *r, struct xf_loadgen_result *res)
{
	double sum = 0;

	qsort(r->shorts.v, r->shorts.n, sizeof(double), cmp_double);
	qsort(r->longs.v, r->longs.n, sizeof(double), cmp_double);
	for (size_t i = 0; i < r->shorts.n; i++)
		sum += r->shorts.v[i];
	*res = (struct xf_loadgen_result){
	    .offered_rate = (double)r->counted / r->o->seconds,
	    .done_rate = (double)r->answered / r->o->seconds,
	    .short_n = r->shorts.n,
	    .long_n = r->longs.n,
	    .unanswered = r->counted - r->answered,
	    .short_mean = r->shorts.n ? sum / (double)r->shorts.n : 0,
	    .short_p50 = quantile(&r->shorts, 0.5),
	    .short_p99 = quantile(&r->shorts, 0.99),
	    .short_p999 = quantile(&r->shorts, 0.999),
	    .short_max = r->shorts.n ? r->shorts.v[r->shorts.n - 1] : 0,
	    .long_p99 = quantile(&r->longs, 0.99),
	};
}

int xf_loadgen_run(const struct xf_loadgen_opts *o, struct xf_loadgen_result *res, char *note,
		   size_t note_size)
{
	struct run r = {.o = o, .seed = o->seed | 1};
	int ep = epoll_create1(EPOLL_CLOEXEC), err = 0;

	memset(res, 0, sizeof(*res));
	r.conns = calloc(o->conns, sizeof(*r.conns));
	if (ep < 0 || !r.conns) {
		err = ep < 0 ? errno : ENOMEM;
		goto out;
	}
	r.short_len = (size_t)snprintf(r.short_req, sizeof(r.short_req),
				       "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", o->short_path);
	r.long_len = (size_t)snprintf(r.long_req, sizeof(r.long_req),
				      "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", o->long_path);
	for (unsigned i = 0; i < o->conns; i++)
		r.conns[i].fd = -1;
	for (unsigned i = 0; !err && i < o->conns; i++)
		err = open_conn(o->port, ep, &r.conns[i].fd, &r.conns[i]);
	if (err) {
		snprintf(note, note_size, "cannot connect to port %d: %s", o->port, strerror(err));
		goto out;
	}
	r.window_start = now_ns() + (uint64_t)(o->warmup_s * 1e9);
	r.window_end = r.window_start + (uint64_t)(o->seconds * 1e9);
	err = drive(&r, ep);
	if (err)
		snprintf(note, note_size, "load generator: %s",
			 err == ENOBUFS ? "every connection has 64 requests outstanding"
					: strerror(err));
	else
		summarize(&r, res);
out:
	for (unsigned i = 0; r.conns && i < o->conns; i++)
		if (r.conns[i].fd >= 0)
			close(r.conns[i].fd);
	free(r.conns);
	free(r.shorts.v);
	free(r.longs.v);
	if (ep >= 0)
		close(ep);
	return err;
}

/* --- echo --- */

struct echo_conn {
	int fd;
	size_t got; /* bytes of this round trip back so far */
};

#define ECHO_GRACE_NS (10 * 1000000000ull) /* the longest a window waits for its first trip */

int xf_loadgen_echo(int port, unsigned conns, size_t size, double warmup_s, double seconds,
		    double *rate, void (*window)(void *arg, bool end), void *arg, char *note,
		    size_t note_size)
{
	bool opened = false;
	struct echo_conn *c = calloc(conns, sizeof(*c));
	char *msg = calloc(1, size), buf[65536];
	int ep = epoll_create1(EPOLL_CLOEXEC), err = 0;
	uint64_t start, end, now = 0, trips = 0;

	*rate = 0;
	if (!c || !msg || ep < 0 || size > sizeof(buf)) {
		err = ep < 0 ? errno : ENOMEM;
		snprintf(note, note_size, "echo load: %s", strerror(err));
		goto out;
	}
	memset(msg, 'e', size);
	for (unsigned i = 0; i < conns; i++)
		c[i].fd = -1;
	for (unsigned i = 0; !err && i < conns; i++)
		err = open_conn(port, ep, &c[i].fd, &c[i]);
	if (err) {
		snprintf(note, note_size, "echo load: cannot connect %u times to port %d: %s", conns,
			 port, strerror(err));
		goto out;
	}
	start = now_ns() + (uint64_t)(warmup_s * 1e9);
	end = start + (uint64_t)(seconds * 1e9);
	for (unsigned i = 0; !err && i < conns; i++)
		if (send(c[i].fd, msg, size, MSG_NOSIGNAL) != (ssize_t)size)
			err = errno ? errno : EIO;
	while (!err) {
		struct epoll_event ev[64];
		int n = epoll_wait(ep, ev, 64, 100);

		now = now_ns();
		if (now >= start && !opened && window) {
			window(arg, false);
			opened = true;
		}
		/* The window ends with a round trip in it: a short one (quick
		 * runs) on a loaded machine may see none, and the rate divides
		 * by the time it took. */
		if (now >= end && (trips || now >= end + ECHO_GRACE_NS)) {
			if (opened)
				window(arg, true);
			break;
		}
		if (n < 0 && errno != EINTR)
			err = errno;
		for (int i = 0; i < n && !err; i++) {
			struct echo_conn *e = ev[i].data.ptr;
			ssize_t got = recv(e->fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (got <= 0) {
				err = got == 0 ? ECONNRESET : errno == EAGAIN ? 0 : errno;
				continue;
			}
			e->got += (size_t)got;
			if (e->got < size)
				continue;
			if (e->got > size) {
				err = EPROTO; /* more than was sent */
				continue;
			}
			e->got = 0;
			trips += now >= start;
			if (send(e->fd, msg, size, MSG_NOSIGNAL) != (ssize_t)size)
				err = errno ? errno : EIO;
		}
	}
	if (!err && !trips)
		err = ETIMEDOUT; /* not one round trip in the window and its grace */
	if (err)
		snprintf(note, note_size, "echo load: %s", strerror(err));
	else
		*rate = (double)trips / ((double)(now - start) / 1e9);
out:
	for (unsigned i = 0; c && i < conns; i++)
		if (c[i].fd >= 0)
			close(c[i].fd);
	free(c);
	free(msg);
	if (ep >= 0)
		close(ep);
	return err;
}
