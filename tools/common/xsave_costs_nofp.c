/*
 * xsave_costs_nofp.c - the timed loops behind xfiber info --costs.
 *
 * WARNING: built -mgeneral-regs-only.  Between putting the registers into
 * the measured state and the last timed instruction nothing may touch a
 * vector register, or the state being measured would change under us.
 */
#include "common/tsc.h"
#include "common/xsave_costs.h"
#include "xfiber.h"
#include "xfiber_internal.h"

uint64_t xf__cost_batch(enum xf_cost_op op, unsigned classes, const struct xf__regs *regs,
			void *buf, unsigned iters, uint64_t *xinuse)
{
	const uint64_t rfbm = xf__xstate.engine.xcr0;
	const size_t size = xf__xstate.engine.save_size;
	uint64_t t0, t1;

	xf__xstate_reset_all();
	if (classes)
		xf__regs_load(regs, classes);
	/* XRSTOR needs an image of this very state; the pairs start from one. */
	xf__xsavec(buf, rfbm);
	*xinuse = xf__xstate.engine.has_xgetbv1 ? xf__xgetbv(1) : rfbm;
	t0 = xf_tsc_read();
	switch (op) {
	case XF_COST_XSAVEOPT:
		for (unsigned i = 0; i < iters; i++)
			xf__xsaveopt(buf, rfbm);
		break;
	case XF_COST_XSAVEC:
		for (unsigned i = 0; i < iters; i++)
			xf__xsavec(buf, rfbm);
		break;
	case XF_COST_XSAVE:
		for (unsigned i = 0; i < iters; i++)
			xf__xsave(buf, rfbm);
		break;
	case XF_COST_XRSTOR:
		for (unsigned i = 0; i < iters; i++)
			xf__xrstor(buf, rfbm);
		break;
	case XF_COST_FXSAVE:
		for (unsigned i = 0; i < iters; i++)
			xf__fxsave(buf);
		break;
	case XF_COST_PAIR_XSAVEOPT:
		xf__xsaveopt(buf, rfbm);
		for (unsigned i = 0; i < iters; i++) {
			xf__xrstor(buf, rfbm);
			xf__xsaveopt(buf, rfbm);
		}
		break;
	case XF_COST_PAIR_XSAVEC:
		for (unsigned i = 0; i < iters; i++) {
			xf__xsavec(buf, rfbm);
			xf__xrstor(buf, rfbm);
		}
		break;
	case XF_COST_PAIR_API:
		for (unsigned i = 0; i < iters; i++) {
			xf_xstate_save(buf, size);
			xf_xstate_restore(buf, size);
		}
		break;
	default: break;
	}
	t1 = xf_tsc_read();
	/* Leave nothing behind that makes the caller's kernel switches dearer. */
	xf__xstate_reset_all();
	return t1 - t0;
}
