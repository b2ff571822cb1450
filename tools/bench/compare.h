/* compare.h - `xfiber bench compare A.json B.json` (compare.c). */
#ifndef XF_TOOLS_BENCH_COMPARE_H
#define XF_TOOLS_BENCH_COMPARE_H

#include <stddef.h>

/* Prints the A/B table of two result files, rows beyond noise when Welch's
 * p < alpha.  0, or -1 with one line in err (a file unreadable or not ours). */
int xf_bench_compare(const char *path_a, const char *path_b, double alpha, char *err,
		     size_t err_size);

#endif
