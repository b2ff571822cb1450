/*
 * yield_ab.c - one round of bench/yield-ab.sh: the yield ping-pong of the
 * library it is linked with, and the minimal assembly switch of `xfiber
 * bench` (tools/bench/minswitch_x86_64_sysv_elf_gas.S) as its yardstick,
 * alternated `reps` times in one process.  Prints the medians of the
 * per-rep ratio, of the yield's ns per switch and of the yardstick's.
 *
 * Built against any revision's libxfiber.a, so it uses nothing but the
 * public API of the earliest revisions worth comparing: xf_init, xf_spawn,
 * xf_yield, xf_join, xf_shutdown.
 *
 * usage: yield_ab [REPS]   (environment: YIELD_AB_N, round trips per rep)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xfiber.h>

#define REPS_MAX 101

uint64_t xf_fb_minimal_switch_loop(uint64_t n, void *stack, size_t size, bool two_sites);

static uint64_t round_trips = 2000000;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Both fibers run this loop, so every xf_yield returns to the call site the
 * switch came from, as in `xfiber bench`'s fiber-yield rows. */
static __attribute__((noinline)) void *yield_loop(void *arg)
{
	const uint64_t n = round_trips;

	for (uint64_t i = 0; i < n; i++)
		xf_yield();
	return arg;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	static char stack[64 * 1024] __attribute__((aligned(64)));
	double ratio[REPS_MAX], yield_ns[REPS_MAX], minimal_ns[REPS_MAX];
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	const char *n = getenv("YIELD_AB_N");
	int err;

	if (reps < 1 || reps > REPS_MAX) {
		fprintf(stderr, "yield_ab: REPS must be 1..%d\n", REPS_MAX);
		return 2;
	}
	if (n && (round_trips = strtoull(n, NULL, 10)) == 0) {
		fprintf(stderr, "yield_ab: YIELD_AB_N must be a positive number\n");
		return 2;
	}
	/* One worker; slices long enough that the ticker never preempts. */
	err = xf_init(&(xf_config){.workers = 1, .slice_us = 100000});
	if (err) {
		fprintf(stderr, "yield_ab: xf_init: %s\n", strerror(err));
		return 1;
	}
	for (int i = 0; i < reps; i++) {
		xf_fiber *partner;
		double t0, t1, t2;

		err = xf_spawn(&partner, yield_loop, NULL, NULL);
		if (err) {
			fprintf(stderr, "yield_ab: xf_spawn: %s\n", strerror(err));
			return 1;
		}
		t0 = now_ns();
		yield_loop(NULL);
		xf_join(partner, NULL);
		t1 = now_ns();
		xf_fb_minimal_switch_loop(round_trips, stack, sizeof(stack), false);
		t2 = now_ns();
		yield_ns[i] = (t1 - t0) / (2.0 * (double)round_trips);
		minimal_ns[i] = (t2 - t1) / (2.0 * (double)round_trips);
		ratio[i] = yield_ns[i] / minimal_ns[i];
	}
	printf("%.3f %.2f %.2f\n", median(ratio, reps), median(yield_ns, reps),
	       median(minimal_ns, reps));
	return xf_shutdown();
}
