/*
 * xsave.c - `xfiber bench xsave`: the XSAVE-family instruction costs of
 * `xfiber info --costs` (common/xsave_costs.c), one row per instruction and
 * state, measured --runs times so the rows get a spread like every other
 * table.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "common/xsave_costs.h"

/* The cost table's states (enum xf_cost_state) as --state names them.  A row's
 * .test is its enum xf_cost_op, its .state the xf_bench_state here. */
static const enum xf_bench_state as_state[XF_COST_NSTATES] = {
    XF_STATE_NONE, XF_STATE_SSE, XF_STATE_AVX, XF_STATE_AVX512, XF_STATE_AMX};

static int cost_state(enum xf_bench_state s)
{
	for (int st = 0; st < XF_COST_NSTATES; st++) {
		if (as_state[st] == s)
			return st;
	}
	return XF_COST_INIT;
}

static int xsave_measure_all(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
			     unsigned run, char *err, size_t err_size)
{
	struct xf_xsave_costs c;
	int rc = xf_xsave_costs_measure(&c, o->quick ? 5 : 51, o->quick ? 16 : 256);

	if (rc) {
		snprintf(err, err_size, "xsave: cannot measure: %s",
			 rc == ENOTSUP ? "this CPU has no XSAVEC" : strerror(rc));
		return -1;
	}
	for (unsigned i = 0; i < plan->nrows; i++) {
		struct xf_bench_row *row = &plan->rows[i];
		const int op = row->p.test, st = cost_state(row->p.state);

		if (row->skip[0])
			continue;
		row->samples[run] = c.ns[op][st];
		row->elapsed_ns[run] = 0;
		row->nsamples = run + 1;
		row->iters = o->quick ? 5 * 16 : 51 * 256;
		memset(&row->last, 0, sizeof(row->last));
		snprintf(row->last.note, sizeof(row->last.note), "XINUSE 0x%llx, XSAVEC %u B",
			 (unsigned long long)c.xinuse[st], c.xsavec_bytes[st]);
		xf_bench_sample_extra(&row->last, "xinuse", (double)c.xinuse[st]);
		xf_bench_sample_extra(&row->last, "xsavec_bytes", c.xsavec_bytes[st]);
	}
	return 0;
}

static int plan_xsave(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		      size_t err_size)
{
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};
	struct xf_xsave_costs probe;

	(void)err;
	(void)err_size;
	/* Asks for AMX permission (where there is AMX) so its column can be measured. */
	xf_bench_state_unavailable(XF_STATE_AMX);
	/* Which cells exist: the table's own answer, from one tiny measurement. */
	if (xf_xsave_costs_measure(&probe, 1, 1))
		memset(&probe, 0, sizeof(probe));
	for (int op = 0; op < XF_COST_NOPS; op++) {
		if (!probe.op_available[op])
			continue;
		for (int st = 0; st < XF_COST_NSTATES; st++) {
			if (!probe.state_available[st])
				continue;
			p.test = op;
			p.state = as_state[st];
			xf_bench_plan_add(plan, &p, NULL, "%s/%s", xf_cost_op_name(op),
					  xf_cost_state_name(st));
		}
	}
	/* A state this machine lacks is said once, not once per instruction. */
	for (int st = 0; st < XF_COST_NSTATES; st++) {
		const char *why = xf_bench_state_unavailable(as_state[st]);
		struct xf_bench_row *row;
		if (probe.state_available[st])
			continue;
		p.state = as_state[st];
		row = xf_bench_plan_add(plan, &p, NULL, "*/%s", xf_cost_state_name(st));
		if (row)
			snprintf(row->skip, sizeof(row->skip), "%s",
				 why ? why : "not measurable here");
	}
	return 0;
}

XF_BENCH_VARIANT(xsave_variant) = {
    .workload = "xsave",
    .name = "instructions",
    .kind = "kernel",
    .order = 0,
    .plan = plan_xsave,
};

XF_BENCH_WORKLOAD(xsave_workload) = {
    .name = "xsave",
    .summary = "XSAVE-family instruction costs by state (the table of info --costs)",
    .what = "median ns of one operation (lower is better)",
    .unit = "ns",
    .higher_is_better = false,
    .order = 50,
    .options = 0,
    .measure_all = xsave_measure_all,
};
