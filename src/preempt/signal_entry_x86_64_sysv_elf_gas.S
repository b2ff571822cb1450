/*
 * signal_entry_x86_64_sysv_elf_gas.S - where the preemption signal enters,
 * x86-64 System V ABI, ELF, GNU as.
 *
 * The kernel calls the handler as void f(int sig, siginfo_t *si, void *uc)
 * on the interrupted fiber's stack, with rsp + 8 16-byte aligned, as at any
 * call.  The soft mask must be raised before anything else runs: the
 * signal is SA_NODEFER, so a second one may land on any instruction of
 * this one's handler, and must then find either the mask raised or the pc
 * in xf_nopreempt_text - never code it could switch away from.  A C
 * handler cannot promise that at every optimisation level (at -O0 the
 * inline mask helpers become calls into .text), so this entry does it:
 *
 *   entry:  word -> ecx (the C handler's 4th argument), word += 1
 *   C:      xf__preempt_handler(sig, si, uc, word), all of it at nesting >= 1
 *   exit:   word -= 1, without taking what is pending: the return to the
 *           interrupted code (rt_sigreturn) comes next
 *
 * and both ends lie in xf_nopreempt_text.  The C handler may switch away
 * and resume later - always on this thread (preempted fibers do not
 * migrate) - so the word's address is read again after the call.
 */
#include "arch/asm.h"

	.file	"signal_entry_x86_64_sysv_elf_gas.S"
	.section xf_nopreempt_text, "ax", @progbits

/* void xf__preempt_entry(int sig, siginfo_t *si, void *uc) */
FUNCTION xf__preempt_entry
	movq	xf__preempt_word@gottpoff(%rip), %rax	/* the soft mask's TLS offset */
	movl	%fs:(%rax), %ecx		/* as the signal found it: the 4th argument */
	addl	$1, %fs:(%rax)			/* raised: nested signals defer from here */
	subq	$8, %rsp			/* 16-aligned at the call, as the ABI wants */
	.cfi_adjust_cfa_offset 8
	call	xf__preempt_handler		/* (sig, si, uc, word): rdi, rsi, rdx kept */
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	movq	xf__preempt_word@gottpoff(%rip), %rax	/* again: the call may have switched */
	subl	$1, %fs:(%rax)			/* lowered; a pending preemption waits for
						 * the next tick or call into the runtime */
	ret					/* to the kernel's restorer: rt_sigreturn */
END_FUNCTION xf__preempt_entry

	.section .note.GNU-stack,"",%progbits
