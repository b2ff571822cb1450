/*
 * test_compare.c - the JSON results and `xfiber bench compare`:
 *   schema     a short run's JSON has every documented field, and its stats
 *              agree with its raw samples
 *   roundtrip  two short runs compare row by row; a file against itself is
 *              100% with p = 1, never "beyond noise"
 *   known      files made here with known samples give the known Welch test
 *              (SciPy: t 2.4554, p 0.021378, 95% CI of B-A [0.3492, 3.9841])
 *   plot       `xfiber bench plot` makes a PNG (skipped without matplotlib)
 *
 * usage: test_compare PATH-TO-xfiber CASE
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/jsonread.h"
#include "run.h"
#include "testlib.h"

static struct run_result r;

/* A short sig run into a new file; its name in path. */
static void short_run(const char *xfiber, char *path, size_t size)
{
	char opt[300];

	temp_path(path, size, ".json");
	snprintf(opt, sizeof(opt), "--json=%s", path);
	char *args[] = {(char *)xfiber,	    "bench", "sig", "--quick", "--runs=3",
			"--state=none,avx", opt,     NULL};
	run_cmd(args, NULL, 0, 50, &r);
	if (r.status)
		xf_test_fail("xfiber bench sig: status %d: %s", r.status, r.err);
}

static void compare(const char *xfiber, const char *a, const char *b)
{
	char *args[] = {(char *)xfiber, "bench", "compare", (char *)a, (char *)b, NULL};

	run_cmd(args, NULL, 0, 20, &r);
	if (r.status)
		xf_test_fail("compare: status %d: %s", r.status, r.err);
	printf("%s", r.out);
}

/* The line of the compare table for row (names are right-aligned), or fail. */
static const char *line_of(const char *row)
{
	static char line[1024];
	const size_t len = strlen(row);

	for (const char *p = r.out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
		const char *name = p + strspn(p, " ");
		if (!strncmp(name, row, len) && !strncmp(name + len, " | ", 3)) {
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
			return line;
		}
	}
	xf_test_fail("no line for row %s", row);
}

static const struct xf_jv *need(const struct xf_jv *v, const char *key, enum xf_jv_type type)
{
	const struct xf_jv *m = xf_jv_get(v, key);

	if (!m || m->type != type)
		xf_test_fail("JSON member \"%s\" missing or of the wrong type", key);
	return m;
}

static void test_schema(const char *xfiber)
{
	char path[256], err[256];
	struct xf_jv *doc;
	const struct xf_jv *w, *row, *samples;
	double sum = 0;

	short_run(xfiber, path, sizeof(path));
	doc = xf_jv_load(path, err, sizeof(err));
	unlink(path);
	if (!doc)
		xf_test_fail("%s", err);
	CHECK(!strcmp(need(doc, "schema", XF_JV_STRING)->string, "xfiber-bench/1"));
	need(doc, "date", XF_JV_STRING);
	need(need(doc, "xfiber", XF_JV_OBJECT), "version", XF_JV_STRING);
	need(need(doc, "xfiber", XF_JV_OBJECT), "commit", XF_JV_STRING);
	need(need(doc, "machine", XF_JV_OBJECT), "cpu_model", XF_JV_STRING);
	need(need(doc, "machine", XF_JV_OBJECT), "kernel", XF_JV_STRING);
	CHECK(!strncmp(need(need(doc, "machine", XF_JV_OBJECT), "xcr0", XF_JV_STRING)->string, "0x",
		       2));
	CHECK(need(need(doc, "settings", XF_JV_OBJECT), "runs", XF_JV_NUMBER)->number == 3);
	/* The subcommand's arguments: bench sig --quick --runs=3 --state=none,avx --json=... */
	CHECK(need(need(doc, "settings", XF_JV_OBJECT), "argv", XF_JV_ARRAY)->n == 6);
	CHECK(
	    !strcmp(need(need(doc, "settings", XF_JV_OBJECT), "argv", XF_JV_ARRAY)->items[0].string,
		    "bench"));
	w = &need(doc, "workloads", XF_JV_ARRAY)->items[0];
	CHECK(!strcmp(need(w, "name", XF_JV_STRING)->string, "sig"));
	CHECK(!strcmp(need(w, "unit", XF_JV_STRING)->string, "ns"));
	CHECK(need(w, "higher_is_better", XF_JV_BOOL)->boolean == false);
	CHECK(!strcmp(need(w, "baseline", XF_JV_STRING)->string, "catch/none"));
	CHECK(need(w, "rows", XF_JV_ARRAY)->n == 2);
	row = &need(w, "rows", XF_JV_ARRAY)->items[1];
	CHECK(!strcmp(need(row, "name", XF_JV_STRING)->string, "catch/avx"));
	CHECK(!strcmp(need(row, "state", XF_JV_STRING)->string, "avx"));
	CHECK(!strcmp(need(row, "kind", XF_JV_STRING)->string, "kernel"));
	need(row, "variant", XF_JV_STRING);
	need(row, "pinning", XF_JV_STRING);
	need(row, "mode", XF_JV_STRING);
	need(row, "note", XF_JV_STRING);
	CHECK(need(row, "cpus", XF_JV_ARRAY)->n == 1);
	CHECK(need(row, "iterations", XF_JV_NUMBER)->number >= 1);
	CHECK(need(row, "skipped", XF_JV_NULL));
	samples = need(row, "samples", XF_JV_ARRAY);
	CHECK(samples->n == 3 && need(row, "elapsed_ns", XF_JV_ARRAY)->n == 3);
	for (size_t i = 0; i < 3; i++)
		sum += samples->items[i].number;
	CHECK(fabs(need(need(row, "stats", XF_JV_OBJECT), "mean", XF_JV_NUMBER)->number - sum / 3) <
	      1e-9 * fabs(sum));
	CHECK(need(need(row, "stats", XF_JV_OBJECT), "n", XF_JV_NUMBER)->number == 3);
	need(need(row, "extra", XF_JV_OBJECT), "frame_bytes", XF_JV_NUMBER);
	/* Every run's extras, one per sample, the last equal to "extra". */
	CHECK(need(need(row, "extra_runs", XF_JV_OBJECT), "frame_bytes", XF_JV_ARRAY)->n == 3);
	CHECK(need(need(row, "extra_runs", XF_JV_OBJECT), "frame_bytes", XF_JV_ARRAY)
		  ->items[2]
		  .number ==
	      need(need(row, "extra", XF_JV_OBJECT), "frame_bytes", XF_JV_NUMBER)->number);
	xf_jv_free(doc);
}

static void test_roundtrip(const char *xfiber)
{
	char a[256], b[256];

	short_run(xfiber, a, sizeof(a));
	short_run(xfiber, b, sizeof(b));
	compare(xfiber, a, b);
	CHECK(strstr(r.out, "A = ") && strstr(r.out, "B = ") && strstr(r.out, "p-value"));
	CHECK(strstr(line_of("catch/none"), "%") && strstr(line_of("catch/avx"), "%"));
	compare(xfiber, a, a);
	for (int i = 0; i < 2; i++) {
		const char *l = line_of(i ? "catch/avx" : "catch/none");
		if (!strstr(l, " 100.00 |") || !strstr(l, " 1.0000 |") || !strstr(l, "| no"))
			xf_test_fail("A against itself: %s", l);
	}
	unlink(a);
	unlink(b);
}

static void write_known(const char *path, const double *v, int n, const char *extra_row)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	fprintf(f, "{\"schema\": \"xfiber-bench/1\", \"date\": \"now\", \"workloads\": [\n"
		   " {\"name\": \"synthetic\", \"unit\": \"ns\", \"higher_is_better\": false,\n"
		   "  \"rows\": [{\"name\": \"r\", \"samples\": [");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%.17g", i ? ", " : "", v[i]);
	fprintf(f, "]}%s]}]}\n", extra_row);
	fclose(f);
}

static void test_known(const char *xfiber)
{
	/* Welch's example from Wikipedia (also in test_stats.c). */
	const double a[] = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
			    21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
	const double b[] = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
			    24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
	char pa[256], pb[256], want[64];
	double ma = 0, mb = 0;
	const char *l;

	for (int i = 0; i < 15; i++) {
		ma += a[i] / 15;
		mb += b[i] / 15;
	}
	temp_path(pa, sizeof(pa), ".json");
	temp_path(pb, sizeof(pb), ".json");
	write_known(pa, a, 15, "");
	write_known(pb, b, 15, ", {\"name\": \"new\", \"samples\": [1, 2]}");
	compare(xfiber, pa, pb);
	l = line_of("r");
	/* Lower is better and B is higher: A/B, below 100%, beyond noise at p 0.0214. */
	snprintf(want, sizeof(want), "| %8.2f |", 100 * ma / mb);
	if (!strstr(l, want) || !strstr(l, "0.0214") || !strstr(l, "yes: B worse"))
		xf_test_fail("expected %s, p 0.0214, B worse: %s", want, l);
	/* The 95%% interval of B-A, as a share of A's mean: [0.3492, 3.9841] / 20.82. */
	if (!strstr(l, "+1.68%") || !strstr(l, "+19.14%"))
		xf_test_fail("expected the interval +1.68%% .. +19.14%%: %s", l);
	CHECK(strstr(line_of("new"), "only in B"));
	unlink(pa);
	unlink(pb);
}

static void test_plot(const char *xfiber)
{
	char json[256], png[256], head[8] = {0};
	FILE *f;

	short_run(xfiber, json, sizeof(json));
	temp_path(png, sizeof(png), ".png");
	char *args[] = {(char *)xfiber, "bench", "plot", json, png, NULL};
	run_cmd(args, NULL, 0, 50, &r);
	unlink(json);
	if (r.status && strstr(r.err, "needs Python 3 with matplotlib")) {
		unlink(png);
		xf_test_skip("%s", r.err);
	}
	if (r.status)
		xf_test_fail("plot: status %d: %s", r.status, r.err);
	f = fopen(png, "rb");
	CHECK(f && fread(head, 1, 8, f) == 8);
	fclose(f);
	unlink(png);
	CHECK(!memcmp(head, "\x89PNG\r\n\x1a\n", 8));
}

int main(int argc, char **argv)
{
	if (argc != 3)
		xf_test_fail("usage: test_compare PATH-TO-xfiber schema|roundtrip|known|plot");
	if (!strcmp(argv[2], "schema"))
		test_schema(argv[1]);
	else if (!strcmp(argv[2], "roundtrip"))
		test_roundtrip(argv[1]);
	else if (!strcmp(argv[2], "known"))
		test_known(argv[1]);
	else if (!strcmp(argv[2], "plot"))
		test_plot(argv[1]);
	else
		xf_test_fail("no case '%s'", argv[2]);
	return 0;
}
