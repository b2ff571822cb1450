/*
 * test_short_read.c - a TCP read that moves fewer bytes than asked for lets
 * the next read wait without trying (io/fd.c, xf__fd_read_short), except
 * where a short read does not mean the socket is empty.  Each case reads
 * what a peer sent at once, while the reader already waited on the socket
 * (so that the event comes before the read): a wrong "empty" would leave
 * the next read waiting for an event that never comes, which the read
 * timeout turns into a failure.
 *
 * usage: test_short_read fin|urgent|urgent_taken|efault|pingpong
 *   fin       "hello" and the end of the stream together: the first read
 *             stops short before the FIN, the next must return 0 at once
 *   urgent    "abc", an urgent byte, "def": the first read stops short at
 *             the urgent mark; the rest must still come without more data
 *   urgent_taken  the same, but the program takes the urgent byte with
 *             MSG_OOB before the poller collects the event, which then
 *             says EPOLLIN alone; the read stopped at the mark must not be
 *             taken for "empty" (a reviewer's case)
 *   efault    a readv whose second buffer is read-only, with more queued
 *             than the first holds: the kernel stops short before the skb
 *             that faults and keeps the rest; the next, valid, read must
 *             still get it (after XF_SHORT_READ_TRUST_NS, not never)
 *   pingpong  10,000 round trips of 100 bytes read into 4 KiB buffers (every
 *             read short), between two fibers on one worker: nothing lost
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define TIMEOUT_NS 3000000000ull /* far longer than any of these reads needs */

static int conn[2]; /* [0] the reader's end, [1] the peer's */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void tcp_pair(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(l >= 0);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(l, 1) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
	conn[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(conn[1] >= 0);
	CHECK(connect(conn[1], (struct sockaddr *)&a, sizeof(a)) == 0);
	conn[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(conn[0] >= 0);
	close(l);
	setsockopt(conn[1], IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	/* Room for all that efault queues at once. */
	CHECK(setsockopt(conn[0], SOL_SOCKET, SO_RCVBUF, &(int){1 << 20}, sizeof(int)) == 0);
	CHECK_ERR(xf_fd_set_timeout(conn[0], TIMEOUT_NS, TIMEOUT_NS), 0);
}

/* Reads until n bytes or the end; fails on an error, timeout included. */
static size_t read_all(char *buf, size_t n, size_t ask)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = xf_read(conn[0], buf + got, ask);

		if (r < 0)
			xf_test_fail("read after %zu bytes: %s", got, strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static char first[64];
static ssize_t first_len;

/* Waits on the socket first (registered, with nothing to read), then
 * returns what the first read brings. */
static void *first_read(void *arg)
{
	(void)arg;
	first_len = xf_read(conn[0], first, sizeof(first));
	return NULL;
}

static void fin(void)
{
	xf_fiber *r;
	char rest[64];
	uint64_t t;
	ssize_t n;

	CHECK_ERR(xf_spawn(&r, first_read, NULL, NULL), 0);
	CHECK_ERR(xf_sleep_ns(20000000), 0); /* the reader waits */
	CHECK(write(conn[1], "hello", 5) == 5);
	CHECK(shutdown(conn[1], SHUT_WR) == 0);
	CHECK_ERR(xf_sleep_ns(20000000), 0); /* both arrived: one event */
	CHECK_ERR(xf_join(r, NULL), 0);
	CHECK(first_len > 0 && first_len <= 5);
	t = now_ns();
	n = (ssize_t)read_all(rest, sizeof(rest), sizeof(rest));
	CHECK(first_len + n == 5);
	n = xf_read(conn[0], rest, sizeof(rest));
	if (n != 0)
		xf_test_fail("read after the end: %zd (%s)", n, n < 0 ? strerror(errno) : "data");
	t = now_ns() - t;
	printf("fin: %zd bytes, then the end, %.3f ms after\n", first_len, (double)t / 1e6);
	CHECK(t < TIMEOUT_NS / 2);
}

static void urgent(void)
{
	xf_fiber *r;
	char all[16];
	size_t n;

	CHECK_ERR(xf_spawn(&r, first_read, NULL, NULL), 0);
	CHECK_ERR(xf_sleep_ns(20000000), 0);
	CHECK(send(conn[1], "abc", 3, 0) == 3);
	CHECK(send(conn[1], "X", 1, MSG_OOB) == 1);
	CHECK(send(conn[1], "def", 3, 0) == 3);
	CHECK_ERR(xf_sleep_ns(20000000), 0);
	CHECK_ERR(xf_join(r, NULL), 0);
	CHECK(first_len > 0);
	memcpy(all, first, (size_t)first_len);
	/* The urgent byte is out of band (no SO_OOBINLINE): six in line. */
	n = (size_t)first_len + read_all(all + first_len, 6 - (size_t)first_len, 8);
	CHECK(n == 6);
	CHECK(!memcmp(all, "abcdef", 6));
	printf("urgent: \"abc\" + urgent byte + \"def\": read %zd, then the rest\n", first_len);
}

static void *send_parts(void *arg)
{
	static char buf[10000];

	(void)arg;
	/* Parts with pauses: several segments queued, as several skbs. */
	for (int i = 0; i < 30; i++) {
		CHECK(send(conn[1], buf, sizeof(buf), 0) == sizeof(buf));
		usleep(1000);
	}
	return NULL;
}

static int idle_pipe[2];

/* A fiber waiting on a descriptor: idle workers sit in the poller. */
static void *pipe_waiter(void *arg)
{
	char c;

	(void)arg;
	CHECK(xf_read(idle_pipe[0], &c, 1) == 1);
	return NULL;
}

static void efault(void)
{
	static char buf[1 << 20];
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec v[2] = {{buf, 150000}, {ro, 4096}};
	xf_fiber *s, *w;
	size_t got = 0;
	ssize_t n;
	uint64_t t;

	CHECK(ro != MAP_FAILED);
	CHECK(pipe(idle_pipe) == 0);
	CHECK_ERR(xf_spawn(&w, pipe_waiter, NULL, NULL), 0);
	CHECK_ERR(xf_spawn(&s, send_parts, NULL, NULL), 0);
	CHECK(xf_read(conn[0], buf, 1) == 1); /* waits: registered */
	CHECK_ERR(xf_join(s, NULL), 0);	      /* all 300,000 bytes sent */
	n = xf_readv(conn[0], v, 2);
	if (n <= 0)
		xf_test_fail("readv: %zd (%s): no part before the fault", n, strerror(errno));
	t = now_ns();
	got = read_all(buf, 300000 - 1 - (size_t)n, sizeof(buf));
	t = now_ns() - t;
	printf("efault: readv stopped at %zd of 154096 bytes; the other %zu read in %.1f ms\n", n,
	       got, (double)t / 1e6);
	CHECK(got == 300000 - 1 - (size_t)n);
	CHECK(t < TIMEOUT_NS / 2);
	CHECK(write(idle_pipe[1], "x", 1) == 1);
	CHECK_ERR(xf_join(w, NULL), 0);
	munmap(ro, 4096);
}

static void urgent_taken(void)
{
	xf_fiber *r, *w;
	char buf[100], x;
	ssize_t n;
	uint64_t t;

	CHECK(pipe(idle_pipe) == 0);
	CHECK_ERR(xf_spawn(&w, pipe_waiter, NULL, NULL), 0);
	CHECK_ERR(xf_spawn(&r, first_read, NULL, NULL), 0);
	CHECK_ERR(xf_sleep_ns(20000000), 0); /* the reader waits: registered */
	CHECK(send(conn[1], "0", 1, 0) == 1);
	CHECK_ERR(xf_join(r, NULL), 0);
	CHECK(first_len == 1);
	/* Without a switch: data, the urgent byte, data; then the urgent byte
	 * taken at once, before the poller sees the event. */
	CHECK(send(conn[1], "AAAA", 4, 0) == 4);
	CHECK(send(conn[1], "X", 1, MSG_OOB) == 1);
	CHECK(send(conn[1], "BBBB", 4, 0) == 4);
	CHECK(xf_recv(conn[0], &x, 1, MSG_OOB | MSG_DONTWAIT) == 1 && x == 'X');
	CHECK_ERR(xf_sleep_ns(10000000), 0); /* the poller collects EPOLLIN alone */
	n = xf_read(conn[0], buf, sizeof(buf));
	CHECK(n > 0 && n <= 8);
	t = now_ns();
	if (n < 8) {
		ssize_t m = xf_read(conn[0], buf + n, sizeof(buf) - (size_t)n);

		if (m <= 0)
			xf_test_fail("read after the mark: %zd (%s)", m, strerror(errno));
		n += m;
	}
	t = now_ns() - t;
	CHECK(n == 8 && !memcmp(buf, "AAAABBBB", 8));
	printf("urgent_taken: AAAA then BBBB, the second read in %.1f ms\n", (double)t / 1e6);
	CHECK(t < TIMEOUT_NS / 2);
	CHECK(write(idle_pipe[1], "x", 1) == 1);
	CHECK_ERR(xf_join(w, NULL), 0);
}

#define TRIPS 10000
#define MSG   100

static void *echo_peer(void *arg)
{
	char buf[4096];

	(void)arg;
	CHECK_ERR(xf_fd_set_timeout(conn[1], TIMEOUT_NS, TIMEOUT_NS), 0);
	for (int i = 0; i < TRIPS; i++) {
		size_t got = 0;

		while (got < MSG) {
			ssize_t r = xf_read(conn[1], buf + got, sizeof(buf) - got);

			if (r <= 0)
				xf_test_fail("peer read %d: %zd %s", i, r, strerror(errno));
			got += (size_t)r;
		}
		CHECK(xf_write(conn[1], buf, MSG) == MSG);
	}
	return NULL;
}

static void pingpong(void)
{
	xf_fiber *peer;
	char msg[MSG], back[4096];

	CHECK_ERR(xf_spawn(&peer, echo_peer, NULL, NULL), 0);
	for (int i = 0; i < TRIPS; i++) {
		memset(msg, 'a' + i % 26, sizeof(msg));
		CHECK(xf_write(conn[0], msg, MSG) == MSG);
		CHECK(read_all(back, MSG, sizeof(back)) == MSG);
		CHECK(!memcmp(msg, back, MSG));
	}
	CHECK_ERR(xf_join(peer, NULL), 0);
	printf("pingpong: %d round trips of %d bytes\n", TRIPS, MSG);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_short_read fin|urgent|urgent_taken|efault|pingpong");
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	tcp_pair();
	if (!strcmp(argv[1], "fin"))
		fin();
	else if (!strcmp(argv[1], "urgent"))
		urgent();
	else if (!strcmp(argv[1], "efault"))
		efault();
	else if (!strcmp(argv[1], "urgent_taken"))
		urgent_taken();
	else if (!strcmp(argv[1], "pingpong"))
		pingpong();
	else
		xf_test_fail("unknown case %s", argv[1]);
	CHECK(xf_close(conn[0]) == 0);
	CHECK(xf_close(conn[1]) == 0);
	CHECK_ERR(xf_shutdown(), 0);
	return 0;
}
