/*
 * schedule.c - picking the next fiber and switching to it.
 *
 * The switch protocol (after Linux's context_switch/finish_task_switch):
 *
 *   prev, on worker W:  xf__context_switch(&prev->sp, next->sp, W, prev | action)
 *   next, on W:         finish_switch(what the switch handed over): settle
 *                       prev - leave it queued or blocked, or release its
 *                       stack - and clear its on_cpu
 *
 * prev becomes visible to other workers only in finish_switch, after its
 * registers are on its stack, except a blocked fiber, which its waker may
 * already have queued: whoever picks a fiber first waits for on_cpu == 0.
 */
#include <errno.h>
#include <stdatomic.h>

#include "arch/context.h"
#include "sched/runq.h"
#include "sched/sanitizer.h"
#include "sched/sched.h"
#include "xstate/xstate.h"

struct xf__runtime xf__rt;

__thread struct xf__worker *xf__tls_worker;

/* The uncommon ends of a switch: a fiber that finished. */
static __attribute__((noinline)) void finish_exit(struct xf__worker *w, struct xf_fiber *prev)
{
	/* Its stack is free now that nothing runs on it. */
	xf__stack_put(w, &prev->stack);
	atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
	xf__fiber_finish(prev);
}

#define XF_PREV_ACTION_MASK 3u
_Static_assert(_Alignof(struct xf_fiber) > XF_PREV_ACTION_MASK, "room for the action tag");

/* Settles the fiber that ran on this worker before the current one.  A
 * yielding fiber was already queued (the queue is this worker's alone, so
 * nobody could take it before now), a blocked one waits for its waker: both
 * only need on_cpu cleared. */
static inline void finish_switch(struct xf__switched s)
{
	struct xf_fiber *prev = (struct xf_fiber *)(s.prev & ~(uintptr_t)XF_PREV_ACTION_MASK);

	XF_WARN_ON(s.w != xf__this_worker());
	if (unlikely((s.prev & XF_PREV_ACTION_MASK) == XF_PREV_EXIT)) {
		finish_exit(s.w, prev);
		return;
	}
	atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
}

/* Switches from prev to next; when prev runs again, it leaves the preemption
 * word at word_after: nesting 1 for callers that end their critical section
 * themselves, or 0 for xf_yield, which has nothing left to do in it. */
static inline void switch_to(struct xf__worker *w, struct xf_fiber *prev, struct xf_fiber *next,
			     enum xf__prev_action action, uint32_t word_after,
			     const uint32_t *mxcsr)
{
	/* next may have been woken while still switching out elsewhere. */
	while (unlikely(atomic_load_explicit(&next->on_cpu, memory_order_acquire)))
		__builtin_ia32_pause();
	atomic_store_explicit(&next->on_cpu, 1, memory_order_relaxed);
	XF_STAT_INC(w, switches, 1);
	/* Every switch happens at nesting 1, the scheduler's own: fibers may
	 * not block or yield with preemption disabled (xfiber.h).  So there is
	 * nothing to save; the switch serves any pending preemption. */
	XF_WARN_ON((xf__preempt_word_get() & XF_PREEMPT_NESTING) != 1);
	/* errno is per fiber; both sides store only when the value differs. */
	const int err = *w->errno_ptr;
	if (unlikely(prev->saved_errno != err))
		prev->saved_errno = err;
	/* Read by the ticker from another thread: a relaxed store, free on x86. */
	__atomic_store_n(&w->current, next, __ATOMIC_RELAXED);
	xf__san_switch_start(prev, next, action == XF_PREV_EXIT);
	struct xf__switched s =
	    xf__context_switch(&prev->sp, next->sp, w, (uintptr_t)prev | action, mxcsr);
	/* Back in prev, perhaps on another worker: the switch says which. */
	xf__san_switch_finish(prev);
	finish_switch(s);
	if (unlikely(*s.w->errno_ptr != prev->saved_errno))
		*s.w->errno_ptr = prev->saved_errno;
	/* Last: a preemption taken once the word allows it saves errno
	 * again, so errno must be this fiber's by then. */
	xf__preempt_word_set(word_after);
}

/* At a voluntary switch the ABI makes tiles dead: give them back, so that
 * kernel switches and signal frames skip 8 KB of TILEDATA.  Only where the
 * process may use tiles at all; XGETBV(1) costs ~4 ns. */
static inline void release_dead_tiles(struct xf__worker *w, struct xf_fiber *prev)
{
	if (likely(!xf__xstate.amx_granted) || prev->preempted)
		return;
	if (xf__xgetbv(1) & XF_XFEATURE_MASK_AMX) {
		xf__tilerelease();
		XF_STAT_INC(w, tiles_released, 1);
	}
}

/* The one scheduler decision: who runs next on w.  Inlined into xf_yield,
 * the hottest caller; xf__schedule() is the same for everyone else.
 * *mxcsr is the caller's MXCSR, which it stored first of all.
 * Returns whether it switched (and prev has run again since). */
static inline __attribute__((always_inline)) bool
schedule(struct xf__worker *w, enum xf__prev_action action, uint32_t word_after, uint32_t *mxcsr)
{
	struct xf_fiber *prev = w->current;
	struct xf_fiber *next;

	XF_WARN_ON(!(xf__preempt_word_get() & XF_PREEMPT_NESTING));
	release_dead_tiles(w, prev);
	xf__runq_poll(w);
	next = w->runq.head;
	if (next == prev) {
		/* Woken (by a timer run in the poll above) before it left. */
		xf__runq_pop(w);
		return false;
	}
	if (!next) {
		if (action == XF_PREV_REQUEUE)
			return false; /* nothing else to run: keep going */
		next = w->idle;
	} else if (action == XF_PREV_REQUEUE) {
		xf__runq_rotate(w, prev); /* next off the head, prev onto the tail */
	} else {
		xf__runq_pop(w);
	}
	switch_to(w, prev, next, action, word_after, mxcsr);
	return true;
}

void xf__schedule(struct xf__worker *w, enum xf__prev_action action)
{
	uint32_t mxcsr;

	xf__store_mxcsr(&mxcsr);
	schedule(w, action, XF_PREEMPT_NOT_PENDING | 1, &mxcsr);
}

void xf_yield(void)
{
	uint32_t mxcsr;
	struct xf__worker *w;

	/* First of all: the switch reads it back, and the later the cheaper
	 * (context.h).  A preemption before the disable leaves it valid. */
	xf__store_mxcsr(&mxcsr);
	w = xf__this_worker();
	if (!w || (w->current->flags & XF_FIBER_F_IDLE))
		return;
	xf__preempt_disable();
	/* Switched: the switch served any pending preemption and leaves the
	 * word at nesting 0 - the enable, done.  Not switched: enable. */
	if (!schedule(w, XF_PREV_REQUEUE, XF_PREEMPT_NOT_PENDING, &mxcsr))
		xf__preempt_enable();
}

/* The idle context's way into a fiber it found. */
void xf__switch_from_idle(struct xf__worker *w, struct xf_fiber *next)
{
	uint32_t mxcsr;

	xf__store_mxcsr(&mxcsr);
	switch_to(w, w->idle, next, XF_PREV_NONE, XF_PREEMPT_NOT_PENDING | 1, &mxcsr);
}

_Noreturn void xf__fiber_main(struct xf_fiber *f, struct xf__worker *w, uintptr_t prev)
{
	xf__san_switch_finish(f);
	finish_switch((struct xf__switched){w, prev});
	/* A new context starts inside the scheduler's critical section. */
	xf__preempt_word_set(XF_PREEMPT_NOT_PENDING | 1);
	if (f->flags & XF_FIBER_F_IDLE)
		xf__idle_loop(w); /* worker 0's scheduler context: never returns */
	*w->errno_ptr = 0;
	xf__preempt_enable();
	xf__fiber_exit(f, f->fn(f->arg));
}

void xf__wake(struct xf_fiber *f)
{
	struct xf__worker *w, *home = &xf__rt.workers[f->home];

	xf__preempt_disable(); /* the run queue is this worker's alone */
	xf__ticker_poke();
	w = xf__this_worker();
	if (w && (!(f->flags & XF_FIBER_F_PINNED) || home == w)) {
		f->home = (int)w->id; /* where it will run: its home from now on */
		xf__runq_push(w, f);
		xf__maybe_wake_idle(w);
	} else {
		xf__inbox_push(home, f);
		xf__worker_kick(home);
	}
	xf__preempt_enable();
}

int xf__wait_block(struct xf_fiber *self, uint64_t timeout_ns, _Atomic uint32_t *unlock)
{
	struct xf__worker *w;
	int state;

	/* With a lock, its disable carries us into the switch: a preemption
	 * between the unlock and the switch would queue a fiber that its
	 * waker may queue too. */
	if (!unlock)
		xf__preempt_disable();
	w = xf__this_worker();
	if (timeout_ns)
		xf__timer_arm(w, self, xf__now_ns() + timeout_ns);
	if (unlock)
		xf__spin_unlock_raw(unlock);
	xf__schedule(w, XF_PREV_BLOCK);
	xf__preempt_enable();
	state = atomic_load_explicit(&self->wait_state, memory_order_acquire);
	if (timeout_ns && state != XF_WAIT_TIMEDOUT)
		xf__timer_cancel(self);
	XF_WARN_ON(state == XF_WAIT_WAITING);
	return state;
}

int xf__wait_cancel(struct xf_fiber *self)
{
	/* Nobody claimed the wait yet: take it back and go on running. */
	if (xf__wait_claim(self, XF_WAIT_NONE))
		return XF_WAIT_NONE;
	/* A waker won and is queueing us: consume that wake-up. */
	return xf__wait_block(self, 0, NULL);
}
