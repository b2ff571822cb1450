/*
 * run.h - how every row is measured: pinned, warmed up (and its work
 * calibrated to --time), then timed --runs times under a watchdog, with the
 * progress on stderr.
 */
#ifndef XF_TOOLS_BENCH_RUN_H
#define XF_TOOLS_BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench.h"

struct xf_bench_progress {
	bool tty;	     /* stderr is a terminal: one self-rewriting line */
	unsigned rows;	     /* rows to run in the whole invocation */
	unsigned done;	     /* rows finished */
	double left_s;	     /* estimated seconds for the rows not yet started */
	double run_wall_s;   /* wall seconds of one run, as measured so far */
	double fixed_wall_s; /* the same for rows whose work is fixed */
};

/* Counts the rows of plan and their estimated time into pr. */
void xf_bench_progress_add(struct xf_bench_progress *pr, const struct xf_bench_opts *o,
			   struct xf_bench_plan *plan);
/* Clears the progress line (before a table goes to stdout). */
void xf_bench_progress_clear(const struct xf_bench_progress *pr);

/* Runs every row of plan that is not skipped.  0, or -1 with one line in err. */
int xf_bench_run_plan(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
		      struct xf_bench_progress *pr, char *err, size_t err_size);

#endif
