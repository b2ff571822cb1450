/*
 * regs_x86_64_sysv_elf_gas.S - load and store a whole register file
 * (struct xf__regs, layout in regs.h) for tests and benchmarks.
 *
 * void xf__regs_load(const struct xf__regs *r, unsigned classes)
 * void xf__regs_store(struct xf__regs *r, unsigned classes)
 *   rdi  r, 64-byte aligned
 *   esi  classes, XF_REGS_* bits
 *
 * For the vector classes the widest one asked for wins: AVX512 moves all of
 * ZMM0-31, AVX moves YMM0-15, SSE moves XMM0-15 with legacy-SSE moves that
 * leave the upper halves alone.  Only rax, rcx, rdx, rsi (caller-saved) are
 * used besides the registers being moved.
 */
#include "xstate/regs.h"

#include "arch/asm.h"

	.file	"regs_x86_64_sysv_elf_gas.S"
	.text

FUNCTION xf__regs_load
	testl	$XF_REGS_X87, %esi
	jz	1f
	fninit					/* empty the stack so eight loads fit */
	fldcw	XF_REGS_FCW(%rdi)
	fldt	XF_REGS_ST+7*16(%rdi)		/* load ST(7) first: each load pushes */
	fldt	XF_REGS_ST+6*16(%rdi)
	fldt	XF_REGS_ST+5*16(%rdi)
	fldt	XF_REGS_ST+4*16(%rdi)
	fldt	XF_REGS_ST+3*16(%rdi)
	fldt	XF_REGS_ST+2*16(%rdi)
	fldt	XF_REGS_ST+1*16(%rdi)
	fldt	XF_REGS_ST+0*16(%rdi)		/* ...so slot 0 ends up in ST(0) */
1:	testl	$XF_REGS_SSE, %esi
	jz	2f
	ldmxcsr	XF_REGS_MXCSR(%rdi)
2:	testl	$XF_REGS_AVX512, %esi
	jnz	.Lload_zmm
	testl	$XF_REGS_AVX, %esi
	jnz	.Lload_ymm
	testl	$XF_REGS_SSE, %esi
	jnz	.Lload_xmm
	jmp	.Lload_k
.Lload_zmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 XF_REGS_ZMM+\n*64(%rdi), %zmm\n
	.endr
	jmp	.Lload_k
.Lload_ymm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	XF_REGS_ZMM+\n*64(%rdi), %ymm\n
	.endr
	jmp	.Lload_k
.Lload_xmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	XF_REGS_ZMM+\n*64(%rdi), %xmm\n	/* legacy encoding: upper halves untouched */
	.endr
.Lload_k:
	testl	$XF_REGS_OPMASK, %esi
	jz	.Lload_amx
	.irp n,0,1,2,3,4,5,6,7
	kmovq	XF_REGS_K+\n*8(%rdi), %k\n
	.endr
.Lload_amx:
	testl	$XF_REGS_AMX, %esi
	jz	.Lload_done
	ldtilecfg XF_REGS_TILECFG(%rdi)
	movl	$XF_TILE_BYTES_PER_ROW, %ecx	/* row stride */
	.irp n,0,1,2,3,4,5,6,7
	leaq	XF_REGS_TILES+\n*XF_TILE_ROWS*XF_TILE_BYTES_PER_ROW(%rdi), %rax
	tileloadd (%rax,%rcx,1), %tmm\n
	.endr
.Lload_done:
	ret
END_FUNCTION xf__regs_load

FUNCTION xf__regs_store
	testl	$XF_REGS_X87, %esi
	jz	1f
	fnstcw	XF_REGS_FCW(%rdi)
	fstpt	XF_REGS_ST+0*16(%rdi)		/* pops: ST(0) first, as loaded last */
	fstpt	XF_REGS_ST+1*16(%rdi)
	fstpt	XF_REGS_ST+2*16(%rdi)
	fstpt	XF_REGS_ST+3*16(%rdi)
	fstpt	XF_REGS_ST+4*16(%rdi)
	fstpt	XF_REGS_ST+5*16(%rdi)
	fstpt	XF_REGS_ST+6*16(%rdi)
	fstpt	XF_REGS_ST+7*16(%rdi)
1:	testl	$XF_REGS_SSE, %esi
	jz	2f
	stmxcsr	XF_REGS_MXCSR(%rdi)
2:	testl	$XF_REGS_AVX512, %esi
	jnz	.Lstore_zmm
	testl	$XF_REGS_AVX, %esi
	jnz	.Lstore_ymm
	testl	$XF_REGS_SSE, %esi
	jnz	.Lstore_xmm
	jmp	.Lstore_k
.Lstore_zmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 %zmm\n, XF_REGS_ZMM+\n*64(%rdi)
	.endr
	jmp	.Lstore_k
.Lstore_ymm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	%ymm\n, XF_REGS_ZMM+\n*64(%rdi)
	.endr
	jmp	.Lstore_k
.Lstore_xmm:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	%xmm\n, XF_REGS_ZMM+\n*64(%rdi)
	.endr
.Lstore_k:
	testl	$XF_REGS_OPMASK, %esi
	jz	.Lstore_amx
	.irp n,0,1,2,3,4,5,6,7
	kmovq	%k\n, XF_REGS_K+\n*8(%rdi)
	.endr
.Lstore_amx:
	testl	$XF_REGS_AMX, %esi
	jz	.Lstore_done
	sttilecfg XF_REGS_TILECFG(%rdi)
	movl	$XF_TILE_BYTES_PER_ROW, %ecx
	.irp n,0,1,2,3,4,5,6,7
	leaq	XF_REGS_TILES+\n*XF_TILE_ROWS*XF_TILE_BYTES_PER_ROW(%rdi), %rax
	tilestored %tmm\n, (%rax,%rcx,1)
	.endr
.Lstore_done:
	ret
END_FUNCTION xf__regs_store

	.section .note.GNU-stack,"",%progbits
