/*
 * xstate.h - the library's private view of CPU extended state.
 *
 * Discovery (discover.c) fills xf__xstate once, from a constructor, before
 * any other part of the library runs; afterwards it is read-only.  The
 * engine (engine_nofp.c) and, later, the switch and preemption paths read
 * only the small, hot `engine` part.
 */
#ifndef XF_XSTATE_XSTATE_H
#define XF_XSTATE_XSTATE_H

#include <stdint.h>

#include "xfiber.h"

/* Internal symbols: direct, not GOT-indirect, access from within the library. */
#pragma GCC visibility push(hidden)

/* Layout facts from the Intel SDM, vol. 1, 13.4. */
#define XSAVE_LEGACY_SIZE	 512 /* x87 + SSE region of every image */
#define XSAVE_HEADER_OFFSET	 512
#define XSAVE_HEADER_SIZE	 64
#define XSAVE_EXTENDED_OFFSET	 (XSAVE_LEGACY_SIZE + XSAVE_HEADER_SIZE) /* 576 */
#define XSAVE_XCOMP_BV_COMPACTED (UINT64_C(1) << 63)
#define FXSAVE_MXCSR_OFFSET	 24
#define FXSAVE_MXCSR_MASK_OFFSET 28
#define MXCSR_DEFAULT		 0x1f80
#define FCW_DEFAULT		 0x037f

/* The header at image + 512. */
struct xsave_header {
	uint64_t xstate_bv;
	uint64_t xcomp_bv;
	uint64_t reserved[6];
};
_Static_assert(sizeof(struct xsave_header) == XSAVE_HEADER_SIZE, "SDM header size");

/* What the hot paths need, packed into one cache line. */
struct xf__xstate_engine {
	uint64_t xcr0;	     /* RFBM for every save and restore */
	uint32_t save_size;  /* bytes an image needs with `strategy` */
	uint32_t mxcsr_mask; /* bits MXCSR may hold; others make XRSTOR fault */
	xf_xsave_strategy strategy;
	int error; /* errno value when strategy == XF_XSAVE_NONE */
	bool has_xgetbv1;
} __attribute__((aligned(64)));

struct xf__xstate {
	struct xf__xstate_engine engine;
	bool amx_granted;    /* this process may use tiles (set by discovery or request_amx) */
	xf_xstate_info info; /* the full picture, except the live xinuse/xcomp_perm */
	char strategy_error[160];
};

extern struct xf__xstate xf__xstate;

/* The raw instructions, in xsave_x86_64_sysv_elf_gas.S. */
void xf__xsaveopt(void *image, uint64_t rfbm);
void xf__xsavec(void *image, uint64_t rfbm);
void xf__xsave(void *image, uint64_t rfbm);
void xf__xrstor(const void *image, uint64_t rfbm);
void xf__fxsave(void *image);
void xf__fxrstor(const void *image);
uint64_t xf__xgetbv(uint32_t index);
void xf__tilerelease(void);
void xf__vzeroupper(void);

/* Stores MXCSR at *dst.  Inline, not a call: the switch path stores it early
 * and reads it back much later, because reading back right after stmxcsr
 * stalls (arch/context.h).  Touches no vector register. */
static inline void xf__store_mxcsr(uint32_t *dst)
{
	__asm__ volatile("stmxcsr %0" : "=m"(*dst));
}

static inline uint32_t xf__stmxcsr(void)
{
	uint32_t mxcsr;

	xf__store_mxcsr(&mxcsr);
	return mxcsr;
}

/* Every enabled component to its init state, MXCSR and the x87 control word
 * to their defaults (XINUSE 0): for benchmarks that must start from nothing
 * live.  General registers only; no-op without XSAVE. */
void xf__xstate_reset_all(void);

/* Parses a strategy name; XF_XSAVE_NONE for an unknown one. */
xf_xsave_strategy xf__xsave_strategy_parse(const char *name);

/* True if this CPU can run strategy s. */
bool xf__xsave_strategy_supported(xf_xsave_strategy s);

/* Bytes an image needs with strategy s on this machine. */
uint32_t xf__xsave_strategy_size(xf_xsave_strategy s);

/* Bytes of register data in the components named by mask (x87 counts its
 * 160 bytes, SSE its 256), without the header: what an XSAVE-family
 * instruction writes for those components. */
uint32_t xf__xstate_component_bytes(uint64_t mask);

#pragma GCC visibility pop

#endif
