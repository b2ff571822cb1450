/* xsave_costs.c - the instruction-cost table: which cells exist, medians of batches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xfiber_internal.h"
#include "common/tsc.h"
#include "common/xsave_costs.h"
#include "xfiber.h"

static const char *const state_names[XF_COST_NSTATES] = {"init", "sse", "avx", "avx512", "amx"};
static const char *const op_names[XF_COST_NOPS] = {
    "xsaveopt", "xsavec",	   "xsave",	    "xrstor",
    "fxsave",	"xsaveopt+xrstor", "xsavec+xrstor", "api save+restore",
};
static const unsigned state_classes[XF_COST_NSTATES] = {
    0,
    XF_REGS_SSE,
    XF_REGS_AVX,
    XF_REGS_AVX512 | XF_REGS_OPMASK,
    XF_REGS_AVX512 | XF_REGS_OPMASK | XF_REGS_AMX,
};

const char *xf_cost_state_name(enum xf_cost_state s)
{
	return s < XF_COST_NSTATES ? state_names[s] : "?";
}

const char *xf_cost_op_name(enum xf_cost_op op)
{
	return op < XF_COST_NOPS ? op_names[op] : "?";
}

static bool op_supported(enum xf_cost_op op)
{
	const xf_xstate_info *info = &xf__xstate.info;

	switch (op) {
	case XF_COST_XSAVEOPT:
	case XF_COST_PAIR_XSAVEOPT: return info->has_xsaveopt;
	case XF_COST_XSAVEC:
	case XF_COST_PAIR_XSAVEC:
	case XF_COST_XRSTOR: return info->has_xsavec;
	case XF_COST_XSAVE: return info->has_xsave;
	case XF_COST_FXSAVE: return true;
	case XF_COST_PAIR_API: return xf__xstate.engine.strategy != XF_XSAVE_NONE;
	default: return false;
	}
}

static bool state_supported(enum xf_cost_state s)
{
	unsigned want = state_classes[s];
	xf_xstate_info info;

	if ((xf__regs_classes_available() & want) != want)
		return false;
	if (!(want & XF_REGS_AMX))
		return true;
	xf_xstate_info_get(&info);
	return info.amx_permitted;
}

int xf_xsave_costs_measure(struct xf_xsave_costs *out, unsigned batches, unsigned iters)
{
	const xf_xstate_info *info = &xf__xstate.info;
	size_t size =
	    info->size_standard > info->size_compacted ? info->size_standard : info->size_compacted;
	struct xf__regs *regs = aligned_alloc(64, sizeof(*regs));
	void *buf = aligned_alloc(64, XF_ALIGN_UP(size, 64));
	double *samples = calloc(batches, sizeof(double));
	const double ns_per_tick = xf_tsc_ns_per_tick();

	if (!regs || !buf || !samples || !batches || !iters || !info->has_xsavec) {
		int err = (!batches || !iters) ? EINVAL : !info->has_xsavec ? ENOTSUP : ENOMEM;
		free(regs);
		free(buf);
		free(samples);
		return err;
	}
	memset(out, 0, sizeof(*out));
	memset(buf, 0, size);
	xf__regs_randomize(regs, 0x5eed);
	for (int s = 0; s < XF_COST_NSTATES; s++) {
		out->state_available[s] = state_supported(s);
		if (!out->state_available[s])
			continue;
		for (int op = 0; op < XF_COST_NOPS; op++) {
			out->op_available[op] = op_supported(op);
			if (!out->op_available[op])
				continue;
			for (unsigned b = 0; b < batches; b++) {
				uint64_t ticks = xf__cost_batch(op, state_classes[s], regs, buf,
								iters, &out->xinuse[s]);
				samples[b] = (double)ticks * ns_per_tick / iters;
			}
			out->ns[op][s] = xf_median(samples, batches);
		}
		/* 16 header bytes (XSTATE_BV, XCOMP_BV) plus each live component. */
		out->xsavec_bytes[s] = 16 + xf__xstate_component_bytes(out->xinuse[s]);
	}
	free(regs);
	free(buf);
	free(samples);
	return 0;
}
