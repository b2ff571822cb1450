/*
 * spin_fibers.c - four CPU-bound fibers on one worker at 100 us slices for
 * a second: run under gdb (test_gdb.sh spin), every preemption signal goes
 * through a stop of gdb's.  The ticker once resent faster than that, each
 * tick nested on the last at the handler's first instruction, and the
 * stack overflowed (ticker.c, one tick in flight).  Exits 0 when the
 * fibers were preempted and all ended.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "testlib.h"
#include "xfiber.h"

static atomic_bool stop;

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		n++;
	return NULL;
}

int main(void)
{
	xf_fiber *f[4];
	xf_stats st;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 100}), 0);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_spawn(&f[i], spin, NULL, NULL), 0);
	CHECK_ERR(xf_sleep_ns(1000000000), 0);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	if (!st.total.preemptions)
		xf_test_fail("no preemption in a second of four spinners");
	printf("spin: %llu preemptions, every fiber ended\n",
	       (unsigned long long)st.total.preemptions);
	return 0;
}
