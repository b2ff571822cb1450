/*
 * state_nofp.c - back to init state before a row's loop.
 *
 * Built -mgeneral-regs-only: the reset must not leave a vector register live
 * behind itself, as a compiler-inserted spill would.
 */
#include <errno.h>
#include <stdint.h>

#include "bench/state.h"
#include "xfiber_internal.h"

int xf_bench_state_setup(void)
{
	return xf__xstate.info.has_xsave ? 0 : ENOTSUP;
}

void xf_bench_state_init(void)
{
	xf__xstate_reset_all();
}
