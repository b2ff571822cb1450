/*
 * test_libc.c - the C library's sleeps and readiness waits, called from a
 * fiber while another fiber waits for the same worker: none may end early
 * or fail with EINTR because of preemption.
 *
 * usage: test_libc CALL WORKERS SLICE_US
 *   CALL: sleep usleep nanosleep clock_nanosleep clock_nanosleep_abs
 *         poll ppoll select pselect epoll_wait epoll_pwait
 *         poll_ready   (the fd becomes readable after 15 ms: the wait sees it)
 *         poll_signal  (an application signal and poll: poll waits as a
 *                       fiber and goes on; ppoll given a signal mask to
 *                       wait under returns EINTR, as without fibers)
 *         sleep_huge   (nanosleep of 2^62 s and of 18446744074 s - past 64
 *                       bits of nanoseconds - is as good as forever, as the
 *                       kernel clamps it: still asleep after 100 ms)
 *
 * Both fibers are pinned to worker 0; the other one spins, so the ticker
 * sends preemption signals all through the wait.  A sleep runs on the
 * runtime's timers, so the spinner also makes progress meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define WAIT_MS 30
/* poll_ready and poll_signal wait for an event due halfway through WAIT_MS,
 * and end with it; their own timeout is only the bound should it never
 * come.  WAIT_MS would be a race: on a loaded machine, or under qemu's TCG,
 * the thread that writes or signals has started later than that. */
#define EVENT_WAIT_MS 10000

static const char *call;
static atomic_bool done, call_returned;
static atomic_ulong spins;
static int pipefd[2];
static pid_t worker0_tid;
static atomic_int app_signals, signals_sent;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&done))
		atomic_fetch_add(&spins, 1);
	return NULL;
}

/* A plain thread, so that the write's time depends on no timer of the
 * runtime's. */
static void *writer(void *arg)
{
	(void)arg;
	usleep(WAIT_MS / 2 * 1000);
	CHECK(write(pipefd[1], "x", 1) == 1);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&app_signals, 1);
}

/* Signals worker 0 until the call has returned: a signal that came before
 * the call began to wait interrupted nothing, which a loaded machine or
 * qemu's TCG can make happen. */
static void *signaller(void *arg)
{
	(void)arg;
	do {
		usleep(WAIT_MS / 2 * 1000); /* a plain thread: the C library's sleep */
		syscall(SYS_tgkill, getpid(), worker0_tid, SIGUSR1);
		atomic_fetch_add(&signals_sent, 1);
	} while (!atomic_load(&call_returned));
	return NULL;
}

static struct timespec ms_ts(int ms)
{
	return (struct timespec){ms / 1000, (long)(ms % 1000) * 1000000};
}

/* Runs the call; returns what it returned, and errno in *err. */
static long run_call(int *err)
{
	struct timespec ts = ms_ts(WAIT_MS);
	struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
	long r = -2;

	errno = 0;
	if (!strcmp(call, "sleep")) {
		r = sleep(1);
	} else if (!strcmp(call, "usleep")) {
		r = usleep(WAIT_MS * 1000);
	} else if (!strcmp(call, "nanosleep")) {
		r = nanosleep(&ts, NULL);
	} else if (!strcmp(call, "clock_nanosleep")) {
		r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	} else if (!strcmp(call, "clock_nanosleep_abs")) {
		struct timespec at;

		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += WAIT_MS * 1000000L;
		at.tv_sec += at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL);
	} else if (!strcmp(call, "poll")) {
		r = poll(&p, 1, WAIT_MS);
	} else if (!strcmp(call, "poll_ready")) {
		r = poll(&p, 1, EVENT_WAIT_MS);
	} else if (!strcmp(call, "poll_signal")) {
		struct timespec bound = ms_ts(EVENT_WAIT_MS);
		sigset_t none;

		sigemptyset(&none);
		r = ppoll(&p, 1, &bound, &none);
	} else if (!strcmp(call, "ppoll")) {
		r = ppoll(&p, 1, &ts, NULL);
	} else if (!strcmp(call, "select") || !strcmp(call, "pselect")) {
		fd_set set;
		struct timeval tv = {0, WAIT_MS * 1000};

		FD_ZERO(&set);
		FD_SET(pipefd[0], &set);
		r = !strcmp(call, "select") ? select(pipefd[0] + 1, &set, NULL, NULL, &tv)
					    : pselect(pipefd[0] + 1, &set, NULL, NULL, &ts, NULL);
		if (r == 0 && FD_ISSET(pipefd[0], &set))
			xf_test_fail("%s timed out but left the fd in its set", call);
	} else if (!strcmp(call, "epoll_wait") || !strcmp(call, "epoll_pwait")) {
		struct epoll_event ev = {.events = EPOLLIN}, out;
		int ep = epoll_create1(EPOLL_CLOEXEC);

		CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev) == 0);
		r = !strcmp(call, "epoll_wait") ? epoll_wait(ep, &out, 1, WAIT_MS)
						: epoll_pwait(ep, &out, 1, WAIT_MS, NULL);
		close(ep);
	} else {
		xf_test_fail("unknown call %s", call);
	}
	*err = errno;
	return r;
}

static void *caller(void *arg)
{
	const bool ready = !strcmp(call, "poll_ready"), interrupted = !strcmp(call, "poll_signal");
	const uint64_t want_ns = !strcmp(call, "sleep") ? 1000000000ull : WAIT_MS * 1000000ull;
	unsigned long spins0 = atomic_load(&spins);
	pthread_t t;
	uint64_t t0, took;
	long r;
	int err;

	(void)arg;
	worker0_tid = (pid_t)syscall(SYS_gettid);
	if (ready || interrupted)
		CHECK(pthread_create(&t, NULL, ready ? writer : signaller, NULL) == 0);
	t0 = now_ns();
	r = run_call(&err);
	took = now_ns() - t0;
	atomic_store(&call_returned, true);
	if (interrupted) {
		pthread_join(t, NULL);
		if (r != -1 || err != EINTR || atomic_load(&app_signals) < 1)
			xf_test_fail("%s: an application signal gave %ld (%s), not EINTR", call, r,
				     strerrorname_np(err));
		if (atomic_load(&app_signals) > atomic_load(&signals_sent))
			xf_test_fail("%s: %d application signals handled, %d sent", call,
				     atomic_load(&app_signals), atomic_load(&signals_sent));
	} else if (ready) {
		pthread_join(t, NULL);
		if (r != 1)
			xf_test_fail("%s returned %ld (%s), not the ready fd", call, r,
				     strerrorname_np(err));
	} else {
		if (r != 0)
			xf_test_fail("%s returned %ld (%s) after %.1f ms, not 0", call, r,
				     strerrorname_np(err), (double)took / 1e6);
		if (took < want_ns)
			xf_test_fail("%s returned after %.3f ms of %.3f", call, (double)took / 1e6,
				     (double)want_ns / 1e6);
	}
	printf("%s: returned %ld after %.1f ms; the other fiber spun %lu times meanwhile\n", call,
	       r, (double)took / 1e6, atomic_load(&spins) - spins0);
	if (strstr(call, "sleep") && atomic_load(&spins) == spins0)
		xf_test_fail("%s kept the other fiber from the worker", call);
	atomic_store(&done, true);
	return NULL;
}

static atomic_int woke_early;

static void *sleeps_huge(void *arg)
{
	struct timespec ts = {*(time_t *)arg, 0};

	if (nanosleep(&ts, NULL) == 0 || errno != EINTR)
		atomic_fetch_add(&woke_early, 1);
	return NULL;
}

/* The sleepers never end: the process leaves without shutting down. */
static void test_sleep_huge(void)
{
	static time_t secs[] = {(time_t)1 << 62, 18446744074LL};
	xf_attr detached = XF_ATTR_INIT;

	detached.detached = true;
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	for (int i = 0; i < 2; i++)
		CHECK_ERR(xf_spawn(NULL, sleeps_huge, &secs[i], &detached), 0);
	xf_sleep_ns(100 * 1000000ull);
	if (atomic_load(&woke_early))
		xf_test_fail("a sleep of more than 2^64 ns ended within 100 ms");
	printf("sleep_huge: still asleep after 100 ms\n");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	xf_attr pinned = {.pinned = true, .worker = 0};
	xf_fiber *s, *c;
	struct sigaction sa = {.sa_handler = on_usr1};

	if (argc != 4)
		xf_test_fail("usage: test_libc CALL WORKERS SLICE_US");
	call = argv[1];
	if (!strcmp(call, "sleep_huge"))
		test_sleep_huge();
	CHECK(pipe(pipefd) == 0);
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0); /* no SA_RESTART: EINTR, as in C */
	CHECK_ERR(xf_init(&(xf_config){.workers = (unsigned)atoi(argv[2]),
				       .slice_us = (unsigned)atoi(argv[3])}),
		  0);
	CHECK_ERR(xf_spawn(&s, spinner, NULL, &pinned), 0);
	CHECK_ERR(xf_spawn(&c, caller, NULL, &pinned), 0);
	CHECK_ERR(xf_join(c, NULL), 0);
	CHECK_ERR(xf_join(s, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	return 0;
}
