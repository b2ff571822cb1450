/*
 * switch_x86_64_sysv_elf_gas.S - the fiber switch, x86-64 System V ABI, ELF,
 * GNU as: the C scheduler's xf__context_switch, and xf_yield's fast path.
 * The frame a switched-out context leaves on its stack is described in
 * context.h (offsets XF_CTX_*); the C fields used here in layout.h.
 *
 *   sp ->  +0  MXCSR | +4 x87 CW | +6 nesting to resume at
 *          +8  r15   +16 r14   +24 r13   +32 r12   +40 rbx   +48 rbp
 *          +56 return address
 *
 * Only the callee-saved state is kept: rbx, rbp, r12-r15, rsp, MXCSR and the
 * x87 control word.  The caller stores MXCSR (stmxcsr) well before the
 * switch reads it: reading back what stmxcsr stored is slow on this CPU
 * when it follows right away.  MXCSR and the control word are written only
 * when the incoming value differs from the outgoing one - loading the
 * control word marks x87 state in use (XINUSE bit 0), which would make every
 * later kernel switch and signal frame save x87 state for nothing.  Same
 * idea as the kernel writing PKRU only when it changes, or restoring IF with
 * a conditional STI instead of POPF.
 *
 * Both entries end in one switch body (SWITCH_BODY), which does the whole of
 * the switch protocol, after Linux's context_switch + finish_task_switch:
 *
 *   outgoing, on worker W:  save errno into prev, publish prev->sp,
 *                           W->current = next, next->on_cpu = 1, count it
 *   incoming (next), on W:  preemption word = NOT_PENDING | frame's nesting,
 *                           errno = next's, prev->on_cpu = 0
 *
 * prev becomes visible to other workers only when its on_cpu is cleared,
 * after its registers are on its stack, except a blocked fiber, which its
 * waker may already have queued: whoever picks a fiber first waits for
 * on_cpu == 0 (xf_yield below hands that wait to C).  An exiting fiber's
 * last switch always goes to its worker's idle context, whose C code
 * releases it (sched/schedule.c): xf_yield's frames return straight to
 * their caller and could not.
 *
 * All of it lies in the section xf_nopreempt_text, where a preemption
 * signal never switches (preempt/signal.c): xf_yield's fast path runs at
 * nesting 0 rather than raising the soft mask, and the switch body runs
 * between two fibers.
 *
 * No system call, no signal-mask change, no XSAVE here.
 */
#include "arch/asm.h"
#include "arch/context.h"
#include "arch/layout.h"

	.file	"switch_x86_64_sysv_elf_gas.S"
	.section xf_nopreempt_text, "ax", @progbits

/*
 * The switch body, expanded at the end of both entries.  In: rdi w, rsi
 * prev, rcx prev tagged, rdx next, r8d prev's MXCSR; prev's frame pushed
 * and filled but for its control word.
 */
.macro SWITCH_BODY
	fnstcw	XF_CTX_FCW(%rsp)		/* reading the control word marks nothing in use */
	movzwl	XF_CTX_FCW(%rsp), %r9d		/* keep it to compare */
	movq	XF_W_ERRNO_PTR(%rdi), %r10	/* this thread's errno, */
	movl	(%r10), %eax
	movl	%eax, XF_F_SAVED_ERRNO(%rsi)	/* which is prev's: errno is per fiber */
	movq	%rsp, XF_F_SP(%rsi)		/* publish: prev's context is complete */
	addq	$1, XF_W_SWITCHES(%rdi)		/* stats.switches; only this thread writes it */
	movq	%rdx, XF_W_CURRENT(%rdi)	/* after the count: the ticker reads current
						 * first, and must not pair next with the
						 * old count (it would think next ran a
						 * whole slice) */
	movl	$1, XF_F_ON_CPU(%rdx)

	movq	XF_F_SP(%rdx), %rsp		/* switch stacks: now on next */

	cmpl	XF_CTX_MXCSR(%rsp), %r8d	/* MXCSR differs? (rare: reload out of line) */
	jne	3f
1:	cmpw	XF_CTX_FCW(%rsp), %r9w		/* control word differs? */
	jne	4f
2:	movzwl	XF_CTX_NESTING(%rsp), %eax	/* the nesting next resumes at, */
	orl	$XF_PREEMPT_NOT_PENDING_BIT, %eax /* nothing pending: this switch served it */
	movq	xf__preempt_word@gottpoff(%rip), %r11
	movl	%eax, %fs:(%r11)
	movl	XF_F_SAVED_ERRNO(%rdx), %eax	/* next's errno back (same thread: r10 holds) */
	movl	%eax, (%r10)
	movl	$0, XF_F_ON_CPU(%rsi)		/* prev is off this CPU: last (x86 keeps store order) */
	.cfi_remember_state
	addq	$8, %rsp			/* drop the MXCSR/CW slot */
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	movq	%rdi, %rax			/* hand over: the worker, */
	movq	%rcx, %rdx			/* and the tagged outgoing fiber */
	ret					/* into next, where it called from; predicted
						 * right only if that is where prev called from */
	.cfi_restore_state
3:	ldmxcsr	XF_CTX_MXCSR(%rsp)
	jmp	1b
4:	fldcw	XF_CTX_FCW(%rsp)		/* marks x87 in use; only when it must */
	jmp	2b
.endm

/* The frame of context.h: callee-saved GPRs, room for MXCSR and the rest.
 * The register rules are relative to the CFA, so they stay right across the
 * stack switch: both frames have the same layout below their return address. */
.macro PUSH_FRAME
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -16
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -24
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r12, -32
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r13, -40
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r14, -48
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r15, -56
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
.endm

/*
 * struct xf__switched xf__context_switch(struct xf__worker *w,
 *                                        uintptr_t prev,
 *                                        struct xf_fiber *next,
 *                                        const uint32_t *mxcsr)
 *   rdi  the worker making the switch
 *   rsi  the outgoing fiber, tagged with what to do with it (enum
 *        xf__prev_action in its low bits)
 *   rdx  the incoming fiber; its on_cpu is 0 (the caller waited)
 *   rcx  where the caller stored its MXCSR (nothing since changed it)
 * The caller is at preemption nesting 1 and resumes there.  The incoming
 * context receives rdi and the tagged rsi as its return value (rax:rdx):
 * the worker it now runs on and the fiber to settle, without reading either
 * back from memory (like Boost.Context's transfer_t).
 */
FUNCTION xf__context_switch
	PUSH_FRAME
	movl	(%rcx), %r8d			/* MXCSR, as the caller stored it */
	movl	%r8d, XF_CTX_MXCSR(%rsp)	/* keep it, and r8d to compare */
	movw	$1, XF_CTX_NESTING(%rsp)	/* resume inside the critical section */
	movq	%rsi, %rcx			/* the tagged prev, to hand over */
	andq	$~XF_PREV_ACTION_BITS, %rsi	/* prev itself */
	SWITCH_BODY
END_FUNCTION xf__context_switch

/*
 * void xf_yield(void) - the fast path of the common case: a fiber (not a
 * worker's idle context) yields to the head of its worker's run queue, and
 * nothing needs the scheduler's attention first.  It is xf__yield_slow()
 * (sched/schedule.c) with schedule() inlined and specialised to that case,
 * without the soft mask (this section defers preemption instead); anything
 * else jumps to that C before touching anything.  No stack frame of its
 * own: the switch frame sits right below the caller's return address, so a
 * resumed yield returns straight to its caller.
 */
#ifndef XF_SWITCH_ANNOTATED
PUBLIC_FUNCTION xf_yield
	.cfi_remember_state
	/* MXCSR first of all, into the frame slot PUSH_FRAME will leave free
	 * (red zone until then): the switch reads it back, and the later
	 * the cheaper. */
	stmxcsr	XF_CTX_MXCSR-XF_CTX_RIP(%rsp)
	movq	xf__tls_worker@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rdi		/* w: this thread's worker, */
	testq	%rdi, %rdi
	jz	.Lyield_return			/* or none: not in the runtime */
	movq	XF_W_CURRENT(%rdi), %rsi	/* prev: the calling fiber */
	testl	$XF_FIBER_F_IDLE_BIT, XF_F_FLAGS(%rsi)
	jnz	.Lyield_return			/* the idle context has no one to yield to */
#ifdef XFIBER_DEBUG
	/* Yielding with preemption disabled is a bug of the caller's: the C
	 * path reports it (schedule()'s invariant checks). */
	movq	xf__preempt_word@gottpoff(%rip), %rax
	testl	$XF_PREEMPT_NESTING_BITS, %fs:(%rax)
	jnz	xf__yield_slow
#endif
	/* What C must see to first (xf__runq_poll, release_dead_tiles):
	 * tiles to release, an inbox, a steal request, timers to poll. */
	cmpb	$0, xf__xstate+XF_XSTATE_AMX_GRANTED(%rip)
	jne	xf__yield_slow
	cmpq	$0, XF_W_INBOX(%rdi)
	jne	xf__yield_slow
	cmpl	$0, XF_W_STEAL_REQUEST(%rdi)
	jne	xf__yield_slow
	cmpl	$0, XF_W_TIMERS_NR(%rdi)
	jne	xf__yield_slow
	movq	XF_W_RUNQ_HEAD(%rdi), %rdx	/* next: the head of the run queue */
	testq	%rdx, %rdx
	jz	.Lyield_return			/* nothing else to run: keep going */
	cmpq	%rdx, %rsi
	je	xf__yield_slow			/* queued while running (a timer woke it) */
	cmpl	$0, XF_F_ON_CPU(%rdx)
	jne	xf__yield_slow			/* still switching out elsewhere: C waits */
	/* xf__runq_rotate(w, prev), the same steps: next off the head, prev
	 * onto the tail; the length stays. */
	movq	XF_F_RUN_NEXT(%rdx), %rax	/* the new head: next's successor, */
	testq	%rax, %rax
	cmovzq	%rsi, %rax			/* or prev, when next was alone */
	movq	%rax, XF_W_RUNQ_HEAD(%rdi)
	movq	XF_W_RUNQ_TAIL(%rdi), %rax
	movq	%rsi, XF_F_RUN_NEXT(%rax)	/* prev behind the tail (next, when alone) */
	movq	%rsi, XF_W_RUNQ_TAIL(%rdi)
	movq	$0, XF_F_RUN_NEXT(%rsi)		/* and last */
	leaq	XF_PREV_REQUEUE_TAG(%rsi), %rcx	/* hand over: prev, requeued */
	PUSH_FRAME				/* MXCSR is in its slot already */
	movl	XF_CTX_MXCSR(%rsp), %r8d	/* r8d to compare */
	movw	$0, XF_CTX_NESTING(%rsp)	/* resume outside any critical section */
	SWITCH_BODY
	.cfi_restore_state
.Lyield_return:
	ret
END_FUNCTION xf_yield
#endif

/*
 * void xf__fiber_start(void)
 * Entered by the ret of the first switch into a new fiber, with r12 = the
 * argument given to xf__context_make and rax:rdx = what the switch hands
 * over, at preemption nesting 1.  Never returns.
 */
	.text
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
