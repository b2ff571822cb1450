/*
 * stats.h - the statistics behind `xfiber bench`: summaries of runs and
 * Welch's t-test, with the Student t distribution computed here (regularized
 * incomplete beta) so the tool needs nothing beyond libm.
 */
#ifndef XF_TOOLS_BENCH_STATS_H
#define XF_TOOLS_BENCH_STATS_H

#include <stddef.h>

struct xf_bench_summary {
	size_t n;
	double mean;
	double stddev; /* sample standard deviation (n - 1); 0 when n < 2 */
	double min;
	double max;
	double median;
};

/* Summarizes v[0..n-1]; v is left untouched.  All zeros when n is 0. */
void xf_bench_summarize(const double *v, size_t n, struct xf_bench_summary *out);

struct xf_welch {
	double t;	/* (mean_b - mean_a) / standard error */
	double df;	/* Welch-Satterthwaite degrees of freedom */
	double p;	/* two-sided p-value; NaN when either side has n < 2 */
	double ci_low;	/* confidence interval of mean_b - mean_a */
	double ci_high; /* at the level given to xf_welch_test */
};

/* Welch's unequal-variance t-test of b against a; level is the confidence
 * level of the interval (e.g. 0.95).  Returns 0, or -1 when a test is not
 * possible (n < 2 on a side): then p and the interval are NaN. */
int xf_welch_test(const struct xf_bench_summary *a, const struct xf_bench_summary *b, double level,
		  struct xf_welch *out);

/* The regularized incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1. */
double xf_betainc(double a, double b, double x);

/* The CDF of Student's t distribution with df > 0 degrees of freedom. */
double xf_student_t_cdf(double t, double df);

/* The t with xf_student_t_cdf(t, df) == p, 0 < p < 1. */
double xf_student_t_quantile(double p, double df);

#endif
