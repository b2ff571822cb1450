/*
 * minswitch_x86_64_sysv_elf_gas.S - the yardstick for xfiber's
 * voluntary switch: the least a switch must keep under the SysV ABI -
 * rbx, rbp, r12-r15, rsp, MXCSR and the x87 control word - saved and
 * reloaded unconditionally, as Boost.Context's jump_fcontext does.  Unlike
 * jump_fcontext, each side publishes its stack pointer in memory and the
 * other reads it back, as a scheduler must (whoever resumes a context later
 * finds it there).
 *
 * Both contexts run the same loop and switch from the same call site, as
 * the two fibers of xfiber's yield ping-pong (and Go's) do.  That matters:
 * the switch ends in a `ret`, which the return stack buffer predicts to
 * the caller's own call site.  From two different call sites every switch
 * mispredicts that `ret`: 12.3 ns per switch instead of 5.4 on this
 * machine, more than everything else the switch does.
 *
 * uint64_t xf_fb_minimal_switch_loop(uint64_t n, void *stack, size_t size,
 *                                    bool two_sites)
 * runs n round trips between the caller and a context on `stack`; returns
 * TSC ticks.  two_sites makes the partner switch from a call site of its
 * own, to show what a mispredicted return costs.  Frame on a switched-out
 * stack, lowest address first:
 *   +0 MXCSR  +4 x87 CW  +8 r15 r14 r13 r12 rbx rbp  +56 return address
 */
#include "xfiber_internal.h"

	.file	"minswitch_x86_64_sysv_elf_gas.S"
	.text

/* void min_switch(void **save_sp [rdi], void *next_sp [rsi]): both sides'
 * frames have the same layout, so the unwind notes hold across the switch. */
FUNCTION min_switch
	PUSH_CALLEE_SAVED
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)			/* callee-saved: MXCSR */
	fnstcw	4(%rsp)			/* callee-saved: x87 control word */
	movq	%rsp, (%rdi)		/* publish the outgoing stack pointer */
	movq	%rsi, %rsp		/* switch stacks */
	ldmxcsr	(%rsp)			/* reload both, whether or not they differ */
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	POP_CALLEE_SAVED
	ret
END_FUNCTION min_switch

FUNCTION xf_fb_minimal_switch_loop
	PUSH_CFI	%rbx
	PUSH_CFI	%r12
	PUSH_CFI	%r13
	PUSH_CFI	%r14
	/* The partner's first frame, at its stack's 16-aligned top: our
	 * MXCSR and control word, and callee-saved registers that make it
	 * run the loop below from .Lround (or .Lpartner_round), as if back
	 * from a switch: rbx = round trips left (it never finishes), r12/r13
	 * = its own and our stack pointer's slots. */
	leaq	(%rsi,%rdx), %rax
	andq	$-16, %rax
	subq	$72, %rax		/* 8 alignment + 64-byte frame */
	stmxcsr	(%rax)
	fnstcw	4(%rax)
	leaq	partner_sp(%rip), %r10
	movq	%r10, 32(%rax)		/* its r12 */
	leaq	main_sp(%rip), %r10
	movq	%r10, 24(%rax)		/* its r13 */
	movq	$-1, 40(%rax)		/* its rbx */
	leaq	.Lround(%rip), %r8
	leaq	.Lpartner_round(%rip), %r9
	testb	%cl, %cl		/* two_sites? */
	cmovnzq	%r9, %r8
	movq	%r8, 56(%rax)		/* its return address */
	movq	%rax, partner_sp(%rip)
	movq	%rdi, %rbx		/* our side: n round trips, */
	leaq	main_sp(%rip), %r12	/* publishing here, */
	leaq	partner_sp(%rip), %r13	/* resuming what is published there */
	lfence
	rdtsc
	shlq	$32, %rdx
	orq	%rax, %rdx
	movq	%rdx, %r14		/* t0 */
	testq	%rbx, %rbx
	jz	.Ldone
/* Both contexts loop here (only ours with two_sites). */
.Lnext:
	movq	%r12, %rdi
	movq	(%r13), %rsi
	call	min_switch		/* to the other side; back at .Lround */
.Lround:
	decq	%rbx
	jnz	.Lnext
.Ldone:	lfence
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	subq	%r14, %rax		/* ticks */
	.cfi_remember_state
	POP_CFI	%r14
	POP_CFI	%r13
	POP_CFI	%r12
	POP_CFI	%rbx
	ret
	.cfi_restore_state
/* The partner's loop of its own, for two_sites. */
.Lpartner_next:
	movq	%r12, %rdi
	movq	(%r13), %rsi
	call	min_switch		/* not our call site: the return mispredicts */
.Lpartner_round:
	jmp	.Lpartner_next		/* rbx unused: the partner never finishes */
END_FUNCTION xf_fb_minimal_switch_loop

	.bss
	.align	8
main_sp:	.quad	0
partner_sp:	.quad	0

	.section .note.GNU-stack,"",%progbits
