/*
 * test_steal.c - work goes to idle workers, with 3 to 8 of them.
 *
 * usage: test_steal CASE WORKERS
 *   spread   worker 0 runs 6 pinned CPU-bound fibers (the longest queue,
 *            nothing stealable), worker 1 gets 3 unpinned CPU-bound ones;
 *            the other workers are idle: one of them must run one of
 *            worker 1's fibers, not keep asking worker 0, whose queue is
 *            longer but holds nothing that may move
 *   behind   every worker but the last is busy with a pinned CPU-bound
 *            fiber; a fiber spawned on worker 0, queued behind its
 *            CPU-bound fiber, must be run by the idle worker, without
 *            waiting for the CPU-bound fiber's slice to end - with slices
 *            of 10 s it must start within one second
 *   thread   workers 1 to WORKERS-2 are busy as in behind, worker 0 and the
 *            last idle; a plain thread spawns fibers one after the other,
 *            and each must start within one second: on an idle worker, not
 *            in the inbox of a busy one, whose queue is as empty
 *   mixed    a plain thread spawns 30,000 short fibers as fast as it can
 *            while CPU-bound ones are preempted at every 50 us slice: the
 *            queues mix fibers that may move with preempted ones that may
 *            not, and steals take the first movable ones out of the middle
 *            of them; every short fiber runs exactly once, some on each
 *            worker, and the runtime's checks of its queues (XFIBER_DEBUG)
 *            stay quiet
 *
 * On 2 CPUs the workers share them, but which worker runs what shows the
 * logic all the same.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static atomic_bool stop;
static atomic_int ran_on[64];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU-bound until stop; notes each worker it ran on. */
static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		atomic_store_explicit(&ran_on[xf_worker_id()], 1, memory_order_relaxed);
	return NULL;
}

static xf_fiber *unpinned[3];

/* On worker 1: spawns the unpinned fibers there. */
static void *launch_on_1(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		CHECK_ERR(xf_spawn(&unpinned[i], spin, NULL, NULL), 0);
	return NULL;
}

static void test_spread(unsigned workers)
{
	xf_attr pin = XF_ATTR_INIT;
	xf_fiber *pinned[6], *launcher;
	uint64_t t0 = now_ns();
	bool idle_ran = false;

	CHECK_ERR(xf_init(&(xf_config){.workers = workers, .slice_us = 1000}), 0);
	pin.pinned = true;
	pin.worker = 0;
	for (int i = 0; i < 6; i++)
		CHECK_ERR(xf_spawn(&pinned[i], spin, NULL, &pin), 0);
	pin.worker = 1;
	CHECK_ERR(xf_spawn(&launcher, launch_on_1, NULL, &pin), 0);
	CHECK_ERR(xf_join(launcher, NULL), 0);
	while (!idle_ran && now_ns() - t0 < 10000000000ull) {
		xf_sleep_ns(10 * 1000 * 1000);
		for (unsigned w = 2; w < workers; w++)
			idle_ran |= atomic_load(&ran_on[w]);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 6; i++)
		CHECK_ERR(xf_join(pinned[i], NULL), 0);
	for (int i = 0; i < 3; i++)
		CHECK_ERR(xf_join(unpinned[i], NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	if (!idle_ran)
		xf_test_fail("spread, %u workers: no idle worker ran any of worker 1's fibers in 10 s",
			     workers);
	printf("spread, %u workers: an idle worker took one of worker 1's fibers after %.1f ms\n",
	       workers, (double)(now_ns() - t0) / 1e6);
}

static atomic_uint_fast64_t started_ns;
static atomic_int started_on = -1;

static void *note_start(void *arg)
{
	(void)arg;
	atomic_store(&started_ns, now_ns());
	atomic_store(&started_on, xf_worker_id());
	return NULL;
}

/* Slices of 10 s: only a hand-off before the slice ends is in time.
 * Workers 1 to WORKERS-2 get a pinned CPU-bound fiber each. */
static void start_busy(unsigned workers, xf_fiber **busy)
{
	xf_attr pin = XF_ATTR_INIT;

	CHECK_ERR(xf_init(&(xf_config){.workers = workers, .slice_us = 10000000}), 0);
	pin.pinned = true;
	for (unsigned w = 1; w + 1 < workers; w++) {
		pin.worker = (int)w;
		CHECK_ERR(xf_spawn(&busy[w], spin, NULL, &pin), 0);
	}
}

static void test_behind(unsigned workers)
{
	xf_attr pin = XF_ATTR_INIT;
	xf_fiber *busy[64], *late;
	uint64_t t0;

	start_busy(workers, busy);
	pin.pinned = true;
	pin.worker = 0;
	CHECK_ERR(xf_spawn(&busy[0], spin, NULL, &pin), 0);
	xf_sleep_ns(50 * 1000 * 1000); /* every busy fiber runs; the last worker idles */
	t0 = now_ns();
	/* From worker 0 (the first fiber is pinned there): queued behind busy[0]. */
	CHECK_ERR(xf_spawn(&late, note_start, NULL, NULL), 0);
	while (!atomic_load(&started_ns) && now_ns() - t0 < 1000000000ull)
		xf_sleep_ns(1000 * 1000);
	atomic_store(&stop, true);
	for (unsigned w = 0; w + 1 < workers; w++)
		CHECK_ERR(xf_join(busy[w], NULL), 0);
	CHECK_ERR(xf_join(late, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	if (atomic_load(&started_ns) - t0 > 1000000000ull)
		xf_test_fail("behind, %u workers: the queued fiber started after %.1f ms, on worker %d",
			     workers, (double)(atomic_load(&started_ns) - t0) / 1e6,
			     atomic_load(&started_on));
	printf("behind, %u workers: the queued fiber started after %.2f ms on worker %d\n", workers,
	       (double)(atomic_load(&started_ns) - t0) / 1e6, atomic_load(&started_on));
}

static void *spawn_from_thread(void *arg)
{
	unsigned workers = *(unsigned *)arg;

	for (unsigned round = 0; round < workers; round++) {
		xf_fiber *f;
		uint64_t t0 = now_ns();

		atomic_store(&started_ns, 0);
		CHECK_ERR(xf_spawn(&f, note_start, NULL, NULL), 0);
		while (!atomic_load(&started_ns) && now_ns() - t0 < 1000000000ull)
			usleep(1000);
		if (!atomic_load(&started_ns))
			xf_test_fail("thread, %u workers: spawn %u from a plain thread had not "
				     "started after 1 s",
				     workers, round + 1);
		printf("thread, %u workers: spawn %u started after %.2f ms on worker %d\n", workers,
		       round + 1, (double)(atomic_load(&started_ns) - t0) / 1e6,
		       atomic_load(&started_on));
		CHECK_ERR(xf_join(f, NULL), 0);
	}
	return NULL;
}

static void test_thread(unsigned workers)
{
	xf_fiber *busy[64];
	pthread_t spawner;

	start_busy(workers, busy);
	xf_sleep_ns(50 * 1000 * 1000); /* every busy fiber runs */
	CHECK_ERR(pthread_create(&spawner, NULL, spawn_from_thread, &workers), 0);
	/* Not pthread_join: worker 0 stays free to sleep between looks. */
	while (pthread_tryjoin_np(spawner, NULL))
		xf_sleep_ns(1000 * 1000);
	atomic_store(&stop, true);
	for (unsigned w = 1; w + 1 < workers; w++)
		CHECK_ERR(xf_join(busy[w], NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

#define MIXED_SHORT 30000
#define MIXED_LONG  8

static atomic_int short_runs[MIXED_SHORT];
static atomic_int short_on[64];
static xf_wg shorts_done = XF_WG_INITIALIZER;

static void *short_work(void *arg)
{
	volatile unsigned x = 0;

	for (unsigned i = 0; i < 2000; i++)
		x += i;
	atomic_fetch_add(&short_runs[(intptr_t)arg], 1);
	atomic_fetch_add(&short_on[xf_worker_id()], 1);
	xf_wg_done(&shorts_done);
	return NULL;
}

static void *spawn_shorts(void *arg)
{
	xf_attr detached = XF_ATTR_INIT;

	(void)arg;
	detached.detached = true;
	for (intptr_t i = 0; i < MIXED_SHORT; i++)
		CHECK_ERR(xf_spawn(NULL, short_work, (void *)i, &detached), 0);
	return NULL;
}

static void test_mixed(unsigned workers)
{
	xf_fiber *longs[MIXED_LONG];
	pthread_t spawner;
	xf_stats st;
	unsigned used = 0;

	CHECK_ERR(xf_init(&(xf_config){.workers = workers, .slice_us = 50}), 0);
	for (int i = 0; i < MIXED_LONG; i++)
		CHECK_ERR(xf_spawn(&longs[i], spin, NULL, NULL), 0);
	xf_wg_add(&shorts_done, MIXED_SHORT);
	CHECK_ERR(pthread_create(&spawner, NULL, spawn_shorts, NULL), 0);
	CHECK_ERR(xf_wg_wait(&shorts_done), 0);
	while (pthread_tryjoin_np(spawner, NULL))
		xf_sleep_ns(1000 * 1000);
	atomic_store(&stop, true);
	for (int i = 0; i < MIXED_LONG; i++)
		CHECK_ERR(xf_join(longs[i], NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	for (int i = 0; i < MIXED_SHORT; i++)
		if (atomic_load(&short_runs[i]) != 1)
			xf_test_fail("mixed, %u workers: short fiber %d ran %d times", workers, i,
				     atomic_load(&short_runs[i]));
	for (unsigned w = 0; w < workers; w++)
		used += atomic_load(&short_on[w]) > 0;
	if (used < 2 || !st.total.preemptions)
		xf_test_fail("mixed, %u workers: the shorts ran on %u workers, with %llu "
			     "preemptions: nothing was stolen from a queue with preempted fibers",
			     workers, used, (unsigned long long)st.total.preemptions);
	printf("mixed, %u workers: %d short fibers ran once each, on %u workers; %llu "
	       "preemptions\n",
	       workers, MIXED_SHORT, used, (unsigned long long)st.total.preemptions);
}

int main(int argc, char **argv)
{
	unsigned workers = argc > 2 ? (unsigned)atoi(argv[2]) : 3;

	if (argc < 3 || workers < 3 || workers > 64)
		xf_test_fail("usage: test_steal spread|behind|thread|mixed WORKERS (3-64)");
	if (!strcmp(argv[1], "spread"))
		test_spread(workers);
	else if (!strcmp(argv[1], "behind"))
		test_behind(workers);
	else if (!strcmp(argv[1], "thread"))
		test_thread(workers);
	else if (!strcmp(argv[1], "mixed"))
		test_mixed(workers);
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
