/*
 * bench_minswitch_x86_64_sysv_elf_gas.S - the yardstick for xfiber's
 * voluntary switch: the least a switch must keep under the SysV ABI -
 * rbx, rbp, r12-r15, rsp, MXCSR and the x87 control word - saved and
 * reloaded unconditionally, as Boost.Context's jump_fcontext does.  Unlike
 * jump_fcontext, each side publishes its stack pointer in memory and the
 * other reads it back, as a scheduler must (whoever resumes a context later
 * finds it there); passing it in registers instead, as Boost's symmetric API
 * can, measured ~6 ns against ~10 ns here for the same instructions.
 *
 * uint64_t xf_fb_minimal_switch_loop(uint64_t n, void *stack, size_t size)
 * runs n round trips between the caller and a context on `stack`; returns
 * TSC ticks.  Frame on a switched-out stack, lowest address first:
 *   +0 MXCSR  +4 x87 CW  +8 r15 r14 r13 r12 rbx rbp  +56 return address
 */
	.file	"bench_minswitch_x86_64_sysv_elf_gas.S"
	.text

/* void min_switch(void **save_sp [rdi], void *next_sp [rsi]) */
	.type	min_switch, @function
	.align	16
min_switch:
	.cfi_startproc
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$8, %rsp
	stmxcsr	(%rsp)			/* callee-saved: MXCSR */
	fnstcw	4(%rsp)			/* callee-saved: x87 control word */
	movq	%rsp, (%rdi)		/* publish the outgoing stack pointer */
	movq	%rsi, %rsp		/* switch stacks */
	ldmxcsr	(%rsp)			/* reload both, whether or not they differ */
	fldcw	4(%rsp)
	addq	$8, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.cfi_endproc
	.size	min_switch, .-min_switch

/* The partner context: switches straight back, forever. */
	.type	min_partner, @function
	.align	16
min_partner:
	.cfi_startproc
	.cfi_undefined rip
1:	leaq	partner_sp(%rip), %rdi
	movq	main_sp(%rip), %rsi
	call	min_switch
	jmp	1b
	.cfi_endproc
	.size	min_partner, .-min_partner

	.globl	xf_fb_minimal_switch_loop
	.hidden	xf_fb_minimal_switch_loop
	.type	xf_fb_minimal_switch_loop, @function
	.align	16
xf_fb_minimal_switch_loop:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	movq	%rdi, %rbx		/* n */
	/* The partner's first frame: its top, 16-aligned, then the frame whose
	 * return address is min_partner and whose MXCSR/CW are ours. */
	leaq	(%rsi,%rdx), %rax
	andq	$-16, %rax
	subq	$72, %rax		/* 8 alignment + 64-byte frame */
	stmxcsr	(%rax)
	fnstcw	4(%rax)
	leaq	min_partner(%rip), %rcx
	movq	%rcx, 56(%rax)
	movq	%rax, partner_sp(%rip)
	lfence
	rdtsc
	shlq	$32, %rdx
	orq	%rax, %rdx
	movq	%rdx, %r12		/* t0 */
2:	testq	%rbx, %rbx
	jz	3f
	leaq	main_sp(%rip), %rdi
	movq	partner_sp(%rip), %rsi
	call	min_switch		/* there and, from min_partner, back */
	decq	%rbx
	jmp	2b
3:	lfence
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	subq	%r12, %rax		/* ticks */
	popq	%r13
	popq	%r12
	popq	%rbx
	ret
	.cfi_endproc
	.size	xf_fb_minimal_switch_loop, .-xf_fb_minimal_switch_loop

	.bss
	.align	8
main_sp:	.quad	0
partner_sp:	.quad	0

	.section .note.GNU-stack,"",%progbits
