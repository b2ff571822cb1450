/*
 * test_mask.c - the soft preemption mask, safe points and their counters.
 *
 * usage: test_mask mask|libc|unsafe|yield|stats
 *   mask    disable/enable nest; a preemption arriving while disabled is
 *           taken at the outermost enable, not before
 *   libc    fibers hammering malloc/free and snprintf under 50 us slices on
 *           one worker never deadlock (preemption inside libc is deferred)
 *   unsafe  xf_preempt_unsafe_add() makes a whole object a deferral zone
 *   yield   fibers yielding flat out while another thread fires preemption
 *           signals at their worker: signals landing in xf_yield's
 *           assembly fast path (which runs without the soft mask) are
 *           deferred, the others preempt; no yield is lost, and each fiber
 *           keeps its own errno and MXCSR through both kinds of switch
 *   stats   xf_stats_get's errors; xf_preempt_enable without disable is
 *           harmless
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static atomic_ulong other_ran;
static atomic_bool stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_for(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void *other(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		atomic_fetch_add(&other_ran, 1);
	return NULL;
}

static void test_mask(void)
{
	xf_fiber *f;
	xf_stats st;
	unsigned long seen;
	uint64_t deferred0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	CHECK_ERR(xf_spawn(&f, other, NULL, NULL), 0);
	xf_yield(); /* let it start */

	CHECK_ERR(xf_stats_get(&st), 0);
	deferred0 = st.total.preemptions_deferred;
	xf_preempt_disable();
	xf_preempt_disable();
	seen = atomic_load(&other_ran);
	/* At least 20 ms (400 slices), until a preemption was deferred in
	 * this section (a loaded machine may delay the ticker). */
	for (uint64_t t0 = now_ns();; spin_for(1000 * 1000)) {
		CHECK_ERR(xf_stats_get(&st), 0);
		if (st.total.preemptions_deferred > deferred0 && now_ns() - t0 > 20 * 1000 * 1000)
			break;
		if (now_ns() - t0 > 10ull * 1000 * 1000 * 1000)
			xf_test_fail("no preemption was recorded as deferred in 10 s");
	}
	if (atomic_load(&other_ran) != seen)
		xf_test_fail("another fiber ran while preemption was disabled");
	xf_preempt_enable(); /* still nested: nothing yet */
	if (atomic_load(&other_ran) != seen)
		xf_test_fail("an inner enable took the pending preemption");
	xf_preempt_enable(); /* outermost: the pending preemption is taken here */
	if (atomic_load(&other_ran) == seen)
		xf_test_fail("the pending preemption was not taken at enable");
	printf("mask: nested disable held off %lu deferred preemptions; taken at enable\n",
	       (unsigned long)st.total.preemptions_deferred);

	/* Preemption works again afterwards. */
	seen = atomic_load(&other_ran);
	for (uint64_t t0 = now_ns(); atomic_load(&other_ran) == seen;) {
		if (now_ns() - t0 > 10ull * 1000 * 1000 * 1000)
			xf_test_fail("no preemption in 10 s after the mask was lifted");
	}
	atomic_store(&stop, true);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

static void *libc_hammer(void *arg)
{
	char buf[256];
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		void *p[8];
		for (int i = 0; i < 8; i++) {
			p[i] = malloc(16 + (size_t)(n + i) % 2000);
			CHECK(p[i]);
			memset(p[i], (int)i, 16);
		}
		snprintf(buf, sizeof(buf), "%lu %f %s", n, (double)n / 3.0,
			 "libc under preemption");
		for (int i = 0; i < 8; i++)
			free(p[i]);
		n++;
	}
	return (void *)n;
}

static void test_libc(void)
{
	xf_fiber *f[4];
	xf_stats st;
	uint64_t total = 0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_spawn(&f[i], libc_hammer, NULL, NULL), 0);
	xf_sleep_ns(1000 * 1000 * 1000);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++) {
		void *r;
		CHECK_ERR(xf_join(f[i], &r), 0);
		if (!r)
			xf_test_fail("fiber %d made no progress", i);
		total += (uint64_t)(uintptr_t)r;
	}
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("libc: %lu malloc/snprintf rounds, %lu preemptions, %lu deferred in unsafe code\n",
	       (unsigned long)total, (unsigned long)st.total.preemptions,
	       (unsigned long)st.total.preemptions_deferred);
	if (!st.total.preemptions || !st.total.preemptions_deferred)
		xf_test_fail("expected both preemptions and deferrals inside libc");
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		;
	return NULL;
}

static void *stop_later(void *arg)
{
	struct timespec ts = {0, 200 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	return NULL;
}

static void test_unsafe(void)
{
	xf_fiber *f[2];
	pthread_t timer;
	xf_stats st;

	CHECK_ERR(xf_preempt_unsafe_add(NULL), EINVAL);
	CHECK_ERR(xf_preempt_unsafe_add((void *)8), EINVAL); /* in no object */
	/* This whole test program: its fibers can then never be preempted. */
	CHECK_ERR(xf_preempt_unsafe_add((void *)spinner), 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	/* The spinners cannot be preempted, so no fiber - not even a sleeping
	 * one - could wake to stop them: a plain thread does.  It starts first:
	 * a preemption deferred in this (unsafe) code is still taken at the
	 * next runtime call, such as the spawns, and may never come back. */
	CHECK(pthread_create(&timer, NULL, stop_later, NULL) == 0);
	CHECK_ERR(xf_spawn(&f[0], spinner, NULL, NULL), 0);
	CHECK_ERR(xf_spawn(&f[1], spinner, NULL, NULL), 0);
	CHECK_ERR(xf_join(f[0], NULL), 0);
	CHECK_ERR(xf_join(f[1], NULL), 0);
	pthread_join(timer, NULL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("unsafe: %lu preemptions, %lu deferred\n", (unsigned long)st.total.preemptions,
	       (unsigned long)st.total.preemptions_deferred);
	if (st.total.preemptions)
		xf_test_fail("a fiber was preempted inside an object marked unsafe");
	if (!st.total.preemptions_deferred)
		xf_test_fail("no preemption was even attempted");
}

#define YIELDERS     4
#define YIELD_ROUNDS 300000

static atomic_ulong yields_done[YIELDERS];

static void *yielder(void *arg)
{
	const unsigned i = (unsigned)(uintptr_t)arg;
	/* Round to nearest, down, up, towards zero: one per fiber. */
	const unsigned mxcsr = 0x1f80u | (i % 4) << 13;

	__builtin_ia32_ldmxcsr(mxcsr);
	for (unsigned long n = 0; n < YIELD_ROUNDS; n++) {
		errno = (int)(1000 + i);
		xf_yield();
		if (errno != (int)(1000 + i))
			xf_test_fail("fiber %u found errno %d after a yield", i, errno);
		if (__builtin_ia32_stmxcsr() != mxcsr)
			xf_test_fail("fiber %u found MXCSR %#x after a yield, not %#x", i,
				     __builtin_ia32_stmxcsr(), mxcsr);
		atomic_store_explicit(&yields_done[i], n + 1, memory_order_relaxed);
	}
	return NULL;
}

struct signaller {
	pid_t tid;
	atomic_ulong sent;
};

/* Fires the preemption signal (SIGURG) at one thread every ~10 us. */
static void *signal_thread(void *arg)
{
	struct signaller *s = arg;

	while (!atomic_load(&stop)) {
		if (syscall(SYS_tgkill, getpid(), s->tid, SIGURG) == 0)
			atomic_fetch_add(&s->sent, 1);
		spin_for(10 * 1000);
	}
	return NULL;
}

static void test_yield(void)
{
	struct signaller sig = {.tid = (pid_t)syscall(SYS_gettid)};
	xf_fiber *f[YIELDERS];
	pthread_t thread;
	xf_stats st;

	/* One worker: this thread, where the signals go. */
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	for (unsigned i = 0; i < YIELDERS; i++)
		CHECK_ERR(xf_spawn(&f[i], yielder, (void *)(uintptr_t)i, NULL), 0);
	CHECK(pthread_create(&thread, NULL, signal_thread, &sig) == 0);
	for (unsigned i = 0; i < YIELDERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	atomic_store(&stop, true);
	pthread_join(thread, NULL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("yield: %d fibers x %d yields, %lu signals: %lu preemptions, %lu deferred\n",
	       YIELDERS, YIELD_ROUNDS, atomic_load(&sig.sent), (unsigned long)st.total.preemptions,
	       (unsigned long)st.total.preemptions_deferred);
	for (unsigned i = 0; i < YIELDERS; i++) {
		if (atomic_load(&yields_done[i]) != YIELD_ROUNDS)
			xf_test_fail("fiber %u finished %lu yields of %d", i,
				     atomic_load(&yields_done[i]), YIELD_ROUNDS);
	}
	if (st.total.switches < (uint64_t)YIELDERS * YIELD_ROUNDS)
		xf_test_fail("%lu switches for %d yields", (unsigned long)st.total.switches,
			     YIELDERS * YIELD_ROUNDS);
	if (!atomic_load(&sig.sent) || !(st.total.preemptions + st.total.preemptions_deferred))
		xf_test_fail("no preemption signal reached the yielding fibers");
}

static void test_stats(void)
{
	xf_stats st;

	CHECK_ERR(xf_stats_get(&st), EPERM);
	xf_preempt_enable(); /* unbalanced: ignored */
	xf_preempt_disable();
	xf_preempt_enable();
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_stats_get(NULL), EINVAL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK(st.nr_workers == 1);
	xf_yield();
	CHECK_ERR(xf_shutdown(), 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .cooperative = true}), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("stats: errors ok\n");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_mask mask|libc|unsafe|yield|stats");
	if (!strcmp(argv[1], "mask"))
		test_mask();
	else if (!strcmp(argv[1], "libc"))
		test_libc();
	else if (!strcmp(argv[1], "unsafe"))
		test_unsafe();
	else if (!strcmp(argv[1], "yield"))
		test_yield();
	else if (!strcmp(argv[1], "stats"))
		test_stats();
	else
		xf_test_fail("unknown case '%s'", argv[1]);
	return 0;
}
