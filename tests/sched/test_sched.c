/*
 * test_sched.c - the run order on one worker, yield fairness across
 * workers, work stealing moving fibers, pinned fibers never moving, and a
 * sleeper waking beside fibers that only yield to each other.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "testlib.h"
#include "xfiber.h"

#define WORKERS	 2
#define YIELDERS 8

static atomic_bool stop;

struct yielder {
	uint64_t count;
	int first_worker;
	unsigned workers_seen; /* bitmask */
};

static void *yield_loop(void *arg)
{
	struct yielder *y = arg;

	y->first_worker = xf_worker_id();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		y->workers_seen |= 1u << xf_worker_id();
		y->count++;
		/* Some work between yields, so that both workers stay busy. */
		for (volatile int i = 0; i < 200; i++)
			;
		xf_yield();
	}
	return NULL;
}

static void fairness_and_stealing(void)
{
	struct yielder ys[YIELDERS] = {0};
	xf_fiber *f[YIELDERS];
	uint64_t min = UINT64_MAX, max = 0;
	unsigned on_each[WORKERS] = {0}, migrated = 0;

	atomic_store(&stop, false);
	/* All spawned from worker 0: only stealing can get them to worker 1. */
	for (int i = 0; i < YIELDERS; i++)
		CHECK_ERR(xf_spawn(&f[i], yield_loop, &ys[i], NULL), 0);
	xf_sleep_ns(300 * 1000 * 1000);
	atomic_store(&stop, true);
	for (int i = 0; i < YIELDERS; i++) {
		CHECK_ERR(xf_join(f[i], NULL), 0);
		min = ys[i].count < min ? ys[i].count : min;
		max = ys[i].count > max ? ys[i].count : max;
		for (int w = 0; w < WORKERS; w++)
			on_each[w] += (ys[i].workers_seen >> w) & 1;
		migrated += ys[i].workers_seen != (1u << ys[i].first_worker);
	}
	printf("yield counts: min %lu max %lu; fibers seen on worker 0: %u, worker 1: %u; "
	       "migrated: %u\n",
	       (unsigned long)min, (unsigned long)max, on_each[0], on_each[1], migrated);
	if (!min)
		xf_test_fail("a yielding fiber never ran: unfair scheduling");
	if (max > 20 * min)
		xf_test_fail("unfair: one fiber ran %lu times, another %lu", (unsigned long)max,
			     (unsigned long)min);
	if (!on_each[1])
		xf_test_fail("no fiber ever ran on worker 1: work stealing moved nothing");
}

/* One worker, four fibers that log their id and yield; fiber 3 first
 * waits on a semaphore that fiber 0 posts in its third round.  Yields go
 * round the fibers in the order they were queued, and a woken fiber joins
 * behind those that wait, ahead of the one that woke it. */
#define ORDER_FIBERS 4
#define ORDER_ROUNDS 6

static int order_log[ORDER_FIBERS * ORDER_ROUNDS];
static unsigned order_n;
static xf_sem order_sem;

static void *order_loop(void *arg)
{
	int id = (int)(intptr_t)arg;

	if (id == 3)
		CHECK_ERR(xf_sem_wait(&order_sem), 0);
	for (int r = 0; r < ORDER_ROUNDS; r++) {
		if (order_n < ORDER_FIBERS * ORDER_ROUNDS)
			order_log[order_n++] = id;
		if (id == 0 && r == 2)
			CHECK_ERR(xf_sem_post(&order_sem), 0);
		xf_yield();
	}
	return NULL;
}

static void run_order(void)
{
	static const int want[ORDER_FIBERS * ORDER_ROUNDS] = {
	    0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 3, 3,
	};
	xf_fiber *f[ORDER_FIBERS];

	/* Cooperative: a time slice ending between a log and its yield
	 * would reorder the turns. */
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .cooperative = true}), 0);
	CHECK_ERR(xf_sem_init(&order_sem, 0), 0);
	for (int i = 0; i < ORDER_FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], order_loop, (void *)(intptr_t)i, NULL), 0);
	for (int i = 0; i < ORDER_FIBERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_sem_destroy(&order_sem), 0);
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(order_n == ORDER_FIBERS * ORDER_ROUNDS);
	for (unsigned i = 0; i < order_n; i++)
		if (order_log[i] != want[i])
			xf_test_fail("run order: entry %u is fiber %d, expected %d", i,
				     order_log[i], want[i]);
	printf("run order on one worker: round robin, woken fiber behind the waiting\n");
}

static void *pinned_loop(void *arg)
{
	int want = (int)(intptr_t)arg;

	for (int i = 0; i < 20000; i++) {
		if (xf_worker_id() != want)
			xf_test_fail("pinned fiber for worker %d ran on worker %d", want,
				     xf_worker_id());
		xf_yield();
		if (i % 1000 == 0)
			xf_sleep_ns(10000); /* wake-ups from timers keep it home too */
	}
	return NULL;
}

static void pinned(void)
{
	xf_fiber *f[6];

	for (int i = 0; i < 6; i++) {
		xf_attr attr = XF_ATTR_INIT;
		attr.pinned = true;
		attr.worker = i % WORKERS;
		CHECK_ERR(xf_spawn(&f[i], pinned_loop, (void *)(intptr_t)(i % WORKERS), &attr), 0);
	}
	for (int i = 0; i < 6; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	/* The first fiber is pinned to worker 0. */
	for (int i = 0; i < 1000; i++) {
		xf_yield();
		CHECK(xf_worker_id() == 0);
	}
	printf("pinned fibers stayed on their workers\n");
}

static atomic_bool woke;

static void *short_sleep(void *arg)
{
	(void)arg;
	xf_sleep_ns(5 * 1000 * 1000);
	atomic_store(&woke, true);
	return NULL;
}

static void *yield_until_stop(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		xf_yield();
	return NULL;
}

/* Yields between fibers take xf_yield's fast path, which leaves for the
 * scheduler's C - where due timers run - only when told (XF_DUE_TIMERS): the
 * ticker must tell it however many fibers the worker has queued.  Before
 * it did, the sleeper here never woke. */
static void sleeper_beside_yielders(void)
{
	xf_attr on_1 = XF_ATTR_INIT;
	xf_fiber *sleeper, *yielders[4];

	on_1.pinned = true;
	on_1.worker = 1;
	atomic_store(&stop, false);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_spawn(&yielders[i], yield_until_stop, NULL, &on_1), 0);
	CHECK_ERR(xf_spawn(&sleeper, short_sleep, NULL, &on_1), 0);
	/* Spin, not sleep: an idle worker 0 would ask worker 1 for work, and
	 * the request alone sends it to C. */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (!atomic_load(&woke) && t.tv_sec - t0.tv_sec < 10);
	if (!atomic_load(&woke))
		xf_test_fail("a 5 ms sleeper beside 4 yielding fibers had not woken after 10 s");
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_join(yielders[i], NULL), 0);
	CHECK_ERR(xf_join(sleeper, NULL), 0);
	printf("a sleeper woke beside fibers that yield to each other\n");
}

int main(void)
{
	run_order();
	CHECK_ERR(xf_init(&(xf_config){.workers = WORKERS}), 0);
	fairness_and_stealing();
	pinned();
	sleeper_beside_yielders();
	CHECK_ERR(xf_shutdown(), 0);
	return 0;
}
