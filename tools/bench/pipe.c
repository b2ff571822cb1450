/*
 * pipe.c - `xfiber bench pipe`: the equivalent of `perf bench sched
 * pipe`, two tasks bouncing an int over a pair of pipes through glibc's
 * read and write, in usecs per round trip (perf's "op"), with threads
 * (perf's -T) or processes.  The loop is ctx's pipe test, with perf's calls
 * and the registers left as the process has them.
 */
#include <stdio.h>

#include "bench/ctx.h"

static int pipe_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct xf_ctx_result res;
	int err = xf_ctx_pingpong(p, iters, &res, s->note, sizeof(s->note));

	if (err)
		return err;
	s->value = res.elapsed_ns / (double)iters / 1e3;
	s->elapsed_ns = res.elapsed_ns;
	snprintf(s->note, sizeof(s->note), "%.0f ops/sec", (double)iters * 1e9 / res.elapsed_ns);
	xf_bench_sample_extra(s, "ops_per_sec", (double)iters * 1e9 / res.elapsed_ns);
	return 0;
}

static int plan_pipe(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		     size_t err_size)
{
	const unsigned modes = o->modes ? o->modes : XF_MODE_THREADS | XF_MODE_PROCESS;
	const unsigned cpus = o->cpus ? o->cpus : 2;

	(void)err;
	(void)err_size;
	for (int ncpus = 1; ncpus <= 2; ncpus++) {
		struct xf_bench_params p = {.test = XF_CTX_PIPE,
					    .libc = true, /* perf's read/write of an int */
					    .ncpus = ncpus,
					    .cpu = {o->cpu[0], o->cpu[ncpus > 1]}};
		if (!(cpus & (1u << ncpus)))
			continue;
		for (int m = XF_MODE_THREADS; m <= XF_MODE_PROCESS; m <<= 1) {
			if (!(modes & m))
				continue;
			p.process = m == XF_MODE_PROCESS;
			xf_bench_plan_add(plan, &p, pipe_run, "%s/%dcpu",
					  p.process ? "process" : "threads", ncpus);
		}
	}
	return 0;
}

XF_BENCH_VARIANT(pipe_kernel) = {
    .workload = "pipe",
    .name = "kernel",
    .kind = "kernel",
    .order = 0,
    .plan = plan_pipe,
};

XF_BENCH_WORKLOAD(pipe_workload) = {
    .name = "pipe",
    .summary = "pipe round trips between two tasks (perf bench sched pipe)",
    .what = "usecs per round trip, as perf bench sched pipe (lower is better)",
    .unit = "usecs/op",
    .higher_is_better = false,
    .order = 30,
    .options = XF_BOPT_CPUS | XF_BOPT_MODE | XF_BOPT_ITERATIONS,
};
