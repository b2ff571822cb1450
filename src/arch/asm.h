/*
 * asm.h - ELF housekeeping shared by the library's assembly files: a
 * function is global but hidden (not exported from libxfiber.so) unless it
 * is public API, typed, sized, 16-byte aligned, and starts with endbr64 so
 * that it is a valid indirect-branch target under CET/IBT; and a register
 * pushed or popped with the note that lets an unwinder (gdb, the dump, C++
 * exceptions) find it.  The xfiber command's and the tests' assembly use
 * it too (through xfiber_internal.h for the command).
 */
#ifndef XF_ARCH_ASM_H
#define XF_ARCH_ASM_H

#ifdef __ASSEMBLER__
/* Assembler macros, which clang-format would take for C: */
/* clang-format off */
/* A function that is part of the public API (xfiber.h). */
.macro PUBLIC_FUNCTION name
	.globl	\name
	.type	\name, @function
	.align	16
\name:
	.cfi_startproc
	endbr64
.endm

/* Any other: not exported. */
.macro FUNCTION name
	.hidden	\name
	PUBLIC_FUNCTION \name
.endm

.macro END_FUNCTION name
	.cfi_endproc
	.size	\name, .-\name
.endm

/* Pushes a register: the CFA is 8 further from rsp, and the caller's value
 * of reg is at the new top.  The rule is relative to the CFA, so it stays
 * right across a stack switch to a frame of the same layout. */
.macro PUSH_CFI reg
	pushq	\reg
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset \reg, 0
.endm

/* Pops one back: the CFA is 8 nearer, and reg holds the caller's value. */
.macro POP_CFI reg
	popq	\reg
	.cfi_adjust_cfa_offset -8
	.cfi_restore \reg
.endm
/* The SysV ABI's callee-saved registers, pushed in the order of the
 * switch frame (arch/context.h: rbp highest, r15 lowest), and popped. */
.macro PUSH_CALLEE_SAVED
	PUSH_CFI	%rbp
	PUSH_CFI	%rbx
	PUSH_CFI	%r12
	PUSH_CFI	%r13
	PUSH_CFI	%r14
	PUSH_CFI	%r15
.endm

.macro POP_CALLEE_SAVED
	POP_CFI	%r15
	POP_CFI	%r14
	POP_CFI	%r13
	POP_CFI	%r12
	POP_CFI	%rbx
	POP_CFI	%rbp
.endm
/* clang-format on */
#endif

#endif
