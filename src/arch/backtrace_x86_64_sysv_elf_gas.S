/*
 * backtrace_x86_64_sysv_elf_gas.S - a backtrace of a switched-out fiber with
 * the C library's own unwinder, x86-64 System V ABI, ELF, GNU as.
 *
 * libgcc's _Unwind_Backtrace walks the stack it is called on, from its
 * caller up.  A switched-out fiber is not on that stack, but its switch
 * frame (context.h) holds exactly what an unwinder needs to step into its
 * code: the callee-saved registers, the stack pointer and the return
 * address.  So this function calls _Unwind_Backtrace with call-frame
 * information that says "my caller is that fiber": the canonical frame
 * address is the fiber's stack pointer + XF_CTX_SIZE - 8 (right above the
 * return address), and each register's saved value sits where the switch
 * pushed it.  The unwinder steps from here into the fiber's own frames and
 * on through them - through a preemption's kernel signal frame too, which
 * it recognises by the restorer's code - and never back into the real
 * caller.  It only reads the fiber's stack; the caller makes sure that no
 * worker resumes the fiber meanwhile (sched/debug.c).
 *
 * The frame, with r12 = the fiber's saved stack pointer (sp):
 *
 *   value                  where          rule (CFA = r12 + 56)
 *   return address         sp + 48        CFA - 8
 *   rbp                    sp + 40        CFA - 16
 *   rbx                    sp + 32        CFA - 24
 *   r12                    sp + 24        CFA - 32
 *   r13                    sp + 16        CFA - 40
 *   r14                    sp + 8         CFA - 48
 *   r15                    sp + 0         CFA - 56
 *   rsp                    the CFA itself, as after the switch's ret
 */
#include "arch/asm.h"
#include "arch/context.h"

	.file	"backtrace_x86_64_sysv_elf_gas.S"
	.text

/* _Unwind_Reason_Code xf__backtrace_switched(const void *sp,
 *                                            _Unwind_Trace_Fn fn, void *arg)
 * Calls _Unwind_Backtrace(fn, arg) as if called by the fiber switched out
 * at sp; its first frames are this function's and the unwinder's, which fn
 * skips. */
FUNCTION xf__backtrace_switched
	PUSH_CFI	%r12				/* ours, callee-saved: back before the ret */
	.cfi_remember_state
	movq	%rdi, %r12			/* the fiber's sp, kept across the call */
	/* From here the caller is the fiber: the rules of the table above. */
	.cfi_def_cfa %r12, XF_CTX_RIP + 8
	.cfi_offset %rip, -8
	.cfi_offset %rbp, -16
	.cfi_offset %rbx, -24
	.cfi_offset %r12, -32
	.cfi_offset %r13, -40
	.cfi_offset %r14, -48
	.cfi_offset %r15, -56
	movq	%rsi, %rdi			/* fn */
	movq	%rdx, %rsi			/* arg */
	call	_Unwind_Backtrace@PLT		/* rsp is 16-aligned: the push above */
	.cfi_restore_state			/* our own frame again, */
	POP_CFI	%r12				/* and the caller's r12 */
	ret
END_FUNCTION xf__backtrace_switched

	.section .note.GNU-stack,"",%progbits
