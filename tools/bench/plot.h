/*
 * plot.h - `--plot FILE.png` and `xfiber bench plot`: bar charts with
 * error bars, drawn by bench/plot.py with Python 3 and matplotlib.
 */
#ifndef XF_TOOLS_BENCH_PLOT_H
#define XF_TOOLS_BENCH_PLOT_H

#include <stddef.h>

/* Finds a Python 3 with matplotlib and the script.  0, or -1 with one line
 * in err saying what is missing and how to install it. */
int xf_bench_plot_check(char *err, size_t err_size);

/* Draws the results in json into png.  0, or -1 with one line in err. */
int xf_bench_plot(const char *json, const char *png, char *err, size_t err_size);

#endif
