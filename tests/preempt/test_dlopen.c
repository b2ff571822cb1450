/*
 * test_dlopen.c - code loaded after xf_init falls under the same safe-point
 * rules as code loaded before.
 *
 * usage: test_dlopen SAFE_LIB UNSAFE_LIB
 *   - a library dlopen()ed after xf_init is preemptible, once the runtime
 *     has looked at it (its code is deferred until then, as unknown);
 *   - another one, marked with xf_preempt_unsafe_add() after loading, is
 *     never preempted inside: the fiber queued behind it does not run
 *     while it spins there, and the deferrals are counted;
 *   - libgcc_s, which the C library loads on its own the first time it
 *     unwinds (backtrace()), is known as unsafe, like libc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "preempt/preempt.h"
#include "testlib.h"
#include "xfiber.h"

typedef int (*spin_fn)(uint64_t ticks, atomic_int *flag);

static atomic_int other_ran;
static spin_fn spin;
static int seen;

static uint64_t tsc_per_ms(void)
{
	struct timespec a, b;
	uint32_t lo, hi;
	uint64_t t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	t0 = (uint64_t)hi << 32 | lo;
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 10000000L);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	t1 = (uint64_t)hi << 32 | lo;
	return (t1 - t0) / 10;
}

static void *spinner(void *arg)
{
	seen = spin(*(uint64_t *)arg, &other_ran);
	return NULL;
}

static void *other(void *arg)
{
	atomic_store(&other_ran, 1);
	return arg;
}

/* Spins in the library for 30 ms with another fiber queued on the worker;
 * returns whether that fiber ran meanwhile. */
static int spin_beside_another(uint64_t ticks)
{
	xf_attr pinned = {.pinned = true, .worker = 0};
	xf_fiber *a, *b;

	atomic_store(&other_ran, 0);
	CHECK_ERR(xf_spawn(&a, spinner, &ticks, &pinned), 0);
	CHECK_ERR(xf_spawn(&b, other, NULL, &pinned), 0);
	CHECK_ERR(xf_join(a, NULL), 0);
	CHECK_ERR(xf_join(b, NULL), 0);
	return seen;
}

static spin_fn load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	spin_fn fn;

	if (!h)
		xf_test_fail("dlopen %s: %s", path, dlerror());
	fn = (spin_fn)dlsym(h, "dl_spin");
	CHECK(fn);
	return fn;
}

int main(int argc, char **argv)
{
	const uint64_t ticks = 30 * tsc_per_ms();
	xf_stats st0, st1;
	void *unwind;
	enum xf__code code;

	if (argc != 3)
		xf_test_fail("usage: test_dlopen SAFE_LIB UNSAFE_LIB");
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 100}), 0);

	spin = load(argv[1]);
	CHECK_ERR(xf_stats_get(&st0), 0);
	/* Up to ten tries: on a loaded machine under qemu's TCG, 30 ms have
	 * gone by with one preemption and 11 deferred. */
	for (int try = 1; !spin_beside_another(ticks); try++) {
		if (try < 10)
			continue;
		CHECK_ERR(xf_stats_get(&st1), 0);
		xf_test_fail("a library loaded after xf_init was never preempted in (%llu "
			     "preemptions, %llu deferred, %llu stale ticks meanwhile)",
			     (unsigned long long)(st1.total.preemptions - st0.total.preemptions),
			     (unsigned long long)(st1.total.preemptions_deferred -
						  st0.total.preemptions_deferred),
			     (unsigned long long)(st1.total.preemption_ticks_stale -
						  st0.total.preemption_ticks_stale));
	}

	spin = load(argv[2]);
	CHECK_ERR(xf_preempt_unsafe_add((void *)spin), 0);
	CHECK_ERR(xf_stats_get(&st0), 0);
	if (spin_beside_another(ticks))
		xf_test_fail("a library marked unsafe after loading was preempted in");
	CHECK_ERR(xf_stats_get(&st1), 0);
	if (st1.total.preemptions_deferred == st0.total.preemptions_deferred)
		xf_test_fail("no preemption was deferred in the unsafe library");

	/* The C library loads libgcc_s itself, for its first backtrace. */
	{
		void *frames[4];

		CHECK(backtrace(frames, 4) > 0);
	}
	{
		void *gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD); /* loaded by libc */

		if (!gcc_s)
			xf_test_fail("backtrace() did not load libgcc_s");
		unwind = dlsym(gcc_s, "_Unwind_Backtrace");
		CHECK(unwind);
	}
	for (int i = 0; (code = xf__safepoint_code((uintptr_t)unwind)) == XF_CODE_UNKNOWN; i++) {
		if (i > 5000)
			xf_test_fail("libgcc_s stayed unknown to the safe-point table for 5 s");
		xf_sleep_ns(1000000); /* the ticker rebuilds the table */
	}
	if (code != XF_CODE_UNSAFE)
		xf_test_fail("libgcc_s, loaded after xf_init, is taken for safe code");
	CHECK_ERR(xf_shutdown(), 0);
	printf("dlopen: a library loaded later is preempted in, a marked one (%llu deferrals) "
	       "and libgcc_s are not\n",
	       (unsigned long long)(st1.total.preemptions_deferred - st0.total.preemptions_deferred));
	return 0;
}
