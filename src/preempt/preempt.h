/*
 * preempt.h - the soft preemption mask, and the preemption machinery's
 * private interface.
 *
 * The mask is one 32-bit word per thread, after Caladan's preempt_cnt:
 *
 *   bit 31  XF_PREEMPT_NOT_PENDING: set while no preemption waits
 *   0..30   nesting depth of xf__preempt_disable()
 *
 * disable adds 1; enable subtracts 1 and branches to the slow path only when
 * the word reaches 0 - nesting back to zero *and* a preemption pending (bit
 * 31 clear).  A preemption signal that finds the word's nesting non-zero
 * clears bit 31 and returns; the enable that ends the critical section then
 * yields.  Both fast paths are one instruction on %fs-relative memory; a
 * signal cannot split it, and only this thread and its signal handlers
 * touch the word.
 *
 * Fibers may not block or yield with preemption disabled (a debug build
 * checks it), so the word needs no saving per fiber: a switch sets it to
 * NOT_PENDING | the nesting the resumed context resumes at - 1 for a
 * context that switched from C, inside the scheduler's own disable, 0 for
 * one that left through xf_yield's assembly fast path, which runs in code
 * where preemption never switches instead of raising the mask; the fiber's
 * on_cpu says which (see arch/switch_x86_64_sysv_elf_gas.S).
 */
#ifndef XF_PREEMPT_PREEMPT_H
#define XF_PREEMPT_PREEMPT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#define XF_PREEMPT_NOT_PENDING 0x80000000u
#define XF_PREEMPT_NESTING     0x7fffffffu

extern __thread uint32_t xf__preempt_word
    __attribute__((visibility("hidden"), tls_model("initial-exec")));

static inline void xf__preempt_disable(void)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "addl $1, %%fs:(%%rax)" ::
			     : "rax", "memory", "cc");
}

/* Takes a pending preemption: a voluntary yield. */
void xf__preempt_slow(void);

static inline void xf__preempt_enable(void)
{
	__asm__ goto("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
		     "subl $1, %%fs:(%%rax)\n\t"
		     "jz %l[slow]" ::
			 : "rax", "memory", "cc"
		     : slow);
	return;
slow:
	xf__preempt_slow();
}

/* Ends a critical section without taking a pending preemption (the caller
 * is about to switch or return from the handler anyway). */
static inline void xf__preempt_enable_no_resched(void)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "subl $1, %%fs:(%%rax)" ::
			     : "rax", "memory", "cc");
}

static inline uint32_t xf__preempt_word_get(void)
{
	uint32_t v;

	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "movl %%fs:(%%rax), %0"
			 : "=r"(v)::"rax", "memory");
	return v;
}

static inline void xf__preempt_word_set(uint32_t v)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "movl %0, %%fs:(%%rax)" ::"r"(v)
			 : "rax", "memory");
}

/* The signal that carries preemption. */
#define XF_PREEMPT_SIGNAL SIGURG

/* What an aimed tick carries (SI_QUEUE's value): the switch count the ticker
 * saw on the worker, plus one so that no tick carries 0.  The ticker sends
 * it, the handler compares it with the worker's count now. */
static inline void *xf__tick_mark(uint64_t switches)
{
	return (void *)(uintptr_t)(switches + 1);
}

struct xf__worker;

/* signal.c */
int xf__preempt_install(void); /* handlers, unsafe text ranges; once per xf_init */
void xf__preempt_uninstall(void);
void xf__preempt_worker_enter(struct xf__worker *w); /* on the worker's thread */
void xf__preempt_signal_unblock(void); /* for this thread */

/* ticker.c */
int xf__ticker_start(void);
void xf__ticker_stop(void);

/* A fiber was queued: wake the ticker if it sleeps long, believing nothing
 * waits anywhere.  One relaxed load when it does not. */
extern _Atomic int xf__ticker_sleeping_long;
void xf__ticker_poke_slow(void);

static inline void xf__ticker_poke(void)
{
	if (__builtin_expect(atomic_load_explicit(&xf__ticker_sleeping_long, memory_order_relaxed),
			     0))
		xf__ticker_poke_slow();
}

#endif
