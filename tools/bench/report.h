/*
 * report.h - what `xfiber bench` prints: the tables in the seeds'
 * style (Mean | Stddev | ... | %speedup vs a baseline row) and the JSON file
 * with every run's raw numbers, the machine and the settings.
 */
#ifndef XF_TOOLS_BENCH_REPORT_H
#define XF_TOOLS_BENCH_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/bench.h"

#define XF_BENCH_SCHEMA "xfiber-bench/1"

/* %speedup of value against base: 100 = no change, above 100 = better. */
double xf_bench_speedup(double value, double base, bool higher_is_better);

/* Decimals that show values of this size sensibly (switches/s vs usecs). */
int xf_bench_decimals(double magnitude);

/* The row the %speedup column compares with: the one named baseline if the
 * plan has it, else the first row that ran.  NULL if none ran. */
const struct xf_bench_row *xf_bench_baseline_row(const struct xf_bench_plan *plan,
						 const char *baseline);

void xf_bench_print_table(FILE *out, const struct xf_bench_opts *o,
			  const struct xf_bench_plan *plan);

/* One line about the machine and the method, above the tables. */
void xf_bench_print_header(FILE *out, const struct xf_bench_opts *o);

/* Writes every plan to path.  0, or an errno value. */
int xf_bench_write_json(const char *path, const struct xf_bench_opts *o, int argc, char **argv,
			struct xf_bench_plan *const *plans, unsigned nplans);

#endif
