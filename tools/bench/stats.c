/* stats.c - run summaries, Welch's t-test and the t distribution it needs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "common/tsc.h"

void xf_bench_summarize(const double *v, size_t n, struct xf_bench_summary *out)
{
	double sum = 0, ss = 0;
	double *sorted;

	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	out->n = n;
	out->min = out->max = v[0];
	for (size_t i = 0; i < n; i++) {
		sum += v[i];
		out->min = v[i] < out->min ? v[i] : out->min;
		out->max = v[i] > out->max ? v[i] : out->max;
	}
	out->mean = sum / (double)n;
	/* Two passes: the one-pass formula loses digits on large, close values. */
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - out->mean) * (v[i] - out->mean);
	out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	sorted = malloc(n * sizeof(*sorted));
	if (sorted) {
		memcpy(sorted, v, n * sizeof(*sorted));
		out->median = xf_median(sorted, n);
		free(sorted);
	} else {
		out->median = NAN;
	}
}

/*
 * The continued fraction for I_x(a, b) (Abramowitz & Stegun 26.5.8),
 * evaluated with the modified Lentz method.  It converges quickly for
 * x < (a + 1) / (a + b + 2); the caller uses the symmetry
 * I_x(a, b) = 1 - I_{1-x}(b, a) for the other side.
 */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1);
	double h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 1000; m++) {
		double m2 = 2.0 * m;
		/* Even step d_{2m}, then odd step d_{2m+1}. */
		double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));

		for (int step = 0; step < 2; step++) {
			d = 1 + num * d;
			c = 1 + num / c;
			if (fabs(d) < tiny)
				d = tiny;
			if (fabs(c) < tiny)
				c = tiny;
			d = 1 / d;
			h *= d * c;
			num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		}
		if (fabs(d * c - 1) < 1e-15)
			break;
	}
	return h;
}

double xf_betainc(double a, double b, double x)
{
	double front;

	if (!(a > 0) || !(b > 0) || isnan(x))
		return NAN;
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	/* x^a (1-x)^b / B(a, b), in logarithms to survive large a and b. */
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * betacf(a, b, x) / a;
	return 1 - front * betacf(b, a, 1 - x) / b;
}

double xf_student_t_cdf(double t, double df)
{
	double tail;

	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	/* P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2). */
	tail = 0.5 * xf_betainc(df / 2, 0.5, df / (df + t * t));
	return t > 0 ? 1 - tail : tail;
}

double xf_student_t_quantile(double p, double df)
{
	double lo = -1, hi = 1;

	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	while (xf_student_t_cdf(lo, df) > p && lo > -1e300)
		lo *= 2;
	while (xf_student_t_cdf(hi, df) < p && hi < 1e300)
		hi *= 2;
	/* The CDF is monotonic: bisect until the bracket stops shrinking. */
	for (int i = 0; i < 400; i++) {
		double mid = lo + (hi - lo) / 2;
		if (mid == lo || mid == hi)
			break;
		if (xf_student_t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return lo + (hi - lo) / 2;
}

int xf_welch_test(const struct xf_bench_summary *a, const struct xf_bench_summary *b, double level,
		  struct xf_welch *out)
{
	double va, vb, se2, diff;

	out->t = out->df = out->p = out->ci_low = out->ci_high = NAN;
	if (a->n < 2 || b->n < 2)
		return -1;
	va = a->stddev * a->stddev / (double)a->n;
	vb = b->stddev * b->stddev / (double)b->n;
	se2 = va + vb;
	diff = b->mean - a->mean;
	if (se2 == 0) {
		/* No spread at all: any difference is certain, none is none. */
		out->t = diff == 0 ? 0 : copysign(INFINITY, diff);
		out->df = (double)(a->n + b->n - 2);
		out->p = diff == 0 ? 1 : 0;
		out->ci_low = out->ci_high = diff;
		return 0;
	}
	out->t = diff / sqrt(se2);
	out->df = se2 * se2 / (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
	out->p = 2 * xf_student_t_cdf(-fabs(out->t), out->df);
	if (out->p > 1)
		out->p = 1;
	if (level > 0 && level < 1) {
		double q = xf_student_t_quantile(0.5 + level / 2, out->df);
		out->ci_low = diff - q * sqrt(se2);
		out->ci_high = diff + q * sqrt(se2);
	}
	return 0;
}
