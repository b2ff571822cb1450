/*
 * test_batch.c - the batch class (xf_fiber_set_batch, sched/schedule.c).
 *
 * Fibers spin in units of work on one worker with 100 us slices; what each
 * got is the count of its units over a few hundred milliseconds, so the
 * checks are shares of the worker, which a loaded machine slows for all
 * fibers alike.
 *
 * usage: test_batch aside|dry|set|cooperative
 *   aside        a batch fiber beside a CPU-bound latency-critical one gets
 *                about one slice in ten (the guard), where a latency-critical
 *                twin in its place gets half: the control, run first
 *   dry          a batch fiber has the worker whenever the latency-critical
 *                one sleeps; two batch fibers alone share it round robin
 *   set          xf_fiber_set_batch: its errors, and a fiber that turns
 *                itself into batch work mid-run steps aside
 *   cooperative  without slices the class changes nothing, and nothing hangs
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "xfiber.h"

#define SLICE_US 100

struct spinner {
	_Atomic uint64_t units;
	uint64_t sleep_every; /* units between 1 ms sleeps; 0: never sleeps */
	bool become_batch;    /* calls xf_fiber_set_batch(self, true) first */
};

static atomic_bool stop;

/* One unit: about a microsecond of the CPU, in this program's own code,
 * where preemption is never deferred. */
static __attribute__((noinline)) void unit(void)
{
	for (int i = 0; i < 300; i++)
		__asm__ volatile("" ::: "memory");
}

static void *spin(void *arg)
{
	struct spinner *s = arg;

	if (s->become_batch)
		CHECK_ERR(xf_fiber_set_batch(xf_self(), true), 0);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t n = atomic_load_explicit(&s->units, memory_order_relaxed) + 1;

		unit();
		atomic_store_explicit(&s->units, n, memory_order_relaxed);
		if (s->sleep_every && n % s->sleep_every == 0)
			CHECK_ERR(xf_sleep_ns(1000000), 0);
	}
	return NULL;
}

static xf_fiber *start(struct spinner *s, bool batch)
{
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *f;

	attr.batch = batch;
	CHECK_ERR(xf_spawn(&f, spin, s, &attr), 0);
	return f;
}

static void init(bool cooperative)
{
	CHECK_ERR(xf_init(&(xf_config){
			  .workers = 1, .slice_us = SLICE_US, .cooperative = cooperative}),
		  0);
	atomic_store(&stop, false);
}

/* A runtime where a (batch or not) and b (likewise) spin for ms; then
 * they stop, and *st (may be NULL) gets the counters. */
static void run_pair(struct spinner *a, bool a_batch, struct spinner *b, bool b_batch,
		     bool cooperative, unsigned ms, xf_stats *st)
{
	xf_fiber *fa, *fb;

	init(cooperative);
	fa = start(a, a_batch);
	fb = start(b, b_batch);
	CHECK_ERR(xf_sleep_ns((uint64_t)ms * 1000000), 0);
	atomic_store(&stop, true);
	CHECK_ERR(xf_join(fa, NULL), 0);
	CHECK_ERR(xf_join(fb, NULL), 0);
	if (st)
		CHECK_ERR(xf_stats_get(st), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

static double share(struct spinner *a, struct spinner *b)
{
	double x = (double)atomic_load(&a->units), y = (double)atomic_load(&b->units);

	if (x + y < 1000)
		xf_test_fail("the spinners barely ran: %.0f and %.0f units", x, y);
	return x / (x + y);
}

/* A CPU-bound pair, the first batch or not: the first's share. */
static double pair_share(bool batch, xf_stats *st)
{
	struct spinner b = {0}, l = {0};

	run_pair(&b, batch, &l, false, false, 400, st);
	return share(&b, &l);
}

static void test_aside(void)
{
	xf_stats st;
	double control = pair_share(false, &st), batch;

	if (control < 0.3 || control > 0.7)
		xf_test_fail("control: two latency-critical spinners shared %.2f / %.2f", control,
			     1 - control);
	if (st.total.batch_stepped_aside || st.total.batch_starved)
		xf_test_fail("control: no batch fiber, yet %llu steps aside, %llu starved",
			     (unsigned long long)st.total.batch_stepped_aside,
			     (unsigned long long)st.total.batch_starved);
	batch = pair_share(true, &st);
	/* One slice in XF_BATCH_WAIT_SLICES + 1 = 0.1; late ticks on a busy
	 * machine stretch the batch fiber's slices, hence the wide margin. */
	if (batch > 0.3)
		xf_test_fail("a batch spinner kept %.2f of the worker beside a latency-critical "
			     "one (control %.2f)",
			     batch, control);
	if (batch < 0.02 || !st.total.batch_starved)
		xf_test_fail("a batch spinner starved: %.3f of the worker, %llu releases by the "
			     "guard",
			     batch, (unsigned long long)st.total.batch_starved);
	if (!st.total.batch_stepped_aside)
		xf_test_fail("no batch fiber stepped aside");
	printf("aside: batch %.3f of the worker (control %.2f); %llu steps aside, %llu by the "
	       "guard\n",
	       batch, control, (unsigned long long)st.total.batch_stepped_aside,
	       (unsigned long long)st.total.batch_starved);
}

static void test_dry(void)
{
	struct spinner b = {0}, l = {.sleep_every = 100}, b2 = {0};
	double s, s2;
	uint64_t sleeps;

	/* l spins ~100 us, sleeps 1 ms: b should have nearly all the rest. */
	run_pair(&b, true, &l, false, false, 400, NULL);
	s = share(&b, &l);
	sleeps = atomic_load(&l.units) / 100;
	if (s < 0.6)
		xf_test_fail("a batch spinner got %.2f of a worker that a sleeper leaves idle", s);
	if (sleeps < 50)
		xf_test_fail("the latency-critical sleeper ran only %llu rounds in 400 ms",
			     (unsigned long long)sleeps);

	/* Two batch fibers alone: round robin among themselves. */
	memset(&b, 0, sizeof(b));
	run_pair(&b, true, &b2, true, false, 300, NULL);
	s2 = share(&b, &b2);
	if (s2 < 0.25 || s2 > 0.75)
		xf_test_fail("two batch spinners alone shared %.2f / %.2f", s2, 1 - s2);
	printf("dry: batch %.2f beside a sleeper (%llu rounds of it); two batch fibers %.2f / "
	       "%.2f\n",
	       s, (unsigned long long)sleeps, s2, 1 - s2);
}

static void *nothing(void *arg)
{
	return arg;
}

static void test_set(void)
{
	struct spinner b = {.become_batch = true}, l = {0};
	xf_fiber *gone;
	xf_stats st;
	double s;

	run_pair(&b, false, &l, false, false, 300, &st);
	s = share(&b, &l);
	if (!st.total.batch_stepped_aside || s > 0.3)
		xf_test_fail("a fiber that made itself batch work kept %.2f of the worker (%llu "
			     "steps aside)",
			     s, (unsigned long long)st.total.batch_stepped_aside);
	/* The errors; and the first fiber turns itself batch and back. */
	init(false);
	CHECK_ERR(xf_fiber_set_batch(NULL, true), EINVAL);
	CHECK_ERR(xf_spawn(&gone, nothing, NULL, NULL), 0);
	CHECK_ERR(xf_join(gone, NULL), 0);
	CHECK_ERR(xf_fiber_set_batch(gone, true), ESRCH);
	CHECK_ERR(xf_fiber_set_batch(xf_self(), true), 0);
	CHECK_ERR(xf_fiber_set_batch(xf_self(), false), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("set: errors EINVAL and ESRCH; a fiber turned batch kept %.2f\n", s);
}

static void test_cooperative(void)
{
	struct spinner b = {.sleep_every = 1000}, l = {.sleep_every = 1000};
	xf_stats st;

	run_pair(&b, true, &l, false, true, 200, &st);
	if (st.total.batch_stepped_aside)
		xf_test_fail("cooperative: %llu steps aside without slices",
			     (unsigned long long)st.total.batch_stepped_aside);
	share(&b, &l);
	printf("cooperative: both ran (%llu, %llu units), no step aside\n",
	       (unsigned long long)atomic_load(&b.units),
	       (unsigned long long)atomic_load(&l.units));
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_batch aside|dry|set|cooperative");
	if (!strcmp(argv[1], "aside"))
		test_aside();
	else if (!strcmp(argv[1], "dry"))
		test_dry();
	else if (!strcmp(argv[1], "set"))
		test_set();
	else if (!strcmp(argv[1], "cooperative"))
		test_cooperative();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
