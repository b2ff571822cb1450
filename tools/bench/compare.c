/*
 * compare.c - `xfiber bench compare A.json B.json`: every row the two
 * result files share, B against A, with Welch's t-test saying whether the
 * difference is beyond the run-to-run noise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/compare.h"
#include "bench/jsonread.h"
#include "bench/report.h"
#include "bench/stats.h"

/* The samples of a row as stats; false if it has none. */
static bool row_stats(const struct xf_jv *row, struct xf_bench_summary *st)
{
	const struct xf_jv *s = xf_jv_get(row, "samples");
	double *v;
	size_t n = 0;

	memset(st, 0, sizeof(*st));
	if (!s || s->type != XF_JV_ARRAY || !s->n)
		return false;
	v = calloc(s->n, sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < s->n; i++) {
		if (s->items[i].type == XF_JV_NUMBER)
			v[n++] = s->items[i].number;
	}
	xf_bench_summarize(v, n, st);
	free(v);
	return n > 0;
}

static const struct xf_jv *find_named(const struct xf_jv *array, const char *name)
{
	for (size_t i = 0; array && array->type == XF_JV_ARRAY && i < array->n; i++) {
		const char *n = xf_jv_str(&array->items[i], "name", NULL);
		if (n && !strcmp(n, name))
			return &array->items[i];
	}
	return NULL;
}

static struct xf_jv *load_results(const char *path, char *err, size_t err_size)
{
	struct xf_jv *doc = xf_jv_load(path, err, err_size);
	const struct xf_jv *w;
	const char *schema;

	if (!doc)
		return NULL;
	schema = xf_jv_str(doc, "schema", NULL);
	if (!schema || strcmp(schema, XF_BENCH_SCHEMA)) {
		snprintf(err, err_size, "%s is not xfiber bench output (schema %s, expected %s)",
			 path, schema ? schema : "missing", XF_BENCH_SCHEMA);
		xf_jv_free(doc);
		return NULL;
	}
	w = xf_jv_get(doc, "workloads");
	if (!w || w->type != XF_JV_ARRAY) {
		snprintf(err, err_size, "%s has no \"workloads\" array", path);
		xf_jv_free(doc);
		return NULL;
	}
	return doc;
}

static void describe(const char *label, const char *path, const struct xf_jv *doc)
{
	const struct xf_jv *x = xf_jv_get(doc, "xfiber"), *m = xf_jv_get(doc, "machine");

	printf("%s = %s: xfiber %s (commit %s), %s; %s, Linux %s\n", label, path,
	       xf_jv_str(x, "version", "?"), xf_jv_str(x, "commit", "?"),
	       xf_jv_str(doc, "date", "?"), xf_jv_str(m, "cpu_model", "?"),
	       xf_jv_str(m, "kernel", "?"));
}

/* "yes: B better", "no", or why a test is not possible. */
static const char *verdict(const struct xf_welch *t, bool ok, double alpha, double speedup)
{
	if (!ok)
		return "n/a: needs 2+ runs on each side";
	if (!(t->p < alpha))
		return "no";
	return speedup >= 100 ? "yes: B better" : "yes: B worse";
}

static void compare_row(const struct xf_jv *ra, const struct xf_jv *rb, bool higher_better,
			double alpha, int name_w)
{
	const char *name = xf_jv_str(ra, "name", "?");
	struct xf_bench_summary a, b;
	struct xf_welch t;
	bool have_a = row_stats(ra, &a), have_b = row_stats(rb, &b), ok;
	int dec;
	double sp;

	if (!have_a || !have_b) {
		printf("%*s | skipped in %s\n", name_w, name,
		       !have_a && !have_b ? "both"
		       : !have_a	  ? "A"
					  : "B");
		return;
	}
	ok = xf_welch_test(&a, &b, 1 - alpha, &t) == 0;
	sp = xf_bench_speedup(b.mean, a.mean, higher_better);
	dec = xf_bench_decimals(a.mean > b.mean ? a.mean : b.mean);
	printf("%*s | %12.*f | %10.*f | %12.*f | %10.*f | %8.2f | ", name_w, name, dec, a.mean, dec,
	       a.stddev, dec, b.mean, dec, b.stddev, sp);
	if (ok)
		printf("%8.4f | %+7.2f%% .. %+7.2f%% | ", t.p, 100 * t.ci_low / a.mean,
		       100 * t.ci_high / a.mean);
	else
		printf("%8s | %20s | ", "n/a", "n/a");
	printf("%s\n", verdict(&t, ok, alpha, sp));
}

static void compare_workload(const struct xf_jv *wa, const struct xf_jv *wb, double alpha)
{
	const struct xf_jv *ra = xf_jv_get(wa, "rows"), *rb = xf_jv_get(wb, "rows");
	const struct xf_jv *hb = xf_jv_get(wa, "higher_is_better");
	const bool higher = hb && hb->type == XF_JV_BOOL && hb->boolean;
	char ci_head[32];
	int name_w = 3, width;

	for (size_t i = 0; ra && i < ra->n; i++) {
		int n = (int)strlen(xf_jv_str(&ra->items[i], "name", "?"));
		name_w = n > name_w ? n : name_w;
	}
	snprintf(ci_head, sizeof(ci_head), "%.0f%% CI of B-A", 100 * (1 - alpha));
	printf("\n%s [%s, %s is better]\n", xf_jv_str(wa, "name", "?"), xf_jv_str(wa, "unit", "?"),
	       higher ? "higher" : "lower");
	width = printf("%*s | %12s | %10s | %12s | %10s | %8s | %8s | %20s | beyond noise\n",
		       name_w, "row", "A mean", "A stddev", "B mean", "B stddev", "B vs A %",
		       "p-value", ci_head);
	for (int i = 0; i < width - 1; i++)
		putchar('=');
	putchar('\n');
	for (size_t i = 0; ra && ra->type == XF_JV_ARRAY && i < ra->n; i++) {
		const char *name = xf_jv_str(&ra->items[i], "name", "?");
		const struct xf_jv *other = find_named(rb, name);
		if (other)
			compare_row(&ra->items[i], other, higher, alpha, name_w);
		else
			printf("%*s | only in A\n", name_w, name);
	}
	for (size_t i = 0; rb && rb->type == XF_JV_ARRAY && i < rb->n; i++) {
		const char *name = xf_jv_str(&rb->items[i], "name", "?");
		if (!find_named(ra, name))
			printf("%*s | only in B\n", name_w, name);
	}
}

int xf_bench_compare(const char *path_a, const char *path_b, double alpha, char *err,
		     size_t err_size)
{
	struct xf_jv *a = load_results(path_a, err, err_size), *b;
	const struct xf_jv *wa, *wb;

	if (!a)
		return -1;
	b = load_results(path_b, err, err_size);
	if (!b) {
		xf_jv_free(a);
		return -1;
	}
	describe("A", path_a, a);
	describe("B", path_b, b);
	printf("B vs A: %%speedup, 100%% = no change, above 100%% = B is better; Welch's t-test, "
	       "two-sided: beyond noise when p < %g\n",
	       alpha);
	wa = xf_jv_get(a, "workloads");
	wb = xf_jv_get(b, "workloads");
	for (size_t i = 0; i < wa->n; i++) {
		const char *name = xf_jv_str(&wa->items[i], "name", "?");
		const struct xf_jv *other = find_named(wb, name);
		if (other)
			compare_workload(&wa->items[i], other, alpha);
		else
			printf("\n%s: only in A\n", name);
	}
	for (size_t i = 0; i < wb->n; i++) {
		const char *name = xf_jv_str(&wb->items[i], "name", "?");
		if (!find_named(wa, name))
			printf("\n%s: only in B\n", name);
	}
	xf_jv_free(a);
	xf_jv_free(b);
	return 0;
}
