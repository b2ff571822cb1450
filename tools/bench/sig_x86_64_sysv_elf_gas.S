/*
 * sig_x86_64_sysv_elf_gas.S - the entry of `xfiber bench sig`'s
 * handler.  At entry %rsp points at the frame's return address, the lowest
 * byte the kernel wrote; the C handler gets it as a fourth argument, so the
 * frame size is measured exactly rather than from inside a C stack frame.
 */
#include "xfiber_internal.h"

	.file	"sig_x86_64_sysv_elf_gas.S"
	.text
FUNCTION xf__bench_sig_entry
	movq	%rsp, %rcx
	jmp	xf__bench_sig_handler		/* same stack: alignment unchanged */
END_FUNCTION xf__bench_sig_entry

	.section .note.GNU-stack,"",%progbits
