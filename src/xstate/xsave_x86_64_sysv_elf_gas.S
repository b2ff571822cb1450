/*
 * xsave_x86_64_sysv_elf_gas.S - the raw XSAVE-family instructions, one
 * function each, for the x86-64 System V ABI, ELF, GNU as.
 *
 * These are the only places the library executes XSAVE*, XRSTOR, FXSAVE,
 * FXRSTOR, XGETBV, TILERELEASE and VZEROUPPER.  They are leaf functions that
 * touch no vector register of their own, so the state they save is exactly
 * the state their caller had.  The C wrappers around them (engine_nofp.c)
 * are built -mgeneral-regs-only for the same reason.
 *
 * Register state on entry (SysV):
 *   rdi  first argument: the image (64-byte aligned for XSAVE*, 16 for FX*)
 *   rsi  second argument: the requested-feature bitmap (RFBM), where used
 * XSAVE* and XRSTOR take RFBM in edx:eax, hence the split below.
 *
 * The XSAVE header (64 bytes at image + 512):
 *   +0   XSTATE_BV  which components the image carries (written by XSAVE*)
 *   +8   XCOMP_BV   compacted-format bitmap, bit 63 = compacted (XSAVEC writes it)
 *   +16  reserved   must be zero, or XRSTOR raises #GP
 * The standard-form saves (XSAVE, XSAVEOPT) write only the XSTATE_BV bits
 * that RFBM names and leave the rest of the header alone; XSAVEC writes
 * XSTATE_BV and XCOMP_BV but not the reserved bytes.  So the save functions
 * clear the whole header first: stale bits from whatever the buffer held
 * before would otherwise claim components the image does not carry, or make
 * the next XRSTOR fault.
 */

#define XSAVE_HEADER 512 /* offset of the XSAVE header in any image */

#include "arch/asm.h"

	.file	"xsave_x86_64_sysv_elf_gas.S"
	.text

/* Clears the XSAVE header of the image at %rdi; uses no vector register. */
.macro CLEAR_HEADER
	movq	$0, XSAVE_HEADER(%rdi)		/* XSTATE_BV: bits outside RFBM must read 0 */
	movq	$0, XSAVE_HEADER+8(%rdi)	/* XCOMP_BV = 0: standard format unless XSAVEC says otherwise */
	movq	$0, XSAVE_HEADER+16(%rdi)	/* reserved bytes 16..63 must be zero for XRSTOR */
	movq	$0, XSAVE_HEADER+24(%rdi)
	movq	$0, XSAVE_HEADER+32(%rdi)
	movq	$0, XSAVE_HEADER+40(%rdi)
	movq	$0, XSAVE_HEADER+48(%rdi)
	movq	$0, XSAVE_HEADER+56(%rdi)
.endm

/* Splits the RFBM in %rsi into %edx:%eax, as every XSAVE-family instruction wants. */
.macro RFBM_TO_EDX_EAX
	movq	%rsi, %rax			/* low half in eax */
	movq	%rsi, %rdx
	shrq	$32, %rdx			/* high half in edx */
.endm


/* void xf__xsaveopt(void *image, uint64_t rfbm)
 * Standard format; skips components in init state and, when this image was
 * the last one XRSTOR loaded, components unmodified since then. */
FUNCTION xf__xsaveopt
	CLEAR_HEADER
	RFBM_TO_EDX_EAX
	xsaveopt64 (%rdi)			/* save the components in RFBM that are live */
	ret
END_FUNCTION xf__xsaveopt

/* void xf__xsavec(void *image, uint64_t rfbm)
 * Compacted format; skips components in init state. */
FUNCTION xf__xsavec
	CLEAR_HEADER
	RFBM_TO_EDX_EAX
	xsavec64 (%rdi)				/* save live components, packed, and set XCOMP_BV */
	ret
END_FUNCTION xf__xsavec

/* void xf__xsave(void *image, uint64_t rfbm)
 * Standard format; writes every component in RFBM, init or not (slow). */
FUNCTION xf__xsave
	CLEAR_HEADER
	RFBM_TO_EDX_EAX
	xsave64 (%rdi)				/* save everything requested */
	ret
END_FUNCTION xf__xsave

/* void xf__xrstor(const void *image, uint64_t rfbm)
 * Either format (XCOMP_BV bit 63 decides).  Components in RFBM whose
 * XSTATE_BV bit is clear are put into their init state. */
FUNCTION xf__xrstor
	RFBM_TO_EDX_EAX
	xrstor64 (%rdi)				/* load or init every requested component */
	ret
END_FUNCTION xf__xrstor

/* void xf__fxsave(void *image): x87 and SSE only, 512 bytes, 16-byte aligned. */
FUNCTION xf__fxsave
	fxsave64 (%rdi)				/* x87 + MXCSR + XMM0-15 */
	ret
END_FUNCTION xf__fxsave

/* void xf__fxrstor(const void *image) */
FUNCTION xf__fxrstor
	fxrstor64 (%rdi)			/* x87 + MXCSR + XMM0-15 */
	ret
END_FUNCTION xf__fxrstor

/* uint64_t xf__xgetbv(uint32_t index): XCR0 for 0, XINUSE for 1 (if XGETBV1). */
FUNCTION xf__xgetbv
	movl	%edi, %ecx			/* XGETBV reads the register number from ecx */
	xgetbv					/* result in edx:eax */
	shlq	$32, %rdx
	orq	%rdx, %rax			/* combine into rax, the return register */
	ret
END_FUNCTION xf__xgetbv

/* void xf__tilerelease(void): TMM0-7 and TILECFG to init.  #UD without AMX. */
FUNCTION xf__tilerelease
	tilerelease				/* XINUSE bits 17 and 18 become 0 */
	ret
END_FUNCTION xf__tilerelease

/* void xf__vzeroupper(void): upper halves of YMM/ZMM0-15 to zero (XINUSE bits 2, 6). */
FUNCTION xf__vzeroupper
	vzeroupper
	ret
END_FUNCTION xf__vzeroupper

	.section .note.GNU-stack,"",%progbits
