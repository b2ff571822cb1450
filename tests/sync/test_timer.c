/*
 * test_timer.c - xf_timer: once, periodic, stopped while its callback
 * runs, stopped from its callback, falling behind without a burst,
 * stopped by a cancelled fiber (which must still wait for the callback),
 * and started and stopped from a plain thread.
 *
 * usage: test_timer WORKERS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define MS 1000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct counting {
	atomic_int ticks, inside, overlaps;
	uint64_t started, first_ns;
	uint64_t sleep_ns; /* how long each callback takes */
	xf_timer *self;	   /* set: the callback stops its own timer at tick 3 */
};

static void tick(void *arg)
{
	struct counting *c = arg;

	if (atomic_fetch_add(&c->inside, 1))
		atomic_fetch_add(&c->overlaps, 1);
	if (!c->first_ns)
		c->first_ns = now_ns();
	if (c->sleep_ns)
		xf_sleep_ns(c->sleep_ns); /* a callback may block: it is a fiber */
	if (atomic_fetch_add(&c->ticks, 1) == 2 && c->self)
		CHECK_ERR(xf_timer_stop(c->self), 0);
	atomic_fetch_sub(&c->inside, 1);
}

static void test_once(void)
{
	struct counting c = {0};
	xf_timer *t;

	c.started = now_ns();
	CHECK_ERR(xf_timer_start(&t, 5 * MS, 0, tick, &c), 0);
	xf_sleep_ns(40 * MS);
	CHECK(atomic_load(&c.ticks) == 1);
	CHECK(c.first_ns - c.started >= 5 * MS);
	CHECK_ERR(xf_timer_stop(t), 0); /* after it fired: fine */
	/* Stopped before it fires: never runs. */
	c = (struct counting){0};
	CHECK_ERR(xf_timer_start(&t, 50 * MS, 0, tick, &c), 0);
	CHECK_ERR(xf_timer_stop(t), 0);
	xf_sleep_ns(70 * MS);
	CHECK(atomic_load(&c.ticks) == 0);
}

static void test_periodic(void)
{
	struct counting c = {0};
	xf_timer *t;
	int n;

	uint64_t t0 = now_ns(), ran;

	CHECK_ERR(xf_timer_start(&t, 2 * MS, 4 * MS, tick, &c), 0);
	xf_sleep_ns(100 * MS);
	CHECK_ERR(xf_timer_stop(t), 0);
	ran = now_ns() - t0;
	n = atomic_load(&c.ticks);
	printf("periodic: %d ticks in %lu ms at 4 ms\n", n, (unsigned long)(ran / MS));
	/* On the grid: never more than the time allows.  Fewer when the worker
	 * is late (skipped): under ASan in a parallel make check it saw 8 of a
	 * possible 55 (its 100 ms sleep took 222 ms), so below only "it kept
	 * firing" is asked. */
	if (n < 3 || n > (int)(ran / (4 * MS)) + 1)
		xf_test_fail("%d ticks of a 4 ms timer in %lu ms", n, (unsigned long)(ran / MS));
	xf_sleep_ns(20 * MS);
	CHECK(atomic_load(&c.ticks) == n); /* none after the stop */
}

/* The first callback takes 4.5 periods; the ones after take nothing.  A
 * timer that queued the missed ticks would then fire them back to back. */
static uint64_t starts[64];
static atomic_int nstarts;

static void slow_once(void *arg)
{
	int i = atomic_fetch_add(&nstarts, 1);

	(void)arg;
	if (i < 64)
		starts[i] = now_ns();
	if (i == 0)
		xf_sleep_ns(18 * MS);
}

static void test_behind(void)
{
	xf_timer *t;
	int n;

	CHECK_ERR(xf_timer_start(&t, 0, 4 * MS, slow_once, NULL), 0);
	xf_sleep_ns(60 * MS);
	CHECK_ERR(xf_timer_stop(t), 0); /* waits for a callback that runs */
	n = atomic_load(&nstarts) < 64 ? atomic_load(&nstarts) : 64;
	CHECK(n >= 3);
	/* Three callbacks within 2 ms are a burst; one late tick followed by
	 * one on time (a loaded machine) is not. */
	for (int i = 2; i < n; i++)
		if (starts[i] - starts[i - 2] < 2 * MS)
			xf_test_fail("callbacks %d to %d came within %lu us: missed ticks fired in "
				     "a burst",
				     i - 2, i, (unsigned long)((starts[i] - starts[i - 2]) / 1000));
	printf("behind: %d callbacks, the second %lu us after the first (18 ms)\n", n,
	       (unsigned long)((starts[1] - starts[0]) / 1000));
}

static void test_self_stop(void)
{
	struct counting c = {0};

	CHECK_ERR(xf_timer_start(&c.self, 0, 2 * MS, tick, &c), 0);
	xf_sleep_ns(60 * MS);
	CHECK(atomic_load(&c.ticks) == 3);
}

/* A cancelled fiber stops a timer whose callback runs: the stop still
 * waits for it, for the caller frees what the callback uses next. */
static _Atomic int slow_state; /* 1: in the callback, 2: it ended */

static void slow_tick(void *arg)
{
	(void)arg;
	atomic_store(&slow_state, 1);
	xf_sleep_ns(20 * MS);
	atomic_store(&slow_state, 2);
}

static void *cancelled_stopper(void *arg)
{
	xf_timer *t;

	(void)arg;
	CHECK_ERR(xf_timer_start(&t, 0, 0, slow_tick, NULL), 0);
	while (atomic_load(&slow_state) != 1)
		xf_sleep_ns(100000);
	CHECK_ERR(xf_cancel(xf_self()), 0);
	CHECK_ERR(xf_timer_stop(t), 0);
	CHECK(atomic_load(&slow_state) == 2);
	return NULL;
}

static void test_cancelled_stop(void)
{
	xf_fiber *f;

	CHECK_ERR(xf_spawn(&f, cancelled_stopper, NULL, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
}

static void *thread_timers(void *arg)
{
	struct counting c = {0};
	xf_timer *t;

	(void)arg;
	CHECK_ERR(xf_timer_start(&t, MS, 2 * MS, tick, &c), 0);
	usleep(30000);
	CHECK_ERR(xf_timer_stop(t), 0);
	CHECK(atomic_load(&c.ticks) >= 3);
	return NULL;
}

/* A second stop of the same handle: EINVAL, not a spin on a freed
 * semaphore (a reviewer's program hung there). */
static void test_twice_stopped(void)
{
	struct counting c = {0};
	xf_timer *t;

	CHECK_ERR(xf_timer_start(&t, 1000 * MS, 0, tick, &c), 0);
	CHECK_ERR(xf_timer_stop(t), 0);
	CHECK_ERR(xf_timer_stop(t), EINVAL);
	CHECK(atomic_load(&c.ticks) == 0);
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc != 2)
		xf_test_fail("usage: test_timer WORKERS");
	alarm(50);
	CHECK_ERR(xf_init(&(xf_config){.workers = (unsigned)atoi(argv[1]), .slice_us = 100}), 0);
	CHECK_ERR(xf_timer_start(NULL, 0, 0, tick, NULL), EINVAL);
	CHECK_ERR(xf_timer_stop(NULL), EINVAL);
	test_twice_stopped();
	test_once();
	test_periodic();
	test_behind();
	test_self_stop();
	test_cancelled_stop();
	CHECK(pthread_create(&th, NULL, thread_timers, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("timers: ok\n");
	return 0;
}
