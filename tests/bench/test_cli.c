/*
 * test_cli.c - `xfiber bench` refuses bad input with one clear line on
 * stderr and a non-zero exit, fast, and never starts measuring first.
 *
 * usage: test_cli PATH-TO-xfiber CASE   (CASE: see the table below, or "help")
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "testlib.h"

#define MAX_ARGS 12

struct cli_case {
	const char *name;
	const char *args[MAX_ARGS]; /* after "xfiber bench"; "@BAD" / "@MISSING" are files */
	const char *expect;	    /* a piece of the one line on stderr */
	int one_cpu;		    /* run with a single CPU allowed */
	const char *env;	    /* one extra NAME=value, or NULL */
};

static const struct cli_case cases[] = {
    {.name = "unknown_workload", .args = {"nosuch"}, .expect = "unknown workload 'nosuch'"},
    {.name = "unknown_option", .args = {"ctx", "--bogus"}, .expect = "unknown option '--bogus'"},
    {.name = "missing_value", .args = {"ctx", "--runs"}, .expect = "--runs wants a value"},
    {.name = "flag_with_value",
     .args = {"ctx", "--quick=yes"},
     .expect = "--quick takes no value, not 'yes'"},
    {.name = "runs_zero",
     .args = {"ctx", "--runs=0"},
     .expect = "--runs wants a whole number from 1"},
    {.name = "runs_not_a_number", .args = {"sig", "--runs=5x"}, .expect = "not '5x'"},
    {.name = "time_negative", .args = {"sig", "--time=-1"}, .expect = "--time wants seconds"},
    {.name = "unknown_state",
     .args = {"ctx", "--state=none,avx1024"},
     .expect = "unknown value 'avx1024'"},
    {.name = "unknown_test", .args = {"ctx", "--test=pipe,spin"}, .expect = "unknown value 'spin'"},
    {.name = "unknown_peer", .args = {"ctx", "--peers=java"}, .expect = "unknown value 'java'"},
    {.name = "option_not_for_workload",
     .args = {"xsave", "--groups=3"},
     .expect = "--groups does not apply to xsave"},
    {.name = "sig_two_cpus", .args = {"sig", "--cpus=2"}, .expect = "sig runs in one thread"},
    {.name = "too_few_cpus",
     .args = {"ctx", "--cpus=2"},
     .expect = "needs two CPUs, but this process may run on only 1",
     .one_cpu = 1},
    {.name = "cpu_not_allowed", .args = {"ctx", "--cpu=1023"}, .expect = "may not run on CPU 1023"},
    {.name = "too_many_tasks",
     .args = {"messaging", "--groups=1000", "--fds=64"},
     .expect = "tasks; at most"},
    {.name = "unknown_baseline",
     .args = {"sig", "--quick", "--baseline=catch/avx4096"},
     .expect = "no such row"},
    {.name = "rows_no_match",
     .args = {"xsave", "--quick", "--rows=nosuch*,nor-this"},
     .expect = "--rows=nosuch*,nor-this: no row of these workloads matches"},
    {.name = "rows_empty", .args = {"xsave", "--rows=,"}, .expect = "--rows wants row names"},
    {.name = "compare_one_file",
     .args = {"compare", "@BAD"},
     .expect = "compare wants two result files"},
    {.name = "compare_missing",
     .args = {"compare", "@MISSING", "@MISSING"},
     .expect = "cannot open"},
    {.name = "compare_not_json",
     .args = {"compare", "@BAD", "@BAD"},
     .expect = "is not valid JSON"},
    {.name = "json_unwritable",
     .args = {"sig", "--quick", "--json=/nonexistent/dir/x.json"},
     .expect = "--json: cannot write /nonexistent/dir/x.json"},
    {.name = "plot_unwritable",
     .args = {"sig", "--quick", "--plot=/nonexistent/dir/x.png"},
     .expect = "--plot: cannot write /nonexistent/dir/x.png"},
    {.name = "alpha_range",
     .args = {"compare", "@BAD", "@BAD", "--alpha=2"},
     .expect = "--alpha wants a significance level"},
    {.name = "plot_no_python",
     .args = {"sig", "--quick", "--plot=x.png"},
     .expect = "needs Python 3 with matplotlib",
     .env = "XFIBER_PYTHON=/nonexistent/python3"},
};

static int has_amx(void)
{
	unsigned lo, hi;

	/* XCR0 bits 17 and 18: the OS enabled AMX tiles. */
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (lo & 0x60000) == 0x60000;
}

static int allowed_cpus(void)
{
	cpu_set_t set;

	sched_getaffinity(0, sizeof(set), &set);
	return CPU_COUNT(&set);
}

static void expect_refusal(const char *xfiber, const char *const *args, const char *expect,
			   int one_cpu, const char *env)
{
	char bad[256], missing[300];
	char *argv[MAX_ARGS + 3] = {(char *)xfiber, "bench"};
	char *envv[2] = {(char *)env, NULL};
	static struct run_result r;
	int n = 2;
	FILE *f;

	temp_path(bad, sizeof(bad), ".json");
	f = fopen(bad, "w");
	CHECK(f);
	fputs("{\"schema\": \"xfiber-bench/1\", \"workloads\": [ oops", f);
	fclose(f);
	snprintf(missing, sizeof(missing), "%s.missing", bad);
	for (int i = 0; i < MAX_ARGS && args[i]; i++)
		argv[n++] = !strcmp(args[i], "@BAD")	   ? bad
			    : !strcmp(args[i], "@MISSING") ? missing
							   : (char *)args[i];
	argv[n] = NULL;
	run_cmd(argv, env ? envv : NULL, one_cpu, 20, &r);
	unlink(bad);
	if (r.status == 0)
		xf_test_fail("exit status 0 for bad input; stderr: %s", r.err);
	if (r.status < 0)
		xf_test_fail("crashed on bad input");
	if (count_lines(r.err) != 1)
		xf_test_fail("expected one line on stderr, got %d:\n%s", count_lines(r.err), r.err);
	if (strncmp(r.err, "xfiber bench: ", 14) || !strstr(r.err, expect))
		xf_test_fail("stderr '%s' lacks '%s'", r.err, expect);
	if (r.out[0])
		xf_test_fail("printed on stdout before refusing: %s", r.out);
	printf("refused as expected (status %d): %s", r.status, r.err);
}

int main(int argc, char **argv)
{
	static struct run_result r;

	if (argc != 3)
		xf_test_fail("usage: test_cli PATH-TO-xfiber CASE");
	if (!strcmp(argv[2], "help")) {
		char *args[] = {argv[1], "bench", "--help", NULL};
		run_cmd(args, NULL, 0, 20, &r);
		CHECK(r.status == 0);
		CHECK(strstr(r.out, "usage: xfiber bench") && strstr(r.out, "messaging"));
		return 0;
	}
	if (!strcmp(argv[2], "rows_kept")) {
		/* The table holds the rows named, every one of them, and no other;
		 * a workload left without rows is not run at all. */
		char *args[] = {argv[1], "bench",   "xsave",
				"sig",	 "--quick", "--rows=xsavec/*,xrstor/init",
				NULL};
		int rows = 0;

		run_cmd(args, NULL, 0, 60, &r);
		CHECK(r.status == 0);
		for (const char *l = r.out; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			char name[64];

			if (sscanf(l, " %63[^ |] |", name) != 1 || !strchr(name, '/'))
				continue;
			if (strncmp(name, "xsavec/", 7) && strcmp(name, "xrstor/init"))
				xf_test_fail("row %s was not asked for:\n%s", name, r.out);
			rows++;
		}
		CHECK(rows >= 2); /* xsavec/init and xrstor/init exist everywhere */
		CHECK(strstr(r.out, "xrstor/init") && strstr(r.out, "xsavec/init"));
		CHECK(!strstr(r.out, "sig:"));
		return 0;
	}
	if (!strcmp(argv[2], "amx_missing")) {
		const char *args[] = {"sig", "--state=none,amx", NULL};
		if (has_amx())
			xf_test_skip("this CPU has AMX: --state=amx is valid here");
		expect_refusal(argv[1], args, "--state=amx: this CPU or kernel has no amx", 0,
			       NULL);
		return 0;
	}
	if (!strcmp(argv[2], "yield_two_cpus")) {
		const char *args[] = {"ctx", "--test=yield", "--cpus=2", NULL};
		if (allowed_cpus() < 2)
			xf_test_skip("one CPU: --cpus=2 is refused before yield is looked at");
		expect_refusal(argv[1], args, "--test=yield needs both tasks on one CPU", 0, NULL);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!strcmp(cases[i].name, argv[2])) {
			expect_refusal(argv[1], cases[i].args, cases[i].expect, cases[i].one_cpu,
				       cases[i].env);
			return 0;
		}
	}
	xf_test_fail("no case '%s'", argv[2]);
}
