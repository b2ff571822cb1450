/*
 * state.h - the register state a benchmark runs in (--state): which
 * classes are dirtied around each operation, as context_switch2 touches FP
 * and vector registers after every switch, and how to return to init.
 */
#ifndef XF_TOOLS_BENCH_STATE_H
#define XF_TOOLS_BENCH_STATE_H

#include <stdint.h>

#include "xfiber_internal.h"

enum xf_bench_state {
	XF_STATE_NONE,	 /* nothing dirtied: every component in init state */
	XF_STATE_X87,	 /* ST(0)-ST(7) */
	XF_STATE_SSE,	 /* XMM0-15 */
	XF_STATE_AVX,	 /* YMM0-15 */
	XF_STATE_AVX512, /* ZMM0-31 and k0-7 */
	XF_STATE_AMX,	 /* AVX-512 and TILECFG/TMM0-7 */
	XF_STATE_N,
};

const char *xf_bench_state_name(enum xf_bench_state s);
/* The state called name, or -1. */
int xf_bench_state_parse(const char *name);
/* The XF_REGS_* classes xf__regs_load() dirties for s (0 for none). */
unsigned xf_bench_state_classes(enum xf_bench_state s);
/* NULL when s can be used here, else why not (one line).  Asks the kernel for
 * AMX permission the first time amx is checked. */
const char *xf_bench_state_unavailable(enum xf_bench_state s);

/* Fills a register file to dirty with: random values, but the default MXCSR
 * and x87 control word so the task's arithmetic is unchanged. */
void xf_bench_regs_fill(struct xf__regs *r, uint64_t seed);
/* The same in new memory (free() it); NULL on ENOMEM. */
struct xf__regs *xf_bench_regs_new(uint64_t seed);

/* Prepares xf_bench_state_init(); call once before any task starts. 0 or errno. */
int xf_bench_state_setup(void);
/* Puts every enabled component into its init state (XRSTOR of an image with
 * XSTATE_BV = 0), so a row starts from nothing live but what it dirties.
 * Built general-regs-only (state_nofp.c). */
void xf_bench_state_init(void);

/* Dirties the classes (no-op for 0). */
static inline void xf_bench_touch(const struct xf__regs *r, unsigned classes)
{
	if (classes)
		xf__regs_load(r, classes);
}

#endif
