/*
 * test_ring.c - the io_uring engine (io/ring.c) where it differs from
 * epoll: a request's buffer is the kernel's until it completes, so only
 * its completion may end the wait.
 *
 * usage: test_ring CASE
 *   stats     xf_stats says io_uring, with no refusal; a socket round trip
 *   fallback  io_uring_setup refused (a seccomp filter, as a container
 *             would): xf_init succeeds with epoll, says why once on
 *             stderr and in xf_stats, and sockets work
 *   no_register  io_uring_register refused alone (a seccomp filter):
 *             the rings of workers 1.. cannot be enabled by their own
 *             threads, so no ring has a single issuer; both workers'
 *             fibers still do I/O on io_uring (enabling failed, and a
 *             worker stopped the process)
 *   close     xf_close of a socket while another fiber's read is in
 *             flight: the read fails with EBADF, the close returns, and
 *             the number is free again - 200 times
 *   cancel    xf_cancel of a fiber whose read is in flight, while the peer
 *             writes the byte it waits for: it either reads it or fails
 *             with ECANCELED, and a byte not read is still in the socket -
 *             2,000 times
 *   cancel_start  xf_cancel at a random moment of a read's start, with
 *             no byte to come: the read always ends, with ECANCELED (a
 *             cancel that found the fiber between its look at the flags
 *             and its wait was lost, and the read waited forever) -
 *             5,000 times on two workers
 *   close_busy  a plain thread closes a socket whose read is in flight
 *             while a fiber spins on the reader's worker: the close
 *             returns within slices, not when the spinner stops (5 s) -
 *             only that worker can cancel the request, and nothing made
 *             the ticker preempt the spinner for it
 *   close_join  the same close from a thread that a fiber of the reader's
 *             worker pthread_joins: the worker waits in the kernel, and
 *             the join returned only after the close, which waited for
 *             the worker: a deadlock
 *   dgram     a datagram socket's xf_read that returns one datagram, shorter
 *             than its buffer, with two more queued: the next xf_recvfrom
 *             and MSG_PEEK return at once (a short read marked the socket
 *             empty, and they waited for an event that had come before)
 *   timeout   xf_fd_set_timeout and SO_RCVTIMEO end a read in flight:
 *             ETIMEDOUT and EAGAIN, not before their time
 *   shutdown  xf_shutdown while 100 fibers' reads are in flight: each
 *             fails with ECANCELED and the shutdown returns
 *   sigpipe   a write to a socket whose peer is gone: EPIPE and one
 *             SIGPIPE, as the blocking call; none with MSG_NOSIGNAL
 *   fork      a fiber forks: the child, which must not use its parent's
 *             rings, does socket I/O with epoll and says so in xf_stats
 *   full      300 fibers on one worker queue timed reads at once: more
 *             entries in flight (a request and its timeout each) than the
 *             256-entry submission ring holds; every read ends in time,
 *             half with their byte and half with ETIMEDOUT
 *   small     XFIBER_RING_ENTRIES=4, the least a call's three entries fit
 *             in: nearly every request is queued into a full ring, so a
 *             submit is forced between requests - a timed read's timeout,
 *             a cancel, a close's sweep must each still go in whole (a
 *             timed read whose timeout a forced submit split off never
 *             timed out); other sizes are refused with EINVAL
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void start(unsigned workers)
{
	xf_config cfg = {.workers = workers, .io_backend = XF_IO_BACKEND_IO_URING};
	xf_stats st;
	int err = xf_init(&cfg);

	if (err == ENOTSUP)
		xf_test_skip("libxfiber was built without liburing");
	CHECK_ERR(err, 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	if (st.io_backend != XF_IO_BACKEND_IO_URING)
		xf_test_skip("the kernel refuses io_uring here: %s", st.io_backend_refused);
}

static void round_trip(void)
{
	int sv[2];
	char c = 0;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(xf_write(sv[0], "r", 1) == 1);
	CHECK(xf_read(sv[1], &c, 1) == 1 && c == 'r');
	CHECK(xf_send(sv[1], "s", 1, 0) == 1);
	CHECK(xf_recv(sv[0], &c, 1, 0) == 1 && c == 's');
	xf_close(sv[0]);
	xf_close(sv[1]);
}

static void test_stats(void)
{
	xf_stats st;

	start(1);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK(st.io_backend == XF_IO_BACKEND_IO_URING && !st.io_backend_refused[0]);
	round_trip();
	CHECK_ERR(xf_shutdown(), 0);
}

/* System call nr fails with EPERM from now on, everything else as before
 * (a seccomp filter, as a container's). */
static void refuse_syscall(unsigned nr)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

static void test_fallback(void)
{
	xf_config cfg = {.workers = 2, .io_backend = XF_IO_BACKEND_IO_URING};
	FILE *err_file = tmpfile();
	int saved = dup(STDERR_FILENO), err, said = 0;
	char line[256];
	xf_stats st;

	CHECK(err_file && saved >= 0);
	refuse_syscall(__NR_io_uring_setup);
	CHECK(dup2(fileno(err_file), STDERR_FILENO) == STDERR_FILENO);
	err = xf_init(&cfg);
	if (err == ENOTSUP) {
		dup2(saved, STDERR_FILENO);
		xf_test_skip("libxfiber was built without liburing");
	}
	CHECK_ERR(err, 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK(st.io_backend == XF_IO_BACKEND_EPOLL);
	CHECK(strstr(st.io_backend_refused, "io_uring_setup") != NULL);
	round_trip();
	CHECK_ERR(xf_shutdown(), 0);
	/* Said once per process: a second start says nothing more. */
	CHECK_ERR(xf_init(&cfg), 0);
	round_trip();
	CHECK_ERR(xf_shutdown(), 0);
	fflush(stderr);
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	rewind(err_file);
	while (fgets(line, sizeof(line), err_file))
		said += strstr(line, "io_uring refused") != NULL;
	CHECK(said == 1);
	printf("fallback: %s\n", st.io_backend_refused);
}

static void *round_trips_on(void *arg)
{
	CHECK(xf_worker_id() == (int)(intptr_t)arg);
	for (int i = 0; i < 100; i++)
		round_trip();
	return NULL;
}

static void test_no_register(void)
{
	xf_fiber *f[2];

	refuse_syscall(__NR_io_uring_register);
	start(2);
	for (int w = 0; w < 2; w++) {
		xf_attr a = XF_ATTR_INIT;

		a.pinned = true;
		a.worker = w;
		CHECK_ERR(xf_spawn(&f[w], round_trips_on, (void *)(intptr_t)w, &a), 0);
	}
	for (int w = 0; w < 2; w++)
		CHECK_ERR(xf_join(f[w], NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

/* --- a read in flight, ended by another fiber --- */

struct reader {
	int fd;
	ssize_t r;
	int err;
	char c;
	_Atomic bool in;
};

static void *read_one(void *arg)
{
	struct reader *rd = arg;

	atomic_store(&rd->in, true);
	rd->r = xf_read(rd->fd, &rd->c, 1);
	rd->err = rd->r < 0 ? errno : 0;
	return NULL;
}

/* Until the reader is blocked in its request (or the attempts run out). */
static void until_blocked(struct reader *rd)
{
	while (!atomic_load(&rd->in))
		xf_yield();
	for (int i = 0; i < 3; i++)
		xf_yield();
}

static void test_close(void)
{
	start(2);
	for (int i = 0; i < 200; i++) {
		int sv[2], again;
		struct reader rd = {0};
		xf_fiber *f;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		rd.fd = sv[0];
		CHECK_ERR(xf_spawn(&f, read_one, &rd, NULL), 0);
		until_blocked(&rd);
		CHECK_ERR(xf_close(sv[0]), 0);
		CHECK_ERR(xf_join(f, NULL), 0);
		CHECK(rd.r == -1 && rd.err == EBADF);
		/* The number is free again, and a new socket on it works. */
		again = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK(again >= 0);
		xf_close(again);
		xf_close(sv[1]);
	}
	CHECK_ERR(xf_shutdown(), 0);
}

static void test_cancel(void)
{
	unsigned got = 0, cancelled = 0;

	start(2);
	for (int i = 0; i < 2000; i++) {
		int sv[2];
		struct reader rd = {0};
		xf_fiber *f;
		char c;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		rd.fd = sv[0];
		CHECK_ERR(xf_spawn(&f, read_one, &rd, NULL), 0);
		if (i & 1)
			until_blocked(&rd);
		/* The byte and the cancel race. */
		CHECK(write(sv[1], "x", 1) == 1);
		xf_cancel(f);
		CHECK_ERR(xf_join(f, NULL), 0);
		if (rd.r == 1) {
			CHECK(rd.c == 'x');
			got++;
		} else {
			CHECK(rd.r == -1 && rd.err == ECANCELED);
			/* Not read: still there, and nothing else. */
			CHECK(recv(sv[0], &c, 1, MSG_DONTWAIT) == 1 && c == 'x');
			cancelled++;
		}
		CHECK(recv(sv[0], &c, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
		xf_close(sv[0]);
		xf_close(sv[1]);
	}
	printf("cancel: %u read, %u cancelled\n", got, cancelled);
	CHECK_ERR(xf_shutdown(), 0);
}

static _Atomic unsigned cancel_progress;

/* Fails the test when the iterations stop: a lost cancel leaves its
 * reader, and the join, waiting forever. */
static void *cancel_watchdog(void *arg)
{
	unsigned last = ~0u;

	(void)arg;
	for (;;) {
		unsigned now = atomic_load(&cancel_progress);

		if (now == last)
			xf_test_fail("cancel_start: iteration %u has not ended in 10 s: a lost "
				     "cancel",
				     now);
		last = now;
		sleep(10);
	}
	return NULL;
}

static void test_cancel_start(void)
{
	pthread_t watchdog;
	xf_attr on_worker_1 = XF_ATTR_INIT;
	unsigned cancelled = 0;

	start(2);
	on_worker_1.pinned = true;
	on_worker_1.worker = 1;
	CHECK_ERR(pthread_create(&watchdog, NULL, cancel_watchdog, NULL), 0);
	CHECK_ERR(pthread_detach(watchdog), 0);
	for (unsigned i = 0; i < 5000; i++) {
		int sv[2];
		struct reader rd = {0};
		xf_fiber *f;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		rd.fd = sv[0];
		CHECK_ERR(xf_spawn(&f, read_one, &rd, &on_worker_1), 0);
		/* It reads on the other worker while this one spins from its
		 * xf_read's first instruction to some time after it waits:
		 * the cancel lands anywhere in between. */
		while (!atomic_load(&rd.in))
			__asm__ volatile("pause");
		for (unsigned spin = (i * 2654435761u) % 2048; spin; spin--)
			__asm__ volatile("pause");
		xf_cancel(f);
		CHECK_ERR(xf_join(f, NULL), 0);
		if (!(rd.r == -1 && rd.err == ECANCELED))
			xf_test_fail("iteration %u: the read returned %zd (%s), not ECANCELED", i,
				     rd.r, strerror(rd.err));
		cancelled++;
		xf_close(sv[0]);
		xf_close(sv[1]);
		atomic_fetch_add(&cancel_progress, 1);
	}
	printf("cancel_start: %u reads cancelled as they began\n", cancelled);
	CHECK_ERR(xf_shutdown(), 0);
}

static struct reader busy_rd;
static _Atomic bool busy_spinning;
static _Atomic uint64_t busy_close_ns;

static void *spin_5s(void *arg)
{
	uint64_t end = now_ns() + 5000000000ull;

	(void)arg;
	atomic_store(&busy_spinning, true);
	/* Until the reader has ended (its result is stored), or 5 s.  The
	 * clock seldom: a tick that lands in the vDSO's clock_gettime is
	 * deferred, and a loop that lives in it is hard to preempt. */
	while (__atomic_load_n(&busy_rd.r, __ATOMIC_RELAXED) == 0) {
		for (int i = 0; i < 100000; i++)
			__asm__ volatile("" ::: "memory");
		if (now_ns() >= end)
			break;
	}
	return NULL;
}

/* Closes the reader's socket once the spinner spins; how long it took. */
static void *close_from_thread(void *arg)
{
	uint64_t t0;

	(void)arg;
	while (!atomic_load(&busy_spinning))
		usleep(1000);
	usleep(20000);
	t0 = now_ns();
	CHECK(close(busy_rd.fd) == 0);
	atomic_store(&busy_close_ns, now_ns() - t0);
	return NULL;
}

static void test_close_busy(void)
{
	int sv[2];
	xf_fiber *reader, *spinner;
	pthread_t closer;

	start(1);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	busy_rd = (struct reader){.fd = sv[0]};
	CHECK_ERR(xf_spawn(&reader, read_one, &busy_rd, NULL), 0);
	until_blocked(&busy_rd);
	CHECK_ERR(pthread_create(&closer, NULL, close_from_thread, NULL), 0);
	CHECK_ERR(xf_spawn(&spinner, spin_5s, NULL, NULL), 0);
	CHECK_ERR(xf_join(reader, NULL), 0);
	CHECK_ERR(xf_join(spinner, NULL), 0);
	CHECK_ERR(pthread_join(closer, NULL), 0);
	CHECK(busy_rd.r == -1 && busy_rd.err == EBADF);
	/* Slices of 1 ms: a few of them, with room for a loaded machine. */
	if (atomic_load(&busy_close_ns) > 1000000000u)
		xf_test_fail("close_busy: the close took %.0f ms beside a spinner",
			     (double)atomic_load(&busy_close_ns) / 1e6);
	printf("close_busy: the close took %.2f ms beside a spinner\n",
	       (double)atomic_load(&busy_close_ns) / 1e6);
	xf_close(sv[1]);
	CHECK_ERR(xf_shutdown(), 0);
}

static void *close_now(void *arg)
{
	CHECK(close(*(int *)arg) == 0);
	return NULL;
}

static void test_close_join(void)
{
	xf_attr on_worker_0 = XF_ATTR_INIT;

	start(2);
	on_worker_0.pinned = true;
	on_worker_0.worker = 0;
	for (int i = 0; i < 20; i++) {
		int sv[2];
		struct reader rd = {0};
		xf_fiber *f;
		pthread_t closer;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		rd.fd = sv[0];
		/* The reader on this fiber's own worker, which then waits in
		 * the kernel for the closing thread. */
		CHECK_ERR(xf_spawn(&f, read_one, &rd, &on_worker_0), 0);
		until_blocked(&rd);
		CHECK_ERR(pthread_create(&closer, NULL, close_now, &sv[0]), 0);
		CHECK_ERR(pthread_join(closer, NULL), 0);
		CHECK_ERR(xf_join(f, NULL), 0);
		CHECK(rd.r == -1 && rd.err == EBADF);
		xf_close(sv[1]);
	}
	CHECK_ERR(xf_shutdown(), 0);
}

static void *send_later(void *arg)
{
	CHECK_ERR(xf_sleep_ns(10000000), 0);
	CHECK(send(*(int *)arg, "0", 1, 0) == 1);
	return NULL;
}

static void test_dgram(void)
{
	int sv[2];
	char buf[64];
	xf_fiber *f;
	xf_stats before, after;
	uint64_t t0;

	start(1);
	CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	/* A wait through the poller first: the socket is in the epoll set,
	 * and the poller has taken its events when the datagrams come. */
	CHECK_ERR(xf_spawn(&f, send_later, &sv[1], NULL), 0);
	CHECK(xf_recvfrom(sv[0], buf, sizeof(buf), 0, NULL, NULL) == 1 && buf[0] == '0');
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK(send(sv[1], "a", 1, 0) == 1 && send(sv[1], "b", 1, 0) == 1 &&
	      send(sv[1], "c", 1, 0) == 1);
	CHECK_ERR(xf_sleep_ns(5000000), 0);
	CHECK(xf_read(sv[0], buf, sizeof(buf)) == 1 && buf[0] == 'a');
	CHECK_ERR(xf_fd_set_timeout(sv[0], 2000000000ull, 0), 0);
	CHECK_ERR(xf_stats_get(&before), 0);
	t0 = now_ns();
	if (xf_recvfrom(sv[0], buf, sizeof(buf), 0, NULL, NULL) != 1 || buf[0] != 'b')
		xf_test_fail("dgram: xf_recvfrom of a queued datagram: %s after %.0f ms",
			     strerror(errno), (double)(now_ns() - t0) / 1e6);
	CHECK(xf_recv(sv[0], buf, sizeof(buf), MSG_PEEK) == 1 && buf[0] == 'c');
	CHECK_ERR(xf_stats_get(&after), 0);
	/* Not even a wait bounded by a short read's trust (50 ms): none. */
	if (after.total.io_waits != before.total.io_waits)
		xf_test_fail("dgram: the calls waited %llu times for datagrams already queued "
			     "(%.1f ms)",
			     (unsigned long long)(after.total.io_waits - before.total.io_waits),
			     (double)(now_ns() - t0) / 1e6);
	xf_close(sv[0]);
	xf_close(sv[1]);
	CHECK_ERR(xf_shutdown(), 0);
}

static void test_timeout(void)
{
	const uint64_t t = 20000000;
	struct timeval tv = {0, 20000};
	int sv[2];
	char c;

	start(1);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_ERR(xf_fd_set_timeout(sv[0], t, 0), 0);
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = now_ns();

		CHECK(xf_read(sv[0], &c, 1) == -1 && errno == ETIMEDOUT);
		CHECK(now_ns() - t0 >= t);
	}
	CHECK_ERR(xf_fd_set_timeout(sv[0], 0, 0), 0);
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = now_ns();

		CHECK(xf_recv(sv[0], &c, 1, 0) == -1 && errno == EAGAIN);
		CHECK(now_ns() - t0 >= t);
	}
	/* And data before the timeout is data. */
	CHECK(write(sv[1], "d", 1) == 1);
	CHECK(xf_recv(sv[0], &c, 1, 0) == 1 && c == 'd');
	xf_close(sv[0]);
	xf_close(sv[1]);
	CHECK_ERR(xf_shutdown(), 0);
}

#define READERS 100

static void test_shutdown(void)
{
	static struct reader rd[READERS];
	static int sv[READERS][2];

	start(2);
	for (int i = 0; i < READERS; i++) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0);
		rd[i].fd = sv[i][0];
		CHECK_ERR(xf_spawn(NULL, read_one, &rd[i], &(xf_attr){.detached = true}), 0);
	}
	for (int i = 0; i < READERS; i++)
		until_blocked(&rd[i]);
	CHECK_ERR(xf_shutdown(), 0);
	for (int i = 0; i < READERS; i++) {
		CHECK(rd[i].r == -1 && rd[i].err == ECANCELED);
		close(sv[i][0]);
		close(sv[i][1]);
	}
}

static _Atomic int sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigpipes, 1);
}

static void test_sigpipe(void)
{
	struct sigaction sa = {.sa_handler = on_sigpipe};
	int sv[2];

	CHECK(sigaction(SIGPIPE, &sa, NULL) == 0);
	start(1);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	xf_close(sv[1]);
	CHECK(xf_send(sv[0], "x", 1, MSG_NOSIGNAL) == -1 && errno == EPIPE);
	CHECK(atomic_load(&sigpipes) == 0);
	CHECK(xf_write(sv[0], "x", 1) == -1 && errno == EPIPE);
	CHECK(atomic_load(&sigpipes) == 1);
	xf_close(sv[0]);
	CHECK_ERR(xf_shutdown(), 0);
}

static void test_fork(void)
{
	pid_t pid;
	int status;

	start(2);
	round_trip();
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		xf_stats st;

		round_trip();
		if (xf_stats_get(&st) || st.io_backend != XF_IO_BACKEND_EPOLL ||
		    !strstr(st.io_backend_refused, "forked"))
			_exit(2);
		_exit(xf_shutdown() ? 3 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	round_trip(); /* the parent's rings are its own still */
	CHECK_ERR(xf_shutdown(), 0);
}

#define FULL_FIBERS 300 /* 600 descriptors: under the usual limit of 1,024 */

static int full_sv[FULL_FIBERS][2];
static struct reader full_rd[FULL_FIBERS];

static void test_full(void)
{
	xf_fiber *f[FULL_FIBERS];
	uint64_t t0;

	start(1);
	for (int i = 0; i < FULL_FIBERS; i++) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, full_sv[i]) == 0);
		CHECK_ERR(xf_fd_set_timeout(full_sv[i][0], 200000000, 0), 0);
		full_rd[i].fd = full_sv[i][0];
		/* Half get their byte before they read, half wait it out. */
		if (i & 1)
			CHECK(write(full_sv[i][1], "f", 1) == 1);
	}
	t0 = now_ns();
	for (int i = 0; i < FULL_FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], read_one, &full_rd[i], NULL), 0);
	for (int i = 0; i < FULL_FIBERS; i++) {
		CHECK_ERR(xf_join(f[i], NULL), 0);
		if (i & 1)
			CHECK(full_rd[i].r == 1 && full_rd[i].c == 'f');
		else
			CHECK(full_rd[i].r == -1 && full_rd[i].err == ETIMEDOUT);
		xf_close(full_sv[i][0]);
		xf_close(full_sv[i][1]);
	}
	/* Every timeout honoured, none lost: well under the test's deadline. */
	CHECK(now_ns() - t0 < 5000000000ull);
	CHECK_ERR(xf_shutdown(), 0);
}

#define SMALL_FIBERS 48 /* twelve of each kind below */

static int small_sv[SMALL_FIBERS][2];
static struct reader small_rd[SMALL_FIBERS];

/* XFIBER_RING_ENTRIES=value: xf_init fails with EINVAL. */
static void ring_entries_refused(const char *value)
{
	xf_config cfg = {.workers = 1, .io_backend = XF_IO_BACKEND_IO_URING};

	CHECK(setenv("XFIBER_RING_ENTRIES", value, 1) == 0);
	CHECK_ERR(xf_init(&cfg), EINVAL);
}

static void test_small(void)
{
	ring_entries_refused("2");
	ring_entries_refused("5");
	ring_entries_refused("65536");
	ring_entries_refused("4x");
	CHECK(setenv("XFIBER_RING_ENTRIES", "4", 1) == 0);
	start(1);
	for (int round = 0; round < 10; round++) {
		xf_fiber *f[SMALL_FIBERS];
		uint64_t t0 = now_ns();

		for (int i = 0; i < SMALL_FIBERS; i++) {
			CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, small_sv[i]) == 0);
			small_rd[i] = (struct reader){.fd = small_sv[i][0]};
			/* Kinds by i % 4: 0 gets its byte late, 1 times out
			 * (a request and its timeout: two entries), 2 is
			 * cancelled, 3 has its descriptor closed under it. */
			if (i % 4 == 1)
				CHECK_ERR(xf_fd_set_timeout(small_sv[i][0], 50000000, 0), 0);
		}
		for (int i = 0; i < SMALL_FIBERS; i++)
			CHECK_ERR(xf_spawn(&f[i], read_one, &small_rd[i], NULL), 0);
		for (int i = 0; i < SMALL_FIBERS; i++)
			until_blocked(&small_rd[i]);
		for (int i = 2; i < SMALL_FIBERS; i += 4)
			CHECK_ERR(xf_cancel(f[i]), 0);
		for (int i = 3; i < SMALL_FIBERS; i += 4)
			CHECK_ERR(xf_close(small_sv[i][0]), 0);
		CHECK_ERR(xf_sleep_ns(10000000), 0);
		for (int i = 0; i < SMALL_FIBERS; i += 4)
			CHECK(write(small_sv[i][1], "s", 1) == 1);
		for (int i = 0; i < SMALL_FIBERS; i++) {
			struct reader *rd = &small_rd[i];
			int kind = i % 4;

			CHECK_ERR(xf_join(f[i], NULL), 0);
			if (kind == 0 && !(rd->r == 1 && rd->c == 's'))
				xf_test_fail("round %d, reader %d: %zd (%s), not its byte", round,
					     i, rd->r, strerror(rd->err));
			if (kind == 1 && !(rd->r == -1 && rd->err == ETIMEDOUT))
				xf_test_fail("round %d, timed reader %d: %zd (%s), not ETIMEDOUT",
					     round, i, rd->r, strerror(rd->err));
			if (kind == 2 && !(rd->r == -1 && rd->err == ECANCELED))
				xf_test_fail("round %d, cancelled reader %d: %zd (%s)", round, i,
					     rd->r, strerror(rd->err));
			if (kind == 3 && !(rd->r == -1 && rd->err == EBADF))
				xf_test_fail("round %d, reader %d of a closed socket: %zd (%s)",
					     round, i, rd->r, strerror(rd->err));
			if (kind != 3)
				xf_close(small_sv[i][0]);
			xf_close(small_sv[i][1]);
		}
		/* The timeouts were honoured, not before their time, nor lost. */
		CHECK(now_ns() - t0 >= 50000000u && now_ns() - t0 < 5000000000ull);
	}
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(unsetenv("XFIBER_RING_ENTRIES") == 0);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
	    {"stats", test_stats},
	    {"fallback", test_fallback},
	    {"no_register", test_no_register},
	    {"close", test_close},
	    {"cancel", test_cancel},
	    {"cancel_start", test_cancel_start},
	    {"close_busy", test_close_busy},
	    {"close_join", test_close_join},
	    {"dgram", test_dgram},
	    {"timeout", test_timeout},
	    {"shutdown", test_shutdown},
	    {"sigpipe", test_sigpipe},
	    {"fork", test_fork},
	    {"full", test_full},
	    {"small", test_small},
	};

	for (size_t i = 0; argc == 2 && i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!strcmp(argv[1], cases[i].name)) {
			cases[i].fn();
			return 0;
		}
	}
	fprintf(stderr,
		"usage: test_ring stats|fallback|close|cancel|cancel_start|close_busy|close_join|"
		"timeout|shutdown|sigpipe|fork|full|small\n");
	return 2;
}
