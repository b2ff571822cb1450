/*
 * context.h - the saved form of a voluntarily switched fiber, shared by the
 * switch assembly (switch_x86_64_sysv_elf_gas.S) and C (sched/).
 *
 * A suspended fiber is nothing but its stack pointer; everything else sits on
 * its stack, lowest address first, at these offsets from the stack pointer:
 *
 *   offset  contents
 *   -8      MXCSR (4 bytes)                 its control bits callee-saved per
 *                                           the SysV ABI, its flags not
 *   -4      x87 control word (2 bytes)      callee-saved per the SysV ABI
 *   -2      unused (2 bytes)
 *   0       r15
 *   8       r14
 *   16      r13
 *   24      r12
 *   32      rbx
 *   40      rbp
 *   48      return address                  where the switch returns to
 *
 * The first 8 bytes lie below the stack pointer, in the red zone, which
 * saves the switch two instructions that would move the stack pointer over
 * them.  They are safe there: nothing writes below the stack pointer of a
 * switched-out stack (a signal arrives on the running one, and skips its
 * red zone too).
 *
 * Vector, opmask and tile registers are caller-saved at a call, so a
 * voluntary switch has nothing more to keep.  Where the return address
 * leads - into C, or straight into the caller of xf_yield - the fiber's
 * on_cpu records (sched.h), not the frame.  A new fiber's stack is built by
 * C to look the same, with the return address pointing at xf__fiber_start
 * and r12 holding the fiber; it resumes in C (XF_OFF_CPU).
 */
#ifndef XF_ARCH_CONTEXT_H
#define XF_ARCH_CONTEXT_H

#define XF_CTX_MXCSR	(-8)
#define XF_CTX_FCW	(-4)
#define XF_CTX_R15	0
#define XF_CTX_R14	8
#define XF_CTX_R13	16
#define XF_CTX_R12	24
#define XF_CTX_RBX	32
#define XF_CTX_RBP	40
#define XF_CTX_RIP	48
#define XF_CTX_BELOW_SP 8  /* the bytes of the frame below the stack pointer */
#define XF_CTX_SIZE	64 /* the frame plus the return address */

/* MXCSR's bits as a switch treats them (bits 16-31 are reserved, zero). */
#define XF_MXCSR_FLAG_BITS    0x3f   /* the six exception flags: status, caller-saved */
#define XF_MXCSR_CONTROL_BITS 0xffc0 /* DAZ, masks, rounding, FTZ: callee-saved */

/* Sanitizer builds switch only from C, which tells the sanitizer about every
 * switch; xf_yield's assembly fast path, which returns from a switch straight
 * to its caller, is left out of them. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define XF_SWITCH_ANNOTATED 1
#endif

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

struct xf__switch_frame {
	uint32_t mxcsr;
	uint16_t fcw;
	uint16_t unused;
	uint64_t r15, r14, r13, r12, rbx, rbp;
	uint64_t rip;
};

/* The whole frame, from its lowest byte; the stack pointer is at r15. */
#define XF_CTX_AT(field) ((long)offsetof(struct xf__switch_frame, field) - XF_CTX_BELOW_SP)
_Static_assert(XF_CTX_AT(mxcsr) == XF_CTX_MXCSR, "context.h");
_Static_assert(XF_CTX_AT(fcw) == XF_CTX_FCW, "context.h");
_Static_assert(XF_CTX_AT(r15) == XF_CTX_R15, "context.h");
_Static_assert(XF_CTX_AT(r12) == XF_CTX_R12, "context.h");
_Static_assert(XF_CTX_AT(rbp) == XF_CTX_RBP, "context.h");
_Static_assert(XF_CTX_AT(rip) == XF_CTX_RIP, "context.h");
_Static_assert(sizeof(struct xf__switch_frame) == XF_CTX_SIZE, "context.h");

struct xf__worker;

/* What the switch that resumed a context hands it, in rax:rdx: the worker
 * that switched to it, and the context that ran before, tagged. */
struct xf__switched {
	struct xf__worker *w;
	uintptr_t prev;
};

struct xf_fiber;

/* The whole switch from prev (the fiber running on w, tagged with an enum
 * xf__prev_action) to next, on w: saves prev's context and errno, publishes
 * its stack pointer, makes next w's current fiber (on_cpu, the switch
 * counter), and resumes next, which then sets prev's on_cpu to XF_OFF_CPU,
 * takes its own errno back and sets the preemption word to NOT_PENDING | the
 * nesting it resumes at (next's on_cpu says: 1 in C, 0 in an xf_yield's
 * caller).  The caller is inside the scheduler's critical section
 * (nesting 1) and resumes there.  *mxcsr is the caller's MXCSR, stored by
 * xf__store_mxcsr() (xstate.h) with nothing since that could change it.
 * Returns when someone switches back, with what that switch handed over. */
struct xf__switched xf__context_switch(struct xf__worker *w, uintptr_t prev, struct xf_fiber *next,
				       const uint32_t *mxcsr);

/* Where a new fiber's first switch returns to; calls
 * xf__fiber_main(r12, what the switch handed over). */
void xf__fiber_start(void);

/* Builds a new context on the stack whose top is stack_top (16-aligned) so
 * that the first switch to it runs xf__fiber_main(arg) with the caller's
 * MXCSR and x87 control word, inside the scheduler's critical section
 * (nesting 1: the fiber's on_cpu must say XF_OFF_CPU).  Returns its stack
 * pointer. */
void *xf__context_make(void *stack_top, void *arg);
#endif

#endif
