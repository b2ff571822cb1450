/*
 * sanitizer.h - telling ASan and TSan about stack switches.
 *
 * ASan must know which stack is live to keep its fake stacks and stack
 * shadow straight; TSan needs one "fiber" object per context.  Both compile
 * to nothing unless the build uses that sanitizer.
 */
#ifndef XF_SCHED_SANITIZER_H
#define XF_SCHED_SANITIZER_H

#include "sched/sched.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

static inline void xf__san_switch_start(struct xf_fiber *prev, struct xf_fiber *next,
					bool prev_dies)
{
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_start_switch_fiber(prev_dies ? NULL : &prev->asan_fake_stack, next->stack.base,
				       next->stack.size);
#endif
#if defined(__SANITIZE_THREAD__)
	/* The switch assembly clears prev's on_cpu, which TSan cannot see;
	 * whoever picks prev next acquires it, so release it here. */
	__tsan_release(&prev->on_cpu);
	__tsan_switch_to_fiber(next->tsan_fiber, 0);
#endif
	(void)prev;
	(void)next;
	(void)prev_dies;
}

static inline void xf__san_switch_finish(struct xf_fiber *self)
{
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_finish_switch_fiber(self->asan_fake_stack, NULL, NULL);
#endif
	(void)self;
}

/* A fresh context for a new fiber, and its end. */
static inline void xf__san_fiber_create(struct xf_fiber *f)
{
#if defined(__SANITIZE_THREAD__)
	f->tsan_fiber = __tsan_create_fiber(0);
#endif
#if defined(__SANITIZE_ADDRESS__)
	/* A reused stack still carries the poison of its last fiber's frames. */
	if (f->stack.base)
		__asan_unpoison_memory_region(f->stack.base, f->stack.size);
#endif
	(void)f;
}

static inline void xf__san_fiber_destroy(struct xf_fiber *f)
{
#if defined(__SANITIZE_THREAD__)
	if (f->tsan_fiber)
		__tsan_destroy_fiber(f->tsan_fiber);
	f->tsan_fiber = NULL;
#endif
	(void)f;
}

/* The context of a thread that becomes a worker or the first fiber. */
static inline void xf__san_thread_context(struct xf_fiber *f)
{
#if defined(__SANITIZE_THREAD__)
	f->tsan_fiber = __tsan_get_current_fiber();
#endif
	(void)f;
}

#endif
