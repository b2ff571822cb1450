/*
 * blocked_wait.c - the designs issue 16 weighed for a fiber that waits in
 * the kernel for something a fiber of its own thread holds, measured side
 * by side (docs/preemption.md, "Waiting in the kernel").
 *
 * One worker, 1000 us slices.  A fiber runs a pthread_once routine of 3
 * slices; four more call pthread_once meanwhile; an observer fiber does CPU
 * work all along.  Two ways to run the routine:
 *   switchable   as libxfiber does: the routine is preemptible, and the
 *                waiters are switched out where they wait in the kernel
 *   masked       the routine runs with preemption disabled, the other
 *                design: nothing else runs on the worker until it ends
 * Printed per design (medians of ROUNDS): how long the routine took, how
 * much of that time the observer ran, and how long after the routine ended
 * the last waiter returned.  Then what the third design, a ticker that
 * reads every worker's thread CPU clock to notice one blocked in the
 * kernel, would pay per worker and tick.
 *
 * usage: blocked_wait [ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xfiber.h"

#define WAITERS 4

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_once_t once;
static bool masked;
static atomic_bool stop;
static atomic_uint_fast64_t observed; /* observer's work units */
static uint64_t init_start, init_end, last_return, work_in_init;

/* CPU work that reads no clock through the vDSO, where preemption is
 * deferred (it is unsafe code): TSC ticks, calibrated once. */
static double tsc_per_ns;

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static void spin_ns(uint64_t ns)
{
	for (uint64_t end = rdtsc() + (uint64_t)((double)ns * tsc_per_ns); rdtsc() < end;)
		;
}

static void calibrate(void)
{
	uint64_t t0 = now_ns(), c0 = rdtsc();

	while (now_ns() - t0 < 20 * 1000 * 1000)
		;
	tsc_per_ns = (double)(rdtsc() - c0) / (double)(now_ns() - t0);
}

static void routine(void)
{
	uint64_t w0;

	if (masked)
		xf_preempt_disable();
	w0 = atomic_load(&observed);
	init_start = now_ns();
	spin_ns(3 * 1000 * 1000);
	init_end = now_ns();
	work_in_init = atomic_load(&observed) - w0;
	if (masked)
		xf_preempt_enable();
}

static void *caller(void *arg)
{
	uint64_t t;

	pthread_once(&once, routine);
	t = now_ns();
	if (t > last_return)
		last_return = t;
	return arg;
}

/* Work units: one per ~1 us of CPU, counted as it goes. */
static void *observer(void *arg)
{
	while (!atomic_load(&stop)) {
		spin_ns(1000);
		atomic_fetch_add(&observed, 1);
	}
	return arg;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

static void run(bool mask, int rounds)
{
	double took[64], share[64], release[64];

	masked = mask;
	for (int r = 0; r < rounds; r++) {
		xf_attr on0 = {.pinned = true, .worker = 0};
		xf_fiber *f[WAITERS + 1], *obs;

		once = (pthread_once_t)PTHREAD_ONCE_INIT;
		last_return = 0;
		atomic_store(&stop, false);
		xf_spawn(&obs, observer, NULL, &on0);
		xf_yield();
		for (int i = 0; i <= WAITERS; i++)
			xf_spawn(&f[i], caller, NULL, &on0);
		for (int i = 0; i <= WAITERS; i++)
			xf_join(f[i], NULL);
		atomic_store(&stop, true);
		xf_join(obs, NULL);
		took[r] = (double)(init_end - init_start) / 1e6;
		share[r] = (double)work_in_init / ((double)(init_end - init_start) / 1e3);
		release[r] = (double)(last_return - init_end) / 1e3;
	}
	printf("%-11s routine %.2f ms, observer ran %3.0f%% of it, last waiter back %.0f us "
	       "after it\n",
	       mask ? "masked" : "switchable", median(took, rounds), 100 * median(share, rounds),
	       median(release, rounds));
}

static void *spin_thread(void *arg)
{
	while (!atomic_load(&stop))
		;
	return arg;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 9;
	pthread_t t;
	clockid_t clk;
	struct timespec ts;
	double best = 1e18;

	if (rounds < 1 || rounds > 64)
		rounds = 9;
	calibrate();
	if (xf_init(&(xf_config){.workers = 1, .slice_us = 1000}))
		return 1;
	run(false, rounds);
	run(true, rounds);
	xf_shutdown();

	atomic_store(&stop, false);
	pthread_create(&t, NULL, spin_thread, NULL);
	pthread_getcpuclockid(t, &clk);
	for (int r = 0; r < 7; r++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < 20000; i++)
			clock_gettime(clk, &ts);
		if ((double)(now_ns() - t0) / 20000 < best)
			best = (double)(now_ns() - t0) / 20000;
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	printf("cpu-clock   reading another thread's CPU clock: %.0f ns, per worker per tick\n",
	       best);
	return 0;
}
