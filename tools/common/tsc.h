/* tsc.h - cheap timestamps for measurement loops: rdtsc, converted to ns. */
#ifndef XF_TOOLS_COMMON_TSC_H
#define XF_TOOLS_COMMON_TSC_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t xf_tsc_read(void)
{
	uint32_t lo, hi;

	/* lfence keeps earlier instructions from drifting past the read. */
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Nanoseconds per TSC tick, calibrated once against CLOCK_MONOTONIC. */
double xf_tsc_ns_per_tick(void);

/* The q-quantile (0..1) of n doubles, interpolated between order
 * statistics; sorts v in place. */
double xf_quantile(double *v, size_t n, double q);
/* Median of n doubles (sorts v in place). */
double xf_median(double *v, size_t n);

#endif
