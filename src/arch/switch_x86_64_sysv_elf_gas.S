/*
 * switch_x86_64_sysv_elf_gas.S - the fiber switch, x86-64 System V ABI, ELF,
 * GNU as: the C scheduler's xf__context_switch, and xf_yield's fast path.
 * The frame a switched-out context leaves on its stack is described in
 * context.h (offsets XF_CTX_*); the C fields used here in layout.h.
 *
 *          -8  MXCSR | -4 x87 CW | -2 unused        (below sp: red zone)
 *   sp ->  +0  r15   +8 r14   +16 r13   +24 r12   +32 rbx   +40 rbp
 *          +48 return address
 *
 * Only the callee-saved state is kept: rbx, rbp, r12-r15, rsp, MXCSR's
 * control bits and the x87 control word.  MXCSR's six exception flags are
 * status, which the ABI makes caller-saved, like the whole x87 status word:
 * they pass from prev to next as they would across any call.  They must:
 * an ldmxcsr that changes the flags makes the next stmxcsr wait ~160 TSC
 * cycles on Sapphire Rapids, so a switch that gave each fiber its own flags
 * back cost 76 ns instead of 5 between a fiber that had raised "inexact" and
 * one that had not (docs/runtime.md).  A preempted fiber gets its whole
 * MXCSR back from its signal frame.  The caller stores MXCSR (stmxcsr) well
 * before the switch reads it: reading back what stmxcsr stored right away
 * is slow on AMD Zen 4.  The control bits and the control word are written
 * only when the incoming ones differ from the outgoing - loading the
 * control word marks x87 state in use (XINUSE bit 0), which would make every
 * later kernel switch and signal frame save x87 state for nothing.  Same
 * idea as the kernel writing PKRU only when it changes, or restoring IF with
 * a conditional STI instead of POPF.
 *
 * Both entries share the two halves of the switch (SWITCH_OUT, SWITCH_IN),
 * which do the whole of the protocol, after Linux's context_switch +
 * finish_task_switch:
 *
 *   outgoing, on worker W:  save errno into prev, publish prev->sp,
 *                           W->current = next, next->on_cpu = ON_CPU,
 *                           count it
 *   incoming (next), on W:  preemption word = NOT_PENDING | the nesting
 *                           next resumes at, errno = next's,
 *                           prev->on_cpu = how prev left
 *
 * A context resumes where it switched from, and that is one of two places,
 * which its on_cpu records when it goes off its CPU:
 *
 *   XF_OFF_CPU          in C (xf__context_switch's caller, or
 *                       xf__fiber_start), at nesting 1, handed the worker
 *                       and the tagged prev in rax:rdx;
 *   XF_OFF_CPU_YIELDED  in the caller of its xf_yield, at nesting 0, handed
 *                       nothing.
 *
 * Both entries read it before the switch and branch on it after: the
 * common case - a yield to a fiber that yielded - stores, loads and hands
 * over nothing else.
 *
 * prev becomes visible to other workers only when its on_cpu leaves ON_CPU,
 * after its registers are on its stack, except a blocked fiber, which its
 * waker may already have queued: whoever picks a fiber first waits for
 * on_cpu != ON_CPU (xf_yield below hands that wait to C).  An exiting
 * fiber's last switch goes only to a context that resumes in C, whose code
 * releases it (sched/schedule.c): xf_yield's frames return straight to
 * their caller and could not.
 *
 * All of it lies in the section xf_nopreempt_text, where a preemption
 * signal never switches (preempt/signal.c): xf_yield's fast path runs at
 * nesting 0 rather than raising the soft mask, and the switch halves run
 * between two fibers.
 *
 * A dump (sched/debug.c) stops switches into fibers while it reads their
 * stacks: each entry sets its worker's in_switch before it looks at
 * xf__world_stopped, and SWITCH_OUT clears it once next is claimed - a
 * byte store and a load, and no fence, which the dump's membarrier makes
 * unnecessary.
 *
 * No system call, no signal-mask change, no XSAVE here.  Stores count: three
 * taken off xf_yield's path made its ping-pong 4-8% faster (docs/benchmarks.md), so
 * errno and the preemption word are written only when they change.
 */
#include "arch/asm.h"
#include "arch/context.h"
#include "arch/layout.h"

	.file	"switch_x86_64_sysv_elf_gas.S"
	.section xf_nopreempt_text, "ax", @progbits

/*
 * The outgoing half of a switch, and the stack switch.  In: rdi w, rsi
 * prev, rdx next, r8d prev's MXCSR; prev's frame pushed and filled but for
 * its control word.  Out, on next's stack: r10 = &errno, eax = prev's
 * errno; rdi, rsi, rdx, rcx as they came; r8d clobbered.  MXCSR's control
 * bits and the control word are reloaded only when they differ, out of line
 * (RELOADS, after the caller's last ret).
 */
.macro SWITCH_OUT tag
	fnstcw	XF_CTX_FCW(%rsp)		/* reading the control word marks nothing in use */
	movzwl	XF_CTX_FCW(%rsp), %r9d		/* keep it to compare */
	movq	XF_W_ERRNO_PTR(%rdi), %r10	/* this thread's errno, */
	movl	(%r10), %eax			/* (kept to compare with next's) */
	cmpl	%eax, XF_F_SAVED_ERRNO(%rsi)	/* which is prev's: errno is per fiber; */
	jne	.Lsave_errno_\tag		/* stored only when it changed */
.Lerrno_saved_\tag:
	movq	%rsp, XF_F_SP(%rsi)		/* publish: prev's context is complete */
	addq	$1, XF_W_SWITCHES(%rdi)		/* stats.switches; only this thread writes it */
	movq	%rdx, XF_W_CURRENT(%rdi)	/* after the count: the ticker reads current
						 * first, and must not pair next with the
						 * old count (it would think next ran a
						 * whole slice) */
	movl	$XF_CPU_STATE_ON, XF_F_ON_CPU(%rdx)
	movb	$0, XF_W_IN_SWITCH(%rdi)	/* next is claimed: a dump sees it running */

	movq	XF_F_SP(%rdx), %rsp		/* switch stacks: now on next */

	xorl	XF_CTX_MXCSR(%rsp), %r8d	/* MXCSR's control bits differ? */
	testl	$XF_MXCSR_CONTROL_BITS, %r8d	/* (rare: reload out of line) */
	jnz	.Lreload_mxcsr_\tag
.Lmxcsr_loaded_\tag:
	cmpw	XF_CTX_FCW(%rsp), %r9w		/* control word differs? */
	jne	.Lreload_fcw_\tag
.Lfcw_loaded_\tag:
.endm

.macro RELOADS tag
.Lsave_errno_\tag:
	movl	%eax, XF_F_SAVED_ERRNO(%rsi)
	jmp	.Lerrno_saved_\tag
.Lreload_mxcsr_\tag:
	andl	$XF_MXCSR_FLAG_BITS, %r8d	/* next's control bits, prev's flags: */
	xorl	XF_CTX_MXCSR(%rsp), %r8d	/* r8d = next ^ ((prev ^ next) & flags) */
	movl	%r8d, XF_CTX_MXCSR(%rsp)
	ldmxcsr	XF_CTX_MXCSR(%rsp)
	jmp	.Lmxcsr_loaded_\tag
.Lreload_fcw_\tag:
	fldcw	XF_CTX_FCW(%rsp)		/* marks x87 in use; only when it must */
	jmp	.Lfcw_loaded_\tag
.endm

/*
 * The incoming half, on next's stack after SWITCH_OUT: the preemption word
 * for where next resumes, next's errno back, prev off this CPU (saying how
 * it left: prev_state), next's registers, and the return into next.  Next
 * resumes either straight in the caller of its xf_yield (in_c 0: nesting 0,
 * nothing handed over) or in the C scheduler that switched it out (in_c 1:
 * nesting 1, worker and tagged prev in rax:rdx, like Boost.Context's
 * transfer_t).  Its on_cpu said which (XF_OFF_CPU or XF_OFF_CPU_YIELDED).
 */
.macro SWITCH_IN in_c, prev_state
	.cfi_remember_state
	movq	xf__preempt_word@gottpoff(%rip), %r11
	/* nothing pending: this switch served it (a store only when the word
	 * says otherwise) */
	cmpl	$(XF_PREEMPT_NOT_PENDING_BIT | \in_c), %fs:(%r11)
	jne	.Lset_word\@
.Lword_set\@:
	cmpl	XF_F_SAVED_ERRNO(%rdx), %eax	/* next's errno: the same as prev's? */
	jne	.Lerrno_differs\@		/* (same thread: r10 holds) */
.Lerrno_restored\@:
	movl	$\prev_state, XF_F_ON_CPU(%rsi)	/* prev is off this CPU: last (x86 keeps
						 * store order) */
	POP_CALLEE_SAVED
.if \in_c
	movq	%rdi, %rax			/* hand over: the worker, */
	movq	%rcx, %rdx			/* and the tagged outgoing fiber */
.endif
	ret					/* into next, where it called from; predicted
						 * right only if that is where prev called from */
	.cfi_restore_state
.Lerrno_differs\@:
	movl	XF_F_SAVED_ERRNO(%rdx), %eax	/* next's errno back */
	movl	%eax, (%r10)
	jmp	.Lerrno_restored\@
.Lset_word\@:
	movl	$(XF_PREEMPT_NOT_PENDING_BIT | \in_c), %fs:(%r11)
	jmp	.Lword_set\@
.endm

/* The frame of context.h is PUSH_CALLEE_SAVED (arch/asm.h): the callee-saved
 * GPRs; MXCSR and the control word go below them, in the red zone.  The
 * register rules are relative to the CFA, so they stay right across the
 * stack switch: both frames have the same layout below their return
 * address. */

/*
 * The rest of xf_yield's way out, once it knows it switches: next runs and
 * prev waits last (runq.h: both stay linked where they are), prev's frame,
 * SWITCH_OUT.  In: rdi w, rsi prev, rdx next; MXCSR already in the frame's
 * slot.
 */
.macro YIELD_TO_NEXT tag
	movq	XF_F_RUN_NEXT(%rdx), %rax	/* xf__runq_rotate: the new head is next's */
	movq	%rax, XF_W_RUNQ_HEAD(%rdi)	/* successor (prev, when next waited alone) */
	movq	%rsi, XF_W_RUNQ_TAIL(%rdi)	/* and prev waits last */
	PUSH_CALLEE_SAVED			/* MXCSR is in its slot already */
	movl	XF_CTX_MXCSR(%rsp), %r8d	/* r8d to compare */
	SWITCH_OUT \tag
.endm

/*
 * struct xf__switched xf__context_switch(struct xf__worker *w,
 *                                        uintptr_t prev,
 *                                        struct xf_fiber *next,
 *                                        const uint32_t *mxcsr)
 *   rdi  the worker making the switch
 *   rsi  the outgoing fiber, tagged with what to do with it (enum
 *        xf__prev_action in its low bits)
 *   rdx  the incoming fiber; it is off its CPU (the caller waited)
 *   rcx  where the caller stored its MXCSR (nothing since changed it)
 * The caller is at preemption nesting 1 and resumes there.  The incoming
 * context, if it resumes in C too, receives rdi and the tagged rsi as its
 * return value (rax:rdx): the worker it now runs on and the fiber to
 * settle, without reading either back from memory.
 */
FUNCTION xf__context_switch
	PUSH_CALLEE_SAVED
	movl	(%rcx), %r8d			/* MXCSR, as the caller stored it */
	movl	%r8d, XF_CTX_MXCSR(%rsp)	/* keep it, and r8d to compare */
	movl	XF_F_ON_CPU(%rdx), %r11d	/* how next left: where it resumes */
	movq	%rsi, %rcx			/* the tagged prev, to hand over */
	andq	$~XF_PREV_ACTION_BITS, %rsi	/* prev itself */
	SWITCH_OUT c
	cmpl	$XF_CPU_STATE_YIELDED, %r11d
	je	.Lresume_yielded_from_c
	SWITCH_IN 1, XF_CPU_STATE_OFF			/* into C */
.Lresume_yielded_from_c:
	SWITCH_IN 0, XF_CPU_STATE_OFF			/* into an xf_yield's caller */
	RELOADS c
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
	/* MXCSR first of all, into its slot below the frame PUSH_CALLEE_SAVED will
	 * push (red zone): the switch reads it back, and the later the
	 * cheaper. */
	stmxcsr	XF_CTX_MXCSR-XF_CTX_RIP(%rsp)
	movq	xf__tls_worker@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rdi		/* w: this thread's worker, */
	testq	%rdi, %rdi
	jz	.Lyield_return			/* or none: not in the runtime */
	movq	XF_W_CURRENT(%rdi), %rsi	/* prev: the calling fiber */
	testl	$XF_FIBER_F_IDLE_BIT, XF_F_FLAGS(%rsi)
	jnz	.Lyield_return			/* the idle context has no one to yield to */
	/* A dump stops switches while it reads switched-out stacks
	 * (sched/debug.c): in_switch first, then the look; the dump's barrier
	 * orders the two for it.  SWITCH_OUT clears in_switch, and so does
	 * every way out before it. */
	movb	$1, XF_W_IN_SWITCH(%rdi)
	cmpl	$0, xf__world_stopped(%rip)
	jne	.Lyield_slow
	/* Yielding with preemption disabled is the caller's misuse: the C path
	 * reports it and does not switch (a switch would end the caller's
	 * critical section: the word is set anew for whoever resumes). */
	movq	xf__preempt_word@gottpoff(%rip), %rax
	testl	$XF_PREEMPT_NESTING_BITS, %fs:(%rax)
	jnz	.Lyield_slow
#ifdef XFIBER_DEBUG
	/* A running fiber that is not in its ring (runq.h) is a bug: the C
	 * path's invariant checks report it. */
	cmpb	$0, XF_W_RUNQ_RUNNING_LINKED(%rdi)
	je	.Lyield_slow
#endif
	/* What C must see to first (xf__runq_poll, release_dead_tiles):
	 * tiles to release, an inbox, a steal request, a timer due. */
	cmpb	$0, xf__xstate+XF_XSTATE_AMX_GRANTED(%rip)
	jne	.Lyield_tiles			/* tiles may be in use: look, now and then */
.Lyield_no_tiles:
	movq	XF_W_INBOX(%rdi), %rax
	orq	XF_W_STEAL_REQUEST(%rdi), %rax	/* and XF_W_DUE, the next 4 bytes */
	jnz	.Lyield_slow
	movq	XF_W_RUNQ_HEAD(%rdi), %rdx	/* next: the first fiber that waits */
	testq	%rdx, %rdx
	jz	.Lyield_none			/* none: keep going */
	cmpl	$XF_CPU_STATE_YIELDED, XF_F_ON_CPU(%rdx) /* how next left: where it resumes */
	jne	.Lyield_into_c
	YIELD_TO_NEXT y				/* the common case: */
	SWITCH_IN 0, XF_CPU_STATE_YIELDED	/* into an xf_yield's caller */
	RELOADS y
	.cfi_restore_state
	.cfi_remember_state
.Lyield_into_c:
	cmpl	$XF_CPU_STATE_ON, XF_F_ON_CPU(%rdx) /* read again: only ON can change, to OFF */
	je	.Lyield_slow			/* still switching out elsewhere: C waits */
	YIELD_TO_NEXT yc
	leaq	XF_PREV_REQUEUE_TAG(%rsi), %rcx	/* hand over prev, requeued */
	SWITCH_IN 1, XF_CPU_STATE_YIELDED	/* into C */
	RELOADS yc
	.cfi_restore_state
.Lyield_slow:
	movb	$0, XF_W_IN_SWITCH(%rdi)	/* C sets it again where it switches */
	jmp	xf__yield_slow
.Lyield_tiles:
	/* AMX granted: XINUSE is looked at every XF_TILES_LOOK_EVERY-th
	 * voluntary switch of this worker, as release_dead_tiles does in C
	 * (schedule.c says why), and only tiles in use send the yield to C. */
	subb	$1, XF_W_TILES_COUNTDOWN(%rdi)	/* borrow: it was 0, look now */
	jnc	.Lyield_no_tiles
	movb	$XF_TILES_LOOK_EVERY-1, XF_W_TILES_COUNTDOWN(%rdi)
	movl	$1, %ecx			/* XGETBV(1): XINUSE in edx:eax */
	xgetbv
	testl	$XF_XINUSE_AMX_BITS, %eax	/* tiles in use: C releases them */
	jz	.Lyield_no_tiles
	movb	$0, XF_W_TILES_COUNTDOWN(%rdi)	/* so that C looks too, and releases */
	jmp	.Lyield_slow
.Lyield_none:
	movb	$0, XF_W_IN_SWITCH(%rdi)
.Lyield_return:
	ret
END_FUNCTION xf_yield
#endif

/*
 * void xf__fiber_start(void)
 * Entered by the ret of the first switch into a new fiber, with r12 = the
 * argument given to xf__context_make and rax:rdx = what the switch hands
 * over, at preemption nesting 1.  Never returns.
 *
 * Its frame is the bottom of the fiber's stack and has a personality
 * routine (sched/cxx.c): an exception that nothing in the fiber catches is
 * reported there, naming the fiber, before std::terminate.  Encoding 0x9b
 * (indirect, pc-relative, signed 4 bytes) through DW.ref, as gcc emits
 * __gxx_personality_v0, so that the reference needs no text relocation.
 */
	.text
FUNCTION xf__fiber_start
	.cfi_personality 0x9b, DW.ref.xf__fiber_personality
	.cfi_undefined rip			/* outermost frame: unwinders stop here */
	xorl	%ebp, %ebp			/* end of the frame-pointer chain */
	movq	%r12, %rdi			/* xf__fiber_main(arg, worker, tagged prev) */
	movq	%rax, %rsi			/* rdx already holds the third argument */
	andq	$-16, %rsp			/* the ABI wants rsp 16-aligned at a call */
	call	xf__fiber_main
	ud2					/* xf__fiber_main never returns */
END_FUNCTION xf__fiber_start

	.hidden	DW.ref.xf__fiber_personality
	.weak	DW.ref.xf__fiber_personality
	.section .data.rel.local.DW.ref.xf__fiber_personality, "awG", @progbits, DW.ref.xf__fiber_personality, comdat
	.align	8
	.type	DW.ref.xf__fiber_personality, @object
	.size	DW.ref.xf__fiber_personality, 8
DW.ref.xf__fiber_personality:
	.quad	xf__fiber_personality		/* the personality's address, for the CIE */

	.section .note.GNU-stack,"",%progbits
