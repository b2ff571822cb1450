/* tsc.c - TSC calibration and the median used by every measurement. */
#include <stdlib.h>
#include <time.h>

#include "common/tsc.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double xf_tsc_ns_per_tick(void)
{
	static double ns_per_tick;

	if (ns_per_tick == 0) {
		/* 20 ms is long enough for 0.01% here, short enough not to be noticed. */
		double t0 = now_ns();
		uint64_t c0 = xf_tsc_read();
		while (now_ns() - t0 < 20e6)
			;
		double t1 = now_ns();
		uint64_t c1 = xf_tsc_read();
		ns_per_tick = (t1 - t0) / (double)(c1 - c0);
	}
	return ns_per_tick;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double xf_quantile(double *v, size_t n, double q)
{
	double pos, frac;
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = q * (double)(n - 1); /* linear interpolation between order statistics */
	i = (size_t)pos;
	frac = pos - (double)i;
	return i + 1 < n ? v[i] + frac * (v[i + 1] - v[i]) : v[n - 1];
}

double xf_median(double *v, size_t n)
{
	return xf_quantile(v, n, 0.5);
}
