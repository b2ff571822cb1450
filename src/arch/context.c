/* context.c - building the first frame of a new fiber (layout in context.h). */
#include <stdint.h>

#include "arch/context.h"

void *xf__context_make(void *stack_top, void *arg)
{
	/* Below the frame, one empty slot keeps the frame's return address at
	 * an address that is 8 mod 16, as after a call: xf__fiber_start then
	 * starts with the stack alignment a called function expects. */
	struct xf__switch_frame *f =
	    (struct xf__switch_frame *)((uintptr_t)stack_top - 16 - sizeof(*f) + 8);

	*f = (struct xf__switch_frame){
	    .r12 = (uint64_t)(uintptr_t)arg,
	    .rip = (uint64_t)(uintptr_t)xf__fiber_start,
	};
	/* Like a new thread, a new context starts with its creator's MXCSR and
	 * x87 control word, stored straight into the frame: reading back what
	 * stmxcsr stored right away stalls on AMD Zen 4, and fnstcw reads the
	 * control word without marking x87 state in use. */
	__asm__ volatile("stmxcsr %0" : "=m"(f->mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(f->fcw));
	return (char *)f + XF_CTX_BELOW_SP; /* the stack pointer: at r15 */
}
