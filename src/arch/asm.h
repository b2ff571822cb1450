/*
 * asm.h - ELF housekeeping shared by the library's assembly files: a
 * function is global but hidden (not exported from libxfiber.so), typed,
 * sized, 16-byte aligned, and starts with endbr64 so that it is a valid
 * indirect-branch target under CET/IBT.
 */
#ifndef XF_ARCH_ASM_H
#define XF_ARCH_ASM_H

#ifdef __ASSEMBLER__
.macro FUNCTION name
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.align	16
\name:
	.cfi_startproc
	endbr64
.endm

.macro END_FUNCTION name
	.cfi_endproc
	.size	\name, .-\name
.endm
#endif

#endif
