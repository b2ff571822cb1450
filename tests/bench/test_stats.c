/*
 * test_stats.c - the statistics of `xfiber bench` against known answers:
 * summaries by hand, the incomplete beta and t distribution against closed
 * forms and SciPy 1.x (scipy.special.betainc, scipy.stats.t), and Welch's
 * test against scipy.stats.ttest_ind(b, a, equal_var=False).
 */
#include <math.h>

#include "bench/stats.h"
#include "common/tsc.h"
#include "testlib.h"

#define CLOSE(got, want, tol)                                                                      \
	do {                                                                                       \
		double g_ = (got), w_ = (want);                                                    \
		if (!(fabs(g_ - w_) <= (tol)))                                                     \
			xf_test_fail("%s = %.15g, expected %.15g (tolerance %g)", #got, g_, w_,    \
				     (double)(tol));                                               \
	} while (0)

static void test_summary(void)
{
	const double v[] = {9, 2, 4, 4, 5, 4, 7, 5};
	const double odd[] = {3, 1, 2};
	const double one[] = {42};
	double copy[8];
	struct xf_bench_summary s;

	for (int i = 0; i < 8; i++)
		copy[i] = v[i];
	xf_bench_summarize(copy, 8, &s);
	CHECK(s.n == 8);
	CLOSE(s.mean, 5, 1e-12);
	CLOSE(s.stddev, sqrt(32.0 / 7.0), 1e-12); /* sample (n - 1) deviation */
	CLOSE(s.median, 4.5, 0);
	CLOSE(s.min, 2, 0);
	CLOSE(s.max, 9, 0);
	for (int i = 0; i < 8; i++)
		CHECK(copy[i] == v[i]); /* the input is left as it was */
	xf_bench_summarize(odd, 3, &s);
	CLOSE(s.median, 2, 0);
	CLOSE(s.stddev, 1, 1e-12);
	xf_bench_summarize(one, 1, &s);
	CLOSE(s.mean, 42, 0);
	CLOSE(s.stddev, 0, 0);
	xf_bench_summarize(one, 0, &s);
	CHECK(s.n == 0 && s.mean == 0);
}

/* Quantiles as numpy.quantile(v, q) (linear interpolation) computes them. */
static void test_quantile(void)
{
	double v[] = {9, 2, 4, 4, 5, 4, 7, 5}, one[] = {42};

	CLOSE(xf_quantile(v, 8, 0.25), 4, 1e-12);
	CLOSE(xf_quantile(v, 8, 0.5), 4.5, 1e-12);
	CLOSE(xf_quantile(v, 8, 0.75), 5.5, 1e-12);
	CLOSE(xf_quantile(v, 8, 0.9), 7.6, 1e-12);
	CLOSE(xf_quantile(v, 8, 0), 2, 0);
	CLOSE(xf_quantile(v, 8, 1), 9, 0);
	CLOSE(xf_median(v, 8), 4.5, 0);
	CLOSE(xf_quantile(one, 1, 0.25), 42, 0);
	CLOSE(xf_quantile(one, 0, 0.5), 0, 0);
}

static void test_betainc(void)
{
	for (double x = 0; x <= 1; x += 0.125) {
		CLOSE(xf_betainc(1, 1, x), x, 1e-14);
		CLOSE(xf_betainc(2, 1, x), x * x, 1e-14);
		CLOSE(xf_betainc(1, 2, x), 1 - (1 - x) * (1 - x), 1e-14);
	}
	CLOSE(xf_betainc(3.5, 3.5, 0.5), 0.5, 1e-14);
	CLOSE(xf_betainc(2.5, 0.5, 0.3), 0.018927124071945658, 1e-13);
	CLOSE(xf_betainc(10, 20, 0.4), 0.7853183897628262, 1e-13);
	CLOSE(xf_betainc(0.5, 0.5, 0.9), 0.7951672353008665, 1e-13);
	CHECK(isnan(xf_betainc(0, 1, 0.5)));
}

static void test_t_distribution(void)
{
	const double pi = 3.14159265358979323846;

	for (double t = -30; t <= 30; t += 0.75) {
		/* df = 1 is Cauchy; df = 2 has a closed form too. */
		CLOSE(xf_student_t_cdf(t, 1), 0.5 + atan(t) / pi, 1e-13);
		CLOSE(xf_student_t_cdf(t, 2), 0.5 + t / (2 * sqrt(2 + t * t)), 1e-13);
	}
	CLOSE(xf_student_t_cdf(0, 7.3), 0.5, 1e-15);
	CLOSE(xf_student_t_cdf(-2.0, 3.7), 0.06090860095261699, 1e-12);
	CLOSE(xf_student_t_cdf(1.959963984540054, 1e7), 0.975, 1e-6); /* the normal limit */
	CLOSE(xf_student_t_quantile(0.975, 10), 2.228138851986274, 1e-9);
	CLOSE(xf_student_t_quantile(0.975, 1), 12.706204736174694, 1e-8);
	CLOSE(xf_student_t_quantile(0.01, 4.5), -3.5270508906260924, 1e-9);
}

static void test_welch(void)
{
	/* The example of Welch's test on Wikipedia; B against A. */
	const double a[] = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
			    21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
	const double b[] = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
			    24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
	const double a2[] = {10.1, 9.8, 10.3, 10.0};
	const double b2[] = {10.9, 11.4, 10.7, 11.8, 11.1, 10.6};
	const double same[] = {5, 5, 5};
	const double other[] = {6, 6, 6};
	struct xf_bench_summary sa, sb;
	struct xf_welch w;

	xf_bench_summarize(a, 15, &sa);
	xf_bench_summarize(b, 15, &sb);
	CHECK(xf_welch_test(&sa, &sb, 0.95, &w) == 0);
	CLOSE(w.t, 2.455356398286006, 1e-12);
	CLOSE(w.df, 24.988529290231416, 1e-10);
	CLOSE(w.p, 0.021378001462866992, 1e-10);
	CLOSE(w.ci_low, 0.3492370661924069, 1e-8);
	CLOSE(w.ci_high, 3.984096267140929, 1e-8);

	xf_bench_summarize(a2, 4, &sa);
	xf_bench_summarize(b2, 6, &sb);
	CHECK(xf_welch_test(&sa, &sb, 0.95, &w) == 0);
	CLOSE(w.t, 4.865177359451166, 1e-12);
	CLOSE(w.p, 0.0015441238901348533, 1e-10);

	/* No spread: equal means are certainly equal, different ones certainly not. */
	xf_bench_summarize(same, 3, &sa);
	CHECK(xf_welch_test(&sa, &sa, 0.95, &w) == 0 && w.p == 1);
	xf_bench_summarize(other, 3, &sb);
	CHECK(xf_welch_test(&sa, &sb, 0.95, &w) == 0 && w.p == 0);
	/* One run on a side: no test, said as NaN. */
	xf_bench_summarize(same, 1, &sa);
	CHECK(xf_welch_test(&sa, &sb, 0.95, &w) == -1 && isnan(w.p));
}

int main(void)
{
	test_summary();
	test_quantile();
	test_betainc();
	test_t_distribution();
	test_welch();
	printf("bench statistics: all checks passed\n");
	return 0;
}
