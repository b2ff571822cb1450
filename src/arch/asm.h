/*
 * asm.h - ELF housekeeping shared by the library's assembly files: a
 * function is global but hidden (not exported from libxfiber.so) unless it
 * is public API, typed, sized, 16-byte aligned, and starts with endbr64 so
 * that it is a valid indirect-branch target under CET/IBT.
 */
#ifndef XF_ARCH_ASM_H
#define XF_ARCH_ASM_H

#ifdef __ASSEMBLER__
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
#endif

#endif
