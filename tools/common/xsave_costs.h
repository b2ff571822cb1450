/*
 * xsave_costs.h - what each XSAVE-family instruction costs here, per state.
 * `xfiber info --costs` prints the table; `xfiber bench xsave` reuses it.
 */
#ifndef XF_TOOLS_COMMON_XSAVE_COSTS_H
#define XF_TOOLS_COMMON_XSAVE_COSTS_H

#include <stdbool.h>
#include <stdint.h>

#include "xfiber_internal.h"

/* The state of the registers while an operation is timed. */
enum xf_cost_state {
	XF_COST_INIT,	/* everything in init state */
	XF_COST_SSE,	/* XMM0-15 */
	XF_COST_AVX,	/* YMM0-15 */
	XF_COST_AVX512, /* ZMM0-31 and k0-7 */
	XF_COST_AMX,	/* AVX-512 and TILECFG/TMM0-7 */
	XF_COST_NSTATES,
};

enum xf_cost_op {
	XF_COST_XSAVEOPT,
	XF_COST_XSAVEC,
	XF_COST_XSAVE,
	XF_COST_XRSTOR,
	XF_COST_FXSAVE,
	XF_COST_PAIR_XSAVEOPT, /* raw XSAVEOPT + XRSTOR, same buffer */
	XF_COST_PAIR_XSAVEC,   /* raw XSAVEC + XRSTOR */
	XF_COST_PAIR_API,      /* xf_xstate_save + xf_xstate_restore */
	XF_COST_NOPS,
};

struct xf_xsave_costs {
	bool state_available[XF_COST_NSTATES];
	bool op_available[XF_COST_NOPS];
	double ns[XF_COST_NOPS][XF_COST_NSTATES]; /* median ns per operation */
	uint64_t xinuse[XF_COST_NSTATES];	  /* XGETBV(1) in that state */
	uint32_t xsavec_bytes[XF_COST_NSTATES];	  /* bytes XSAVEC writes there */
};

const char *xf_cost_state_name(enum xf_cost_state s);
const char *xf_cost_op_name(enum xf_cost_op op);

/* Measures the whole table; batches x iters operations per cell.  AMX
 * needs permission, which the caller requests first.  0 or an errno. */
int xf_xsave_costs_measure(struct xf_xsave_costs *out, unsigned batches, unsigned iters);

/* Internal to the measurement: one timed batch, in general registers only
 * (xsave_costs_nofp.c).  Puts the registers into the state described by
 * classes (0 = init) from regs, then runs op iters times; returns TSC ticks
 * and the XINUSE seen before the first operation. */
uint64_t xf__cost_batch(enum xf_cost_op op, unsigned classes, const struct xf__regs *regs,
			void *buf, unsigned iters, uint64_t *xinuse);

#endif
