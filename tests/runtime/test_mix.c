/*
 * test_mix.c - every kind of switch at once, at random, for a while: yields,
 * a contended mutex, timed semaphore and channel waits that time out or
 * not, sleeps, and pinned and unpinned children spawned and joined, on two
 * workers with 50 us slices, then again cooperatively.  Each operation
 * checks its own result: the mutex excludes, a timed wait ends in success
 * or ETIMEDOUT and nothing else, a join returns its child's result after
 * the child ran.  Wake-ups that hit the wrong wait, fibers queued twice or
 * lost show up here first.  Debug builds also check the scheduler's
 * invariants on the way.
 *
 * usage: runtime_test_mix [SECONDS per round, default 1]
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "testlib.h"
#include "xfiber.h"

#define MIXERS 24

static xf_mutex mutex = XF_MUTEX_INITIALIZER;
static xf_fiber *holder; /* under mutex */
static uint64_t counter; /* under mutex */
static xf_sem sem = XF_SEM_INITIALIZER(0);
static xf_chan *chan;
static atomic_bool stop;

struct mixer {
	unsigned seed;
	uint64_t ops, increments;
};

struct child {
	atomic_int yields;
};

static void *child_main(void *arg)
{
	struct child *c = arg;

	for (int i = 0; i < 20; i++) {
		atomic_fetch_add(&c->yields, 1);
		xf_yield();
	}
	return c;
}

static void timed_ok(int err, const char *what)
{
	if (err && err != ETIMEDOUT)
		xf_test_fail("%s returned %d (%s)", what, err, xf_test_errname(err));
}

static void locked_increment(struct mixer *m, unsigned r)
{
	CHECK_ERR(xf_mutex_lock(&mutex), 0);
	if (holder)
		xf_test_fail("mutex held by two fibers");
	holder = xf_self();
	counter++;
	m->increments++;
	if (r & 1)
		xf_yield();
	if (holder != xf_self())
		xf_test_fail("mutex holder changed under its owner");
	holder = NULL;
	CHECK_ERR(xf_mutex_unlock(&mutex), 0);
}

static void spawn_and_join(unsigned r)
{
	xf_attr attr = XF_ATTR_INIT;
	struct child c = {0};
	xf_fiber *f;
	void *result;

	attr.pinned = (r >> 3) & 1;
	attr.worker = (r >> 4) & 1;
	CHECK_ERR(xf_spawn(&f, child_main, &c, &attr), 0);
	CHECK_ERR(xf_join(f, &result), 0);
	if (result != &c || atomic_load(&c.yields) != 20)
		xf_test_fail("join returned before its child finished (%d of 20 yields)",
			     atomic_load(&c.yields));
}

static void *mixer_main(void *arg)
{
	struct mixer *m = arg;
	int v = 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned r = rand_r(&m->seed);

		switch (r % 7) {
		case 0: xf_yield(); break;
		case 1: locked_increment(m, r >> 8); break;
		case 2: CHECK_ERR(xf_sem_post(&sem), 0); break;
		case 3: timed_ok(xf_sem_timedwait(&sem, 2000), "xf_sem_timedwait"); break;
		case 4:
			if (r & 0x100)
				timed_ok(xf_chan_timed_send(chan, &v, 3000), "xf_chan_timed_send");
			else
				timed_ok(xf_chan_timed_recv(chan, &v, 3000), "xf_chan_timed_recv");
			break;
		case 5: CHECK_ERR(xf_sleep_ns(r & 0x100 ? 1000 : 0), 0); break;
		case 6: spawn_and_join(r >> 8); break;
		}
		m->ops++;
	}
	return m;
}

static void mix_round(double seconds, bool cooperative, size_t capacity)
{
	struct mixer mixers[MIXERS];
	xf_fiber *f[MIXERS];
	uint64_t ops = 0, increments = 0;
	struct timespec t0, t;

	CHECK_ERR(xf_init(&(xf_config){
		      .workers = 2, .slice_us = 50, .spin_us = 1, .cooperative = cooperative}),
		  0);
	CHECK_ERR(xf_chan_create(&chan, sizeof(int), capacity), 0);
	counter = 0;
	atomic_store(&stop, false);
	for (int i = 0; i < MIXERS; i++) {
		xf_attr attr = XF_ATTR_INIT;

		mixers[i] = (struct mixer){.seed = 0x9e3779b9u * (unsigned)(i + 1)};
		attr.pinned = i % 5 == 0;
		attr.worker = i % 2;
		CHECK_ERR(xf_spawn(&f[i], mixer_main, &mixers[i], &attr), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK_ERR(xf_sleep_ns(1000 * 1000), 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	atomic_store(&stop, true);
	for (int i = 0; i < MIXERS; i++) {
		void *result;

		CHECK_ERR(xf_join(f[i], &result), 0);
		CHECK(result == &mixers[i]);
		ops += mixers[i].ops;
		increments += mixers[i].increments;
	}
	if (counter != increments)
		xf_test_fail("mutex counter %lu, increments %lu", (unsigned long)counter,
			     (unsigned long)increments);
	CHECK_ERR(xf_chan_destroy(chan), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("%s, channel capacity %zu: %lu operations, %lu locked increments, all checked\n",
	       cooperative ? "cooperative" : "50 us slices", capacity, (unsigned long)ops,
	       (unsigned long)increments);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	if (!(seconds > 0))
		xf_test_fail("usage: runtime_test_mix [SECONDS per round]");
	mix_round(seconds, false, 0);
	mix_round(seconds, false, 1);
	mix_round(seconds, true, 0);
	return 0;
}
