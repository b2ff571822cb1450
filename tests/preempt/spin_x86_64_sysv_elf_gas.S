/*
 * spin_x86_64_sysv_elf_gas.S - the preemption selftests' spinner: keeps
 * known values in every register of the chosen classes and checks them on
 * every iteration of a loop that makes no calls, so a preemption at any
 * instruction is caught at once.
 *
 * uint64_t xf_test_spin(const struct xf__regs want[2], rdi
 *                       struct xf__regs *got,         rsi
 *                       unsigned classes,             edx  XF_REGS_* bits
 *                       uint64_t iterations,          rcx
 *                       uint64_t flags,               r8   SPIN_* below
 *                       int64_t *child)               r9   fork: the child's pid
 * Returns 0 when every iteration matched, else the failing iteration + 1
 * with `got` holding what the registers held.  With SPIN_FORK the loop
 * forks halfway; the child checks the rest of the iterations against
 * want[1] and leaves with exit_group(0), or exit_group(3) on a mismatch.
 * want[1] is want[0] as Linux hands it to a forked child: every register
 * kept but TILEDATA, which starts in its init state - zero - because the
 * kernel treats dynamic features as caller-saved across fork and clone
 * (arch/x86/kernel/fpu/core.c, fpu_clone(): "Assume all dynamic features
 * to be defined as caller-saved"; selftests/x86/amx.c, test_fork():
 * "TILEDATA registers are not preserved across fork()").  TILECFG is not
 * dynamic, and is kept.
 *
 * Layout of struct xf__regs: src/xstate/regs.h.  The x87 stack is read
 * with FXSAVE (which leaves it alone) into a scratch area on our stack.
 */
#include "arch/asm.h"
#include "xstate/regs.h"

#define SPIN_GETPPID 1 /* a system call in every iteration */
#define SPIN_FORK 2    /* fork once, halfway */

#define SYS_getppid 110
#define SYS_fork 57
#define SYS_exit_group 231

#define FX_FCW 0   /* in the FXSAVE image */
#define FX_ST 32
#define SCRATCH 512 /* FXSAVE area, 16-aligned, on our stack */

	.file	"spin_x86_64_sysv_elf_gas.S"
	.text

/* Compares len bytes at want+off and got+off; jumps to .Lmismatch if they
 * differ.  Uses rsi, rdi, rcx. */
.macro CMP off, len
	leaq	\off(%r12), %rsi
	leaq	\off(%r13), %rdi
	movl	$\len, %ecx
	repe cmpsb
	jne	.Lmismatch
.endm

FUNCTION xf_test_spin
	PUSH_CALLEE_SAVED
	subq	$SCRATCH+8, %rsp		/* FXSAVE area; keeps rsp 16-aligned */
	.cfi_adjust_cfa_offset SCRATCH+8
	movq	%rdi, %r12			/* want */
	movq	%rsi, %r13			/* got */
	movl	%edx, %r14d			/* classes */
	movq	%rcx, %r15			/* iterations */
	movq	%r8, %rbx			/* flags */
	movq	%r9, %rbp			/* where the child's pid goes */
	movq	$0, (%rbp)
	movq	%r12, %rdi
	movl	%r14d, %esi
	call	xf__regs_load			/* the only call: before the loop */
	xorl	%r8d, %r8d			/* r8 = iteration */
	xorl	%r9d, %r9d			/* r9 = 1 in a forked child */

.Lloop:
	cmpq	%r15, %r8
	jae	.Ldone
	testq	$SPIN_GETPPID, %rbx
	jz	1f
	movl	$SYS_getppid, %eax
	syscall					/* clobbers rax, rcx, r11 only */
1:	testq	$SPIN_FORK, %rbx
	jz	2f
	movq	%r15, %rax
	shrq	$1, %rax
	cmpq	%rax, %r8			/* halfway? */
	jne	2f
	andq	$~SPIN_FORK, %rbx		/* once */
	movl	$SYS_fork, %eax
	syscall
	testq	%rax, %rax
	jnz	3f
	movl	$1, %r9d			/* the child goes on checking, */
	addq	$XF_REGS_SIZE, %r12		/* against want[1] */
	jmp	2f
3:	movq	%rax, (%rbp)			/* the parent records the pid */
2:
	/* --- read every register of the classes into got, and compare --- */
	testl	$XF_REGS_X87, %r14d
	jz	.Lsse
	fxsave64 (%rsp)				/* x87 stack and CW, untouched */
	movzwl	FX_FCW(%rsp), %eax
	movw	%ax, XF_REGS_FCW(%r13)
	.irp n,0,1,2,3,4,5,6,7
	movq	FX_ST+\n*16(%rsp), %rax
	movq	%rax, XF_REGS_ST+\n*16(%r13)
	movzwl	FX_ST+\n*16+8(%rsp), %eax
	movw	%ax, XF_REGS_ST+\n*16+8(%r13)
	.endr
	CMP	XF_REGS_FCW, 2
	.irp n,0,1,2,3,4,5,6,7
	CMP	XF_REGS_ST+\n*16, 10
	.endr
.Lsse:
	testl	$XF_REGS_SSE, %r14d
	jz	.Lvec
	stmxcsr	XF_REGS_MXCSR(%r13)
	CMP	XF_REGS_MXCSR, 4
.Lvec:
	testl	$XF_REGS_AVX512, %r14d
	jnz	.Lzmm
	testl	$XF_REGS_AVX, %r14d
	jnz	.Lymm
	testl	$XF_REGS_SSE, %r14d
	jnz	.Lxmm
	jmp	.Lk
.Lzmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 %zmm\n, XF_REGS_ZMM+\n*64(%r13)
	.endr
	CMP	XF_REGS_ZMM, 32*64
	jmp	.Lk
.Lymm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	%ymm\n, XF_REGS_ZMM+\n*64(%r13)
	CMP	XF_REGS_ZMM+\n*64, 32
	.endr
	jmp	.Lk
.Lxmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	%xmm\n, XF_REGS_ZMM+\n*64(%r13)
	CMP	XF_REGS_ZMM+\n*64, 16
	.endr
.Lk:
	testl	$XF_REGS_OPMASK, %r14d
	jz	.Lamx
	.irp n,0,1,2,3,4,5,6,7
	kmovq	%k\n, XF_REGS_K+\n*8(%r13)
	.endr
	CMP	XF_REGS_K, 64
.Lamx:
	testl	$XF_REGS_AMX, %r14d
	jz	.Lnext
	sttilecfg XF_REGS_TILECFG(%r13)
	movl	$XF_TILE_BYTES_PER_ROW, %ecx
	.irp n,0,1,2,3,4,5,6,7
	leaq	XF_REGS_TILES+\n*XF_TILE_ROWS*XF_TILE_BYTES_PER_ROW(%r13), %rax
	tilestored %tmm\n, (%rax,%rcx,1)
	.endr
	CMP	XF_REGS_TILECFG, 64 + 8*XF_TILE_ROWS*XF_TILE_BYTES_PER_ROW
.Lnext:
	incq	%r8
	jmp	.Lloop

.Ldone:
	xorl	%eax, %eax			/* every iteration matched */
	testl	%r9d, %r9d
	jnz	.Lchild_exit
	jmp	.Lreturn
.Lmismatch:
	leaq	1(%r8), %rax			/* failing iteration + 1 */
	testl	%r9d, %r9d
	jz	.Lreturn
	movl	$3, %eax			/* the child reports by exit status */
.Lchild_exit:
	movl	%eax, %edi
	movl	$SYS_exit_group, %eax
	syscall					/* the child never returns into the runtime */
.Lreturn:
	addq	$SCRATCH+8, %rsp
	.cfi_adjust_cfa_offset -(SCRATCH+8)
	POP_CALLEE_SAVED
	ret
END_FUNCTION xf_test_spin

	.section .note.GNU-stack,"",%progbits
