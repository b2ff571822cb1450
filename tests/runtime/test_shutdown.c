/*
 * test_shutdown.c - xf_shutdown_timeout: a fiber blocked for good on a
 * channel nobody closes keeps xf_shutdown waiting forever; the timed
 * shutdown says so on stderr (the stuck fiber, where it waits) and returns
 * ETIMEDOUT with the runtime still running - fibers wait on descriptors
 * again - and after xf_cancel_all the next one succeeds.  A plain
 * xf_shutdown behind such a fiber says for whom it waits, once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static xf_chan *forgotten;

static void *stuck_receiver(void *arg)
{
	long v;

	(void)arg;
	return (void *)(intptr_t)xf_chan_recv(forgotten, &v);
}

static int pair[2];

static void *reads_one(void *arg)
{
	char c;

	(void)arg;
	return (void *)(intptr_t)xf_read(pair[0], &c, 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void child(void)
{
	xf_fiber *f;
	uint64_t t0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK_ERR(xf_chan_create(&forgotten, sizeof(long), 0), 0);
	CHECK_ERR(xf_spawn(&f, stuck_receiver, NULL, &(xf_attr){.name = "forgotten-reader",
								   .worker = -1}),
		  0);
	CHECK_ERR(xf_detach(f), 0);
	xf_sleep_ns(5000000);
	t0 = now_ns();
	CHECK_ERR(xf_shutdown_timeout(50000000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 50000000);
	/* Still running: fibers work, and so do waits on descriptors (they
	 * stayed cancelled, ECANCELED, after a timed shutdown gave up). */
	CHECK(xf_self() != NULL);
	CHECK_ERR(xf_sleep_ns(1000), 0);
	{
		xf_fiber *r;
		void *got;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
		CHECK_ERR(xf_spawn(&r, reads_one, NULL, NULL), 0);
		xf_sleep_ns(2000000); /* it waits */
		CHECK(xf_write(pair[1], "x", 1) == 1);
		CHECK_ERR(xf_join(r, &got), 0);
		CHECK((intptr_t)got == 1);
		CHECK(xf_close(pair[0]) == 0 && xf_close(pair[1]) == 0);
	}
	CHECK_ERR(xf_cancel_all(), 0);
	CHECK_ERR(xf_shutdown_timeout(5ull * 1000000000), 0);
	CHECK_ERR(xf_chan_destroy(forgotten), 0);
	CHECK_ERR(xf_shutdown_timeout(1000), EPERM); /* no runtime now */
}

static void *cancels_later(void *arg)
{
	struct timespec ts = {1, 0};

	(void)arg;
	nanosleep(&ts, NULL);
	CHECK_ERR(xf_cancel_all(), 0);
	return NULL;
}

/* xf_shutdown without a timeout, behind a fiber blocked for good: after
 * five stall thresholds (XFIBER_STALL_MS=100 here) it says for whom, once;
 * a plain thread's xf_cancel_all then lets it end. */
static void child_long_shutdown(void)
{
	xf_fiber *f;
	pthread_t t;

	setenv("XFIBER_STALL_MS", "100", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_chan_create(&forgotten, sizeof(long), 0), 0);
	CHECK_ERR(xf_spawn(&f, stuck_receiver, NULL,
			   &(xf_attr){.name = "forgotten-reader", .worker = -1}),
		  0);
	CHECK_ERR(xf_detach(f), 0);
	xf_sleep_ns(5000000);
	CHECK(pthread_create(&t, NULL, cancels_later, NULL) == 0);
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_ERR(xf_chan_destroy(forgotten), 0);
}

int main(void)
{
	char out[16384];
	int status;

	alarm(30);
	status = xf_test_run_child(child, out, sizeof(out));
	fputs(out, stdout);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(strstr(out, "xf_shutdown_timeout: fibers still alive after the timeout"));
	CHECK(strstr(out, "\"forgotten-reader\" [blocked on channel receive"));
	status = xf_test_run_child(child_long_shutdown, out, sizeof(out));
	fputs(out, stdout);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(strstr(out, "xf_shutdown still waits for these fibers"));
	CHECK(strstr(out, "\"forgotten-reader\" [blocked on channel receive"));
	printf("shutdown_timeout: ok\n");
	return 0;
}
