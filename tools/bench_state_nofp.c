/*
 * bench_state_nofp.c - back to init state before a row's loop.
 *
 * Built -mgeneral-regs-only: the reset must not leave a vector register live
 * behind itself, as a compiler-inserted spill would.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench_state.h"
#include "common/compiler.h"
#include "xstate/xstate.h"

/* An image with XSTATE_BV = 0: XRSTOR of it initializes every component. */
static uint64_t *init_image;

int xf_bench_state_setup(void)
{
	size_t size = XF_ALIGN_UP((size_t)xf__xstate.info.size_standard, 64);

	if (init_image)
		return 0;
	if (!xf__xstate.info.has_xsave)
		return ENOTSUP;
	init_image = aligned_alloc(64, size);
	if (!init_image)
		return ENOMEM;
	for (size_t i = 0; i < size / sizeof(uint64_t); i++)
		init_image[i] = 0;
	/* XRSTOR loads MXCSR from the legacy region even for an init SSE. */
	init_image[FXSAVE_MXCSR_OFFSET / sizeof(uint64_t)] = MXCSR_DEFAULT;
	return 0;
}

void xf_bench_state_init(void)
{
	if (init_image)
		xf__xrstor(init_image, xf__xstate.engine.xcr0);
}
