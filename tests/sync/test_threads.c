/*
 * test_threads.c - plain threads (not workers) calling the runtime: they
 * spawn and join fibers, and block in channels, semaphores, wait groups,
 * mutexes and condition variables beside fibers - their own thread sleeps,
 * never a worker.
 *
 * usage: test_threads CASE WORKERS
 *   spawn    threads spawn fibers (queued on a worker) and join them
 *   chan     a thread sends through a small channel a fiber drains, and
 *            receives what fibers send, rendezvous channels included
 *   sem      threads wait for units fibers post, and time out on their own
 *   wg       a thread waits for fibers' xf_wg_done
 *   mutex    threads and fibers share an xf_mutex and an xf_cond
 *   shutdown threads spawn detached fibers while the first fiber shuts
 *            the runtime down: every spawn that returned 0 ran, the rest
 *            returned EPERM, and nothing crashed
 * Meanwhile a fiber counts on every worker: a worker put to sleep by a
 * thread's wait would stop its count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define THREADS 3

static unsigned nworkers;
static atomic_bool stop;
static atomic_ulong ticks[8];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Pinned to a worker, counting while threads block. */
static void *counter(void *arg)
{
	while (!atomic_load(&stop)) {
		atomic_fetch_add(&ticks[(intptr_t)arg], 1);
		xf_sleep_ns(100000);
	}
	return NULL;
}

static void run_threads(void *(*fn)(void *))
{
	pthread_t t[THREADS];
	unsigned long before[8];

	for (unsigned w = 0; w < nworkers; w++)
		before[w] = atomic_load(&ticks[w]);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0); /* a fiber's join of a thread: interposed */
	for (unsigned w = 0; w < nworkers; w++)
		if (atomic_load(&ticks[w]) == before[w])
			xf_test_fail("worker %u's counter stood still while threads waited", w);
}

/* --- spawn --- */

static void *twice(void *arg)
{
	xf_sleep_ns(1000000);
	return (void *)((intptr_t)arg * 2);
}

static void *spawner(void *arg)
{
	xf_fiber *f[20];
	void *r;

	(void)arg;
	for (int i = 0; i < 20; i++)
		CHECK_ERR(xf_spawn(&f[i], twice, (void *)(intptr_t)i, NULL), 0);
	for (int i = 0; i < 20; i++) {
		CHECK_ERR(xf_join(f[i], &r), 0);
		CHECK((intptr_t)r == 2 * i);
	}
	{
		xf_attr a = XF_ATTR_INIT;
		a.pinned = true; /* worker -1: "the spawner's", which a thread has not */
		CHECK_ERR(xf_spawn(&f[0], twice, NULL, &a), EINVAL);
		a.worker = (int)nworkers - 1;
		CHECK_ERR(xf_spawn(&f[0], twice, (void *)4, &a), 0);
		CHECK_ERR(xf_join(f[0], &r), 0);
		CHECK((intptr_t)r == 8);
	}
	return NULL;
}

/* --- chan --- */

#define ITEMS 2000
static xf_chan *to_fibers, *to_threads;

static void *drain(void *arg)
{
	long v, sum = 0;

	(void)arg;
	while (xf_chan_recv(to_fibers, &v) == 0)
		sum += v;
	return (void *)sum;
}

static void *fill(void *arg)
{
	for (long i = 0; i < ITEMS; i++)
		CHECK_ERR(xf_chan_send(to_threads, &i), 0);
	(void)arg;
	return NULL;
}

static void *chan_thread(void *arg)
{
	long v, sum = 0;

	if ((intptr_t)arg == 0) {
		for (long i = 0; i < ITEMS; i++)
			CHECK_ERR(xf_chan_send(to_fibers, &i), 0); /* waits while full */
		return NULL;
	}
	if ((intptr_t)arg == 1) {
		for (long i = 0; i < ITEMS; i++) {
			CHECK_ERR(xf_chan_recv(to_threads, &v), 0);
			sum += v;
		}
		CHECK(sum == (long)ITEMS * (ITEMS - 1) / 2);
		return NULL;
	}
	/* Timed: nothing comes on a channel of its own. */
	{
		xf_chan *quiet;
		uint64_t t0 = now_ns();

		CHECK_ERR(xf_chan_create(&quiet, sizeof(long), 0), 0);
		CHECK_ERR(xf_chan_timed_recv(quiet, &v, 3000000), ETIMEDOUT);
		CHECK(now_ns() - t0 >= 3000000);
		CHECK_ERR(xf_chan_destroy(quiet), 0);
	}
	return NULL;
}

static void test_chan(size_t capacity)
{
	xf_fiber *d, *f;
	void *sum;

	CHECK_ERR(xf_chan_create(&to_fibers, sizeof(long), capacity), 0);
	CHECK_ERR(xf_chan_create(&to_threads, sizeof(long), capacity), 0);
	CHECK_ERR(xf_spawn(&d, drain, NULL, NULL), 0);
	CHECK_ERR(xf_spawn(&f, fill, NULL, NULL), 0);
	run_threads(chan_thread);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_chan_close(to_fibers), 0);
	CHECK_ERR(xf_join(d, &sum), 0);
	CHECK((long)(intptr_t)sum == (long)ITEMS * (ITEMS - 1) / 2);
	CHECK_ERR(xf_chan_destroy(to_fibers), 0);
	CHECK_ERR(xf_chan_destroy(to_threads), 0);
}

/* --- sem --- */

static xf_sem units = XF_SEM_INITIALIZER(0);

static void *poster(void *arg)
{
	for (int i = 0; i < 100 * THREADS; i++) {
		CHECK_ERR(xf_sem_post(&units), 0);
		if (i % 10 == 0)
			xf_sleep_ns(200000);
	}
	(void)arg;
	return NULL;
}

static void *sem_thread(void *arg)
{
	xf_sem never = XF_SEM_INITIALIZER(0);
	uint64_t t0;

	(void)arg;
	for (int i = 0; i < 100; i++)
		CHECK_ERR(xf_sem_wait(&units), 0);
	t0 = now_ns();
	CHECK_ERR(xf_sem_timedwait(&never, 2000000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 2000000);
	CHECK_ERR(xf_sem_timedwait(&never, 0), ETIMEDOUT);
	return NULL;
}

static void test_sem(void)
{
	xf_fiber *p;
	uint64_t left;

	CHECK_ERR(xf_spawn(&p, poster, NULL, NULL), 0);
	run_threads(sem_thread);
	CHECK_ERR(xf_join(p, NULL), 0);
	CHECK_ERR(xf_sem_getvalue(&units, &left), 0);
	CHECK(left == 0);
}

/* --- wg --- */

static xf_wg group = XF_WG_INITIALIZER;

static void *worker_fiber(void *arg)
{
	xf_sleep_ns(1000000 + 100000 * (uint64_t)(intptr_t)arg);
	CHECK_ERR(xf_wg_done(&group), 0);
	return NULL;
}

static void *wg_thread(void *arg)
{
	(void)arg;
	CHECK_ERR(xf_wg_wait(&group), 0);
	return NULL;
}

static void test_wg(void)
{
	xf_fiber *f[30];
	pthread_t t[THREADS];

	CHECK_ERR(xf_wg_add(&group, 30), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, wg_thread, NULL) == 0);
	for (int i = 0; i < 30; i++)
		CHECK_ERR(xf_spawn(&f[i], worker_fiber, (void *)(intptr_t)i, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < 30; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_wg_timedwait(&group, 0), 0);
	/* Below zero or past the range, whatever the delta: INT64_MIN's
	 * negation overflows, and it was taken for a count of 0 added. */
	CHECK_ERR(xf_wg_add(&group, INT64_MIN), EINVAL);
	CHECK_ERR(xf_wg_add(&group, -1), EINVAL);
	CHECK_ERR(xf_wg_add(&group, INT64_MAX), 0);
	CHECK_ERR(xf_wg_add(&group, 1), EINVAL);
	CHECK_ERR(xf_wg_add(&group, INT64_MIN), EINVAL); /* to -1 */
	CHECK_ERR(xf_wg_add(&group, -INT64_MAX), 0);
	CHECK_ERR(xf_wg_timedwait(&group, 0), 0);
}

/* --- mutex --- */

static xf_mutex m = XF_MUTEX_INITIALIZER;
static xf_cond c = XF_COND_INITIALIZER;
static long shared, turns;
static atomic_int inside;

static void *mutex_user(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++) {
		CHECK_ERR(xf_mutex_lock(&m), 0);
		if (atomic_fetch_add(&inside, 1))
			xf_test_fail("two inside the mutex at once");
		shared++;
		if (i % 30 == 0) {
			/* A hand-off through the condition variable: wait for the
			 * other side to take a turn. */
			long seen = turns;
			int err = 0;

			atomic_fetch_sub(&inside, 1);
			while (turns == seen && err == 0)
				err = xf_cond_timedwait(&c, &m, 1000000);
			CHECK(err == 0 || err == ETIMEDOUT);
			atomic_fetch_add(&inside, 1);
		}
		turns++;
		CHECK_ERR(xf_cond_broadcast(&c), 0);
		atomic_fetch_sub(&inside, 1);
		CHECK_ERR(xf_mutex_unlock(&m), 0);
	}
	return NULL;
}

static void test_mutex(void)
{
	xf_fiber *f[THREADS];

	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(xf_spawn(&f[i], mutex_user, NULL, NULL), 0);
	run_threads(mutex_user);
	for (int i = 0; i < THREADS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK(shared == 300L * 2 * THREADS);
}

/* --- shutdown --- */

static atomic_long sd_ran, sd_spawned;

static void *sd_fiber(void *arg)
{
	(void)arg;
	atomic_fetch_add(&sd_ran, 1);
	return NULL;
}

static void *sd_spawner(void *arg)
{
	xf_attr a = XF_ATTR_INIT;

	(void)arg;
	a.detached = true;
	for (;;) {
		int err = xf_spawn(NULL, sd_fiber, NULL, &a);

		if (err) {
			CHECK_ERR(err, EPERM);
			return NULL;
		}
		atomic_fetch_add(&sd_spawned, 1);
	}
}

static void test_shutdown(void)
{
	for (int round = 0; round < 30; round++) {
		pthread_t t[THREADS];

		atomic_store(&sd_ran, 0);
		atomic_store(&sd_spawned, 0);
		CHECK_ERR(xf_init(&(xf_config){.workers = nworkers, .slice_us = 100}), 0);
		for (int i = 0; i < THREADS; i++)
			CHECK(pthread_create(&t[i], NULL, sd_spawner, NULL) == 0);
		xf_sleep_ns(1000000);
		CHECK_ERR(xf_shutdown(), 0);
		for (int i = 0; i < THREADS; i++)
			CHECK(pthread_join(t[i], NULL) == 0);
		if (atomic_load(&sd_ran) != atomic_load(&sd_spawned))
			xf_test_fail("round %d: %ld spawns returned 0, %ld fibers ran", round,
				     atomic_load(&sd_spawned), atomic_load(&sd_ran));
	}
}

int main(int argc, char **argv)
{
	xf_fiber *counters[8];

	if (argc != 3)
		xf_test_fail("usage: test_threads spawn|chan|sem|wg|mutex|shutdown WORKERS");
	nworkers = (unsigned)atoi(argv[2]);
	alarm(50);
	if (!strcmp(argv[1], "shutdown")) {
		test_shutdown(); /* its own runtimes */
		printf("shutdown: ok\n");
		return 0;
	}
	CHECK_ERR(xf_init(&(xf_config){.workers = nworkers, .slice_us = 100}), 0);
	for (unsigned w = 0; w < nworkers; w++) {
		xf_attr a = XF_ATTR_INIT;
		a.pinned = true;
		a.worker = (int)w;
		CHECK_ERR(xf_spawn(&counters[w], counter, (void *)(intptr_t)w, &a), 0);
	}
	if (!strcmp(argv[1], "spawn"))
		run_threads(spawner);
	else if (!strcmp(argv[1], "chan")) {
		test_chan(4);
		test_chan(0);
	} else if (!strcmp(argv[1], "sem"))
		test_sem();
	else if (!strcmp(argv[1], "wg"))
		test_wg();
	else if (!strcmp(argv[1], "mutex"))
		test_mutex();
	else
		xf_test_fail("unknown case %s", argv[1]);
	atomic_store(&stop, true);
	for (unsigned w = 0; w < nworkers; w++)
		CHECK_ERR(xf_join(counters[w], NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("%s: ok\n", argv[1]);
	return 0;
}
