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
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define XF_PREEMPT_NOT_PENDING 0x80000000u
#define XF_PREEMPT_NESTING     0x7fffffffu

extern __thread uint32_t xf__preempt_word
    __attribute__((visibility("hidden"), tls_model("initial-exec")));

static inline __attribute__((always_inline)) void xf__preempt_disable(void)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "addl $1, %%fs:(%%rax)" ::
			     : "rax", "memory", "cc");
}

/* Takes a pending preemption: a voluntary yield. */
void xf__preempt_slow(void);

/* Ends a section: whether that left a preemption to take - the nesting
 * back at 0 with one pending (the word 0). */
static inline __attribute__((always_inline)) bool xf__preempt_enable_pending(void)
{
	__asm__ goto("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
		     "subl $1, %%fs:(%%rax)\n\t"
		     "jz %l[pending]" ::
			 : "rax", "memory", "cc"
		     : pending);
	return false;
pending:
	return true;
}

static inline __attribute__((always_inline)) void xf__preempt_enable(void)
{
	if (xf__preempt_enable_pending())
		xf__preempt_slow();
}

/* Takes a pending preemption only if caller's code may be preempted (not
 * when caller is NULL: the call was libxfiber's own). */
void xf__preempt_slow_for(const void *caller);

/* Ends the section of a C library call that libxfiber replaces, called
 * from caller (its return address): a preemption that came meanwhile is
 * taken there only if caller's code is preemptible.  From libc, or a
 * library marked with xf_preempt_unsafe_add(), it is dropped - the ticker
 * sends it again - and the fiber is not switched away inside that code:
 * OpenSSL's RSA signatures came out wrong when an uncontended
 * pthread_rwlock_wrlock inside it took one. */
static inline __attribute__((always_inline)) void xf__preempt_enable_for(const void *caller)
{
	if (xf__preempt_enable_pending())
		xf__preempt_slow_for(caller);
}

/* Ends a critical section without taking a pending preemption (the caller
 * is about to switch or return from the handler anyway). */
static inline __attribute__((always_inline)) void xf__preempt_enable_no_resched(void)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "subl $1, %%fs:(%%rax)" ::
			     : "rax", "memory", "cc");
}

static inline __attribute__((always_inline)) uint32_t xf__preempt_word_get(void)
{
	uint32_t v;

	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "movl %%fs:(%%rax), %0"
			 : "=r"(v)::"rax", "memory");
	return v;
}

static inline __attribute__((always_inline)) void xf__preempt_word_set(uint32_t v)
{
	__asm__ volatile("movq xf__preempt_word@gottpoff(%%rip), %%rax\n\t"
			 "movl %0, %%fs:(%%rax)" ::"r"(v)
			 : "rax", "memory");
}

/* The signal that carries preemption. */
#define XF_PREEMPT_SIGNAL SIGURG

#include "preempt/tick.h"

struct xf__worker;
struct xf_fiber;

/* signal.c */
int xf__preempt_install(void); /* handlers, the safe-point table; once per xf_init */
void xf__preempt_uninstall(void);
void xf__preempt_worker_enter(struct xf__worker *w); /* on the worker's thread */
void xf__preempt_signal_unblock(void); /* for this thread */
/* The handler proper, entered through signal_entry_x86_64_sysv_elf_gas.S with
 * the soft mask raised; word is the mask as the signal found it. */
void xf__preempt_handler(int sig, siginfo_t *si, void *uc, uint32_t word);
void xf__preempt_entry(int sig, siginfo_t *si, void *uc);

/* safepoint.c: what the code at a pc may hold. */
enum xf__code {
	XF_CODE_SAFE,	 /* the program's own code: preemptible */
	XF_CODE_UNSAFE,	 /* libc and the like, or marked by xf_preempt_unsafe_add() */
	XF_CODE_UNKNOWN, /* in no object the table knows: deferred, the table rebuilt */
};
enum xf__code xf__safepoint_code(uintptr_t pc); /* async-signal-safe */
int xf__safepoints_build(void);
void xf__safepoints_refresh(uint64_t now_ns); /* the ticker: rebuild if stale or changed */
void xf__safepoints_release(void);

/* sigaction.c: the application's signal handlers, beside the runtime's. */
/* Puts the runtime's handler for sig into the kernel, keeping the
 * application's disposition as its view; 0 or an errno. */
int xf__signal_take(int sig, void (*handler)(int, siginfo_t *, void *), int flags,
		    const sigset_t *mask);
void xf__signal_give_back(int sig); /* the application's disposition again */
/* A taken signal that is not the runtime's own: what the application's
 * disposition would have done with it. */
void xf__signal_forward(int sig, siginfo_t *si, void *uc);
void xf__signal_foreign(int sig, siginfo_t *si, void *uc); /* a SIGURG the runtime did not send */
/* Whether the interrupted context uc runs inside an application handler. */
bool xf__signal_in_app_handler(const void *uc);
/* Application signals delivered to this thread so far. */
uint64_t xf__signal_app_count(void);

/* ticker.c */
int xf__ticker_start(void);
void xf__ticker_stop(void);
/* In a forked child: the ticker thread is gone, and nothing to stop. */
void xf__ticker_forget(void);
/* Sends the preemption signal to thread tid carrying value (xf__tick_aimed,
 * or XF_TICK_TAG | XF_TICK_FORCED). */
int xf__tick_send(pid_t tid, uint64_t value);

/* stall.c: a worker stuck inside code that cannot be preempted, reported. */
#define XF_STALL_FRAMES 32
/* What the reporter thread writes: copied by the ticker, which must not
 * wait for the loader's lock or a full pipe itself. */
struct xf__stall_report {
	unsigned worker;
	pid_t tid;
	uint64_t fiber_id;
	char name[32]; /* XF_NAME_MAX */
	const void *fn, *spawn_site;
	char what[160];
	uint64_t mask_added; /* signals blocked besides the workers' mask: never preempted */
	unsigned nr; /* frames in pc, from the interrupted instruction on; 0: none */
	uintptr_t pc[XF_STALL_FRAMES];
};
int xf__stall_configure(void); /* XFIBER_STALL_MS; EINVAL for a bad value */
uint64_t xf__stall_threshold_ns(void); /* XFIBER_STALL_MS in ns; 0: off */
/* With the ticker: the reporter thread, where reports are wanted; stopped
 * (or left, if stuck writing) with it; forgotten in a fork's child. */
int xf__stall_start(void);
void xf__stall_stop(void);
void xf__stall_forget(void);
/* The ticker, at a worker that has not switched since w->tick_since_ns and
 * runs cur on thread tid: reports it once if it is stuck. */
void xf__stall_check(struct xf__worker *w, struct xf_fiber *cur, pid_t tid, uint64_t now,
		     bool others_wait);
/* The handler, at a tick with XF_TICK_REPORT: records the interrupted code's
 * backtrace if the ticker asked this worker for it.  Async-signal-safe. */
void xf__stall_capture(const struct xf__worker *w, const void *uc);

/* A fiber was queued: wake the ticker if it sleeps long, believing nothing
 * waits anywhere.  One relaxed load when it does not. */
extern _Atomic int xf__ticker_sleeping_long;
void xf__ticker_poke_slow(void);
/* Wakes the ticker now, however it sleeps: a steal request to answer. */
void xf__ticker_wake(void);

static inline void xf__ticker_poke(void)
{
	if (__builtin_expect(atomic_load_explicit(&xf__ticker_sleeping_long, memory_order_relaxed),
			     0))
		xf__ticker_poke_slow();
}

#endif
