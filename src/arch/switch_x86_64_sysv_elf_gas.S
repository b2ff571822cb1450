/*
 * switch_x86_64_sysv_elf_gas.S - the voluntary fiber switch, x86-64 System V
 * ABI, ELF, GNU as.  The frame it leaves on the stack is described in
 * context.h (offsets XF_CTX_*):
 *
 *   sp ->  +0  MXCSR | +4 x87 CW | +6 unused
 *          +8  r15   +16 r14   +24 r13   +32 r12   +40 rbx   +48 rbp
 *          +56 return address
 *
 * Only the callee-saved state is kept: rbx, rbp, r12-r15, rsp, MXCSR and the
 * x87 control word.  The caller stores MXCSR (stmxcsr) and passes where:
 * reading back what stmxcsr stored is slow on this CPU when it follows
 * right away, and the caller can store it dozens of instructions before
 * the switch reads it.  MXCSR and the control word are written only when the
 * incoming value differs from the outgoing one - loading the control word
 * marks x87 state in use (XINUSE bit 0), which would make every later kernel
 * switch and signal frame save x87 state for nothing.  Same idea as the
 * kernel writing PKRU only when it changes, or restoring IF with a
 * conditional STI instead of POPF.
 *
 * No system call, no signal-mask change, no XSAVE here.
 */
#include "arch/asm.h"
#include "arch/context.h"

	.file	"switch_x86_64_sysv_elf_gas.S"
	.text

/*
 * struct xf__switched xf__context_switch(void **save_sp, void *next_sp,
 *                                        struct xf__worker *w, uintptr_t prev,
 *                                        const uint32_t *mxcsr)
 *   rdi  where to publish the outgoing stack pointer
 *   rsi  the incoming context's stack pointer
 *   rdx  the worker making the switch
 *   rcx  the outgoing context, tagged with what to do with it
 *   r8   where the caller stored its MXCSR (nothing since changed it)
 * The incoming context receives rdx and rcx as its return value (rax:rdx):
 * the worker it now runs on and the context to settle, without reading
 * either back from memory (like Boost.Context's transfer_t).
 */
FUNCTION xf__context_switch
	pushq	%rbp				/* callee-saved GPRs, in the order of context.h */
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp			/* room for MXCSR and the control word */
	.cfi_adjust_cfa_offset 8
	movl	(%r8), %r8d			/* MXCSR, as the caller stored it */
	movl	%r8d, XF_CTX_MXCSR(%rsp)	/* keep it, and r8d to compare */
	fnstcw	XF_CTX_FCW(%rsp)		/* reading the control word marks nothing in use */
	movzwl	XF_CTX_FCW(%rsp), %r9d		/* keep it to compare */
	movq	%rsp, (%rdi)			/* publish: the outgoing context is complete */

	movq	%rsi, %rsp			/* switch stacks: now on the incoming fiber */

	cmpl	XF_CTX_MXCSR(%rsp), %r8d	/* MXCSR differs? (rare: reload out of line) */
	jne	.Lload_mxcsr
.Lcheck_fcw:
	cmpw	XF_CTX_FCW(%rsp), %r9w		/* control word differs? */
	jne	.Lload_fcw
.Lrestore:
	addq	$8, %rsp			/* drop the MXCSR/CW slot */
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	movq	%rdx, %rax			/* hand over: the worker, */
	movq	%rcx, %rdx			/* and the tagged outgoing context */
	ret					/* into the incoming fiber, where it called us;
						 * predicted right only if that is where
						 * the outgoing one called from */

.Lload_mxcsr:
	ldmxcsr	XF_CTX_MXCSR(%rsp)
	jmp	.Lcheck_fcw
.Lload_fcw:
	fldcw	XF_CTX_FCW(%rsp)		/* marks x87 in use; only when it must */
	jmp	.Lrestore
END_FUNCTION xf__context_switch

/*
 * void xf__fiber_start(void)
 * Entered by the ret of the first switch into a new fiber, with r12 = the
 * argument given to xf__context_make and rax:rdx = what the switch hands
 * over.  Never returns.
 */
FUNCTION xf__fiber_start
	.cfi_undefined rip			/* outermost frame: unwinders stop here */
	xorl	%ebp, %ebp			/* end of the frame-pointer chain */
	movq	%r12, %rdi			/* xf__fiber_main(arg, worker, tagged prev) */
	movq	%rax, %rsi			/* rdx already holds the third argument */
	andq	$-16, %rsp			/* the ABI wants rsp 16-aligned at a call */
	call	xf__fiber_main
	ud2					/* xf__fiber_main never returns */
END_FUNCTION xf__fiber_start

	.section .note.GNU-stack,"",%progbits
