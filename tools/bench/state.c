/* state.c - --state names, the classes each dirties, and whether this CPU has them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/state.h"
#include "xfiber.h"
#include "xfiber_internal.h"

static const char *const names[XF_STATE_N] = {"none", "x87", "sse", "avx", "avx512", "amx"};
static const unsigned classes[XF_STATE_N] = {
    0,
    XF_REGS_X87,
    XF_REGS_SSE,
    XF_REGS_AVX,
    XF_REGS_AVX512 | XF_REGS_OPMASK,
    XF_REGS_AVX512 | XF_REGS_OPMASK | XF_REGS_AMX,
};

const char *xf_bench_state_name(enum xf_bench_state s)
{
	return s < XF_STATE_N ? names[s] : "?";
}

int xf_bench_state_parse(const char *name)
{
	for (int s = 0; s < XF_STATE_N; s++) {
		if (!strcmp(name, names[s]))
			return s;
	}
	return -1;
}

unsigned xf_bench_state_classes(enum xf_bench_state s)
{
	return s < XF_STATE_N ? classes[s] : 0;
}

const char *xf_bench_state_unavailable(enum xf_bench_state s)
{
	static char why[128];
	unsigned want = xf_bench_state_classes(s);
	int err;

	if ((xf__regs_classes_available() & want) == want && !(want & XF_REGS_AMX))
		return NULL;
	if ((xf__regs_classes_available() & want) != want) {
		snprintf(why, sizeof(why), "this CPU or kernel has no %s state (XCR0 0x%llx)",
			 names[s], (unsigned long long)xf__xstate.info.xcr0);
		return why;
	}
	err = xf_xstate_request_amx();
	if (!err)
		return NULL;
	snprintf(why, sizeof(why), "the kernel refused AMX permission (%s)", strerror(err));
	return why;
}

void xf_bench_regs_fill(struct xf__regs *r, uint64_t seed)
{
	xf__regs_randomize(r, seed);
	r->mxcsr = MXCSR_DEFAULT;
	r->fcw = FCW_DEFAULT;
}

struct xf__regs *xf_bench_regs_new(uint64_t seed)
{
	struct xf__regs *r = aligned_alloc(64, sizeof(*r));

	if (r)
		xf_bench_regs_fill(r, seed);
	return r;
}
