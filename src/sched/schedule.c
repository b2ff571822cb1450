/*
 * schedule.c - picking the next fiber and switching to it.
 *
 * The switch itself - errno, on_cpu, the current fiber, the preemption word
 * on both sides - is xf__context_switch (arch/switch_x86_64_sysv_elf_gas.S,
 * where the protocol is written down).  What is left here is the decision
 * and what only C can do after a switch: an exited fiber's stack and
 * joiner.  Only a context that resumes in C may receive an exit, so an
 * exiting fiber's last switch goes to the next fiber only when that one
 * resumes in C (a new fiber, or one that blocked); else to its worker's
 * idle context.  xf_yield's frames return from the switch straight to
 * their caller and could not release it.
 *
 * xf_yield's common case is that assembly's own fast path; everything else
 * comes through xf__yield_slow() here.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include "common/probes.h"
#include "arch/context.h"
#include "arch/layout.h"
#include "sched/runq.h"
#include "sched/sanitizer.h"
#include "sched/sched.h"
#include "xstate/xstate.h"

struct xf__runtime xf__rt;

__thread struct xf__worker *xf__tls_worker;

#define XF_PREV_ACTION_MASK 3u
_Static_assert(_Alignof(struct xf_fiber) > XF_PREV_ACTION_MASK, "room for the action tag");

/* Everything the switch assembly assumes (arch/layout.h). */
_Static_assert(offsetof(struct xf_fiber, flags) == XF_F_FLAGS, "layout.h");
_Static_assert(offsetof(struct xf_fiber, sp) == XF_F_SP, "layout.h");
_Static_assert(offsetof(struct xf_fiber, on_cpu) == XF_F_ON_CPU, "layout.h");
_Static_assert(offsetof(struct xf_fiber, saved_errno) == XF_F_SAVED_ERRNO, "layout.h");
_Static_assert(offsetof(struct xf_fiber, run_next) == XF_F_RUN_NEXT, "layout.h");
_Static_assert(offsetof(struct xf__worker, current) == XF_W_CURRENT, "layout.h");
_Static_assert(offsetof(struct xf__worker, runq.head) == XF_W_RUNQ_HEAD, "layout.h");
_Static_assert(offsetof(struct xf__worker, runq.tail) == XF_W_RUNQ_TAIL, "layout.h");
_Static_assert(offsetof(struct xf__worker, runq.running_linked) == XF_W_RUNQ_RUNNING_LINKED,
	       "layout.h");
_Static_assert(sizeof(((struct xf__worker *)0)->runq.running_linked) == 1, "layout.h: cmpb");
_Static_assert(offsetof(struct xf__worker, errno_ptr) == XF_W_ERRNO_PTR, "layout.h");
_Static_assert(offsetof(struct xf__worker, in_switch) == XF_W_IN_SWITCH, "layout.h");
_Static_assert(offsetof(struct xf__worker, tiles_countdown) == XF_W_TILES_COUNTDOWN, "layout.h");
_Static_assert(sizeof(((struct xf__worker *)0)->tiles_countdown) == 1, "layout.h: subb");
_Static_assert(XF_XFEATURE_MASK_AMX == XF_XINUSE_AMX_BITS, "layout.h");
_Static_assert(sizeof(xf__world_stopped) == 4, "layout.h: cmpl");
_Static_assert(offsetof(struct xf__worker, inbox) == XF_W_INBOX, "layout.h");
_Static_assert(offsetof(struct xf__worker, steal_request) == XF_W_STEAL_REQUEST, "layout.h");
_Static_assert(offsetof(struct xf__worker, due) == XF_W_DUE, "layout.h");
_Static_assert(offsetof(struct xf__worker, stats.switches) == XF_W_SWITCHES, "layout.h");
_Static_assert(offsetof(struct xf__xstate, amx_granted) == XF_XSTATE_AMX_GRANTED, "layout.h");
_Static_assert(sizeof(((struct xf_fiber *)0)->saved_errno) == 4, "layout.h: movl");
_Static_assert(sizeof(((struct xf_fiber *)0)->on_cpu) == 4, "layout.h: movl");
_Static_assert(sizeof(((struct xf__worker *)0)->steal_request) == 4, "layout.h: cmpl");
_Static_assert(sizeof(((struct xf__worker *)0)->due) == 4, "layout.h: one 8-byte load");
_Static_assert(XF_W_DUE == XF_W_STEAL_REQUEST + 4, "layout.h: one 8-byte load");
_Static_assert(sizeof(((struct xf__xstate *)0)->amx_granted) == 1, "layout.h: cmpb");
_Static_assert(XF_FIBER_F_IDLE == XF_FIBER_F_IDLE_BIT, "layout.h");
_Static_assert(XF_PREV_ACTION_MASK == XF_PREV_ACTION_BITS, "layout.h");
_Static_assert(XF_PREV_REQUEUE == XF_PREV_REQUEUE_TAG, "layout.h");
_Static_assert(XF_ON_CPU == XF_CPU_STATE_ON && XF_OFF_CPU == XF_CPU_STATE_OFF &&
		   XF_OFF_CPU_YIELDED == XF_CPU_STATE_YIELDED,
	       "layout.h");
_Static_assert(XF_PREEMPT_NOT_PENDING == XF_PREEMPT_NOT_PENDING_BIT, "layout.h");
_Static_assert(XF_PREEMPT_NESTING == XF_PREEMPT_NESTING_BITS, "layout.h");

/* The uncommon end of a switch: a fiber that finished. */
static __attribute__((noinline)) void finish_exit(struct xf__worker *w, struct xf_fiber *prev)
{
	/* Its stack is free now that nothing runs on it. */
	xf__stack_put(w, &prev->stack);
	xf__fiber_finish(prev);
}

/* What C does with what a switch handed over; the switch did the rest. */
static inline void finish_switch(struct xf__switched s)
{
	XF_WARN_ON(s.w != xf__this_worker());
	if (unlikely((s.prev & XF_PREV_ACTION_MASK) == XF_PREV_EXIT))
		finish_exit(s.w, (struct xf_fiber *)(s.prev & ~(uintptr_t)XF_PREV_ACTION_MASK));
}

/* Waits up to `pauses` pauses (UINT64_MAX: for good) for f to get off its
 * CPU; whether it did.  Out of line: the spin would otherwise cost the hot
 * path a register. */
static __attribute__((noinline)) bool wait_off_cpu(struct xf_fiber *f, uint64_t pauses)
{
	for (uint64_t i = 0; atomic_load_explicit(&f->on_cpu, memory_order_acquire) == XF_ON_CPU;
	     i++) {
		if (i == pauses)
			return false;
		__builtin_ia32_pause();
	}
	return true;
}

/* Switches from prev to next.  Called and resumed at nesting 1. */
static inline void switch_to(struct xf__worker *w, struct xf_fiber *prev, struct xf_fiber *next,
			     enum xf__prev_action action, const uint32_t *mxcsr)
{
	/* next may have been woken while still switching out elsewhere. */
	if (unlikely(atomic_load_explicit(&next->on_cpu, memory_order_acquire) == XF_ON_CPU))
		wait_off_cpu(next, UINT64_MAX);
	/* Every switch from C happens at nesting 1, the scheduler's own:
	 * fibers may not block or yield with preemption disabled (xfiber.h). */
	XF_WARN_ON((xf__preempt_word_get() & XF_PREEMPT_NESTING) != 1);
	XF_WARN_ON(action == XF_PREV_EXIT &&
		   atomic_load_explicit(&next->on_cpu, memory_order_relaxed) != XF_OFF_CPU);
	/* A dump stops switches while it reads switched-out stacks (debug.c):
	 * in_switch first, then the look; the dump's barrier orders the two
	 * for it, so no fence here. */
	atomic_store_explicit(&w->in_switch, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(atomic_load_explicit(&xf__world_stopped, memory_order_relaxed)))
		xf__world_wait(w);
	XF_PROBE3(fiber__switch, prev->id, next->id, w->id);
	xf__san_switch_start(prev, next, action == XF_PREV_EXIT);
	struct xf__switched s = xf__context_switch(w, (uintptr_t)prev | action, next, mxcsr);
	/* Back in prev, perhaps on another worker: the switch says which. */
	xf__san_switch_finish(prev);
	finish_switch(s);
}

/* At a voluntary switch the ABI makes tiles dead: give them back, so that
 * kernel switches and signal frames skip 8 KB of TILEDATA.  Only where the
 * process may use tiles at all, and at every XF_TILES_LOOK_EVERY-th switch
 * of the worker (xf_yield's assembly counts down the same byte): XGETBV(1)
 * costs ~4 ns on the Intel guest and ~14 on the AMD one, more than a yield,
 * which once took C's path at every yield of a process allowed AMX - 3.3x
 * the minimal switch in `bench ctx` there, as the bench asks for AMX (issue
 * 31).  Dead tiles stay in use for up to 15 more switches of this worker. */
static inline void release_dead_tiles(struct xf__worker *w, struct xf_fiber *prev)
{
	if (likely(!xf__xstate.amx_granted) || prev->preempted)
		return;
	if (w->tiles_countdown) {
		w->tiles_countdown--;
		return;
	}
	w->tiles_countdown = XF_TILES_LOOK_EVERY - 1;
	if (xf__xgetbv(1) & XF_XFEATURE_MASK_AMX) {
		xf__tilerelease();
		XF_STAT_INC(w, tiles_released, 1);
	}
}

/* Whether queued fiber f resumes in C, where an exit can be handed over
 * (finish_switch).  Off its CPU in C stays so until this worker, whose
 * queue holds f, switches to it. */
static inline bool resumes_in_c(struct xf_fiber *f)
{
	return atomic_load_explicit(&f->on_cpu, memory_order_acquire) == XF_OFF_CPU;
}

/* With thousands of fibers queued (a burst of spawns), the next switch's
 * first load from the stack of the fiber waiting first misses the caches
 * and the TLB: ask for that line now, and for the fiber after it, whose
 * saved stack pointer the next call reads. */
static inline void prefetch_in_line(struct xf__worker *w)
{
	struct xf_fiber *after = w->runq.head;

	if (after) {
		__builtin_prefetch(after->sp);
		__builtin_prefetch(after->run_next);
	}
}

/*
 * Long work steps aside for short, the way Linux's SCHED_BATCH, its
 * wake-up preemption and Shinjuku put it behind short.  Two kinds:
 *   - a batch fiber (xf_fiber_set_batch) preempted while any other fiber
 *     waits in its worker's ring;
 *   - any other preempted fiber, unless xf_config.round_robin, while a
 *     fiber just woken or spawned waits there (latency_critical): a short
 *     request's, whose bytes came while a long one ran; not while it holds
 *     an xf_mutex or a lock of its thread, whose waiters would wait too.
 * It leaves the ring for its worker's line (xf__step_aside), and the
 * preempted or batch fibers queued ahead of the one it steps aside for,
 * which would otherwise run a slice each before it, get out of its way
 * (line_clear_the_way).  The line comes back into the ring
 *   - all of it, when the ring runs dry (a block, an exit, or a yield with
 *     nobody else waiting): its fibers then share the worker round robin,
 *     and
 *   - each fiber once it has waited XF_WOKEN_FIRST_WAIT_SLICES slices, or
 *     XF_BATCH_WAIT_SLICES for batch work (looked at by every decision
 *     while the line is not empty, and the ticker keeps deciding
 *     meanwhile): fibers that keep the worker busy leave every long fiber
 *     at least one slice in five, batch work one in ten.  Each class waits
 *     in a queue of its own, oldest first, so only the first of each is
 *     looked at.
 * A fiber that yields is not latency-critical: a loop that yields while it
 * waits for a CPU-bound fiber's result would otherwise keep that fiber in
 * the line; nor is one preempted since its last wake-up, which ran a whole
 * slice then.  Nothing else moves a fiber of the line: nobody wakes it, as
 * it waits for nothing, and no thief sees it.  While it is not empty,
 * XF_DUE_LINE sends every xf_yield to C, where a yield that finds nobody
 * else lets the line back (xf__yield_slow); a preemption does not, or the
 * ticker, which preempts for the line's sake, would undo it every slice.
 */
static void line_push_all(struct xf__worker *w, struct xf_fiber **head, struct xf_fiber **tail)
{
	for (struct xf_fiber *f = *head, *after; f; f = after) {
		after = f->line_next;
		__atomic_store_n(&f->line_since_ns, 0, __ATOMIC_RELAXED);
		xf__runq_push(w, f);
	}
	*head = *tail = NULL;
}

/* The fibers of one queue of the line that have waited wait_slices. */
static void line_push_due(struct xf__worker *w, struct xf_fiber **head, struct xf_fiber **tail,
			  unsigned wait_slices, uint64_t now)
{
	const uint64_t wait_ns = (uint64_t)wait_slices * xf__rt.slice_us * 1000;
	struct xf_fiber *f;

	while ((f = *head) && now - f->line_since_ns >= wait_ns) {
		*head = f->line_next;
		if (!*head)
			*tail = NULL;
		__atomic_store_n(&f->line_since_ns, 0, __ATOMIC_RELAXED);
		xf__runq_push(w, f);
		XF_STAT_INC(w, batch_starved, 1);
	}
}

static __attribute__((noinline)) void line_release(struct xf__worker *w, bool ring_dry)
{
	if (ring_dry && !w->runq.head) {
		line_push_all(w, &w->aside_head, &w->aside_tail);
		line_push_all(w, &w->batch_head, &w->batch_tail);
	} else {
		uint64_t now = xf__now_ns();

		line_push_due(w, &w->aside_head, &w->aside_tail, XF_WOKEN_FIRST_WAIT_SLICES, now);
		line_push_due(w, &w->batch_head, &w->batch_tail, XF_BATCH_WAIT_SLICES, now);
	}
	/* The bit again, which xf__runq_poll took; or the line is empty, and
	 * the ticker, which reads line_waiting, stops looking for its sake. */
	if (w->aside_head || w->batch_head)
		atomic_fetch_or_explicit(&w->due, XF_DUE_LINE, memory_order_relaxed);
	else
		__atomic_store_n(&w->line_waiting, false, __ATOMIC_RELAXED);
}

static inline void line_look(struct xf__worker *w, bool ring_dry)
{
	if (unlikely(w->line_waiting))
		line_release(w, ring_dry);
}

/* f, out of every ring, waits last in its queue of w's line. */
static void line_append(struct xf__worker *w, struct xf_fiber *f)
{
	bool batch = __atomic_load_n(&f->batch, __ATOMIC_RELAXED);
	struct xf_fiber **head = batch ? &w->batch_head : &w->aside_head;
	struct xf_fiber **tail = batch ? &w->batch_tail : &w->aside_tail;

	f->line_next = NULL;
	__atomic_store_n(&f->line_since_ns, xf__now_ns(), __ATOMIC_RELAXED);
	if (*tail)
		(*tail)->line_next = f;
	else
		*head = f;
	*tail = f;
	XF_STAT_INC(w, batch_stepped_aside, batch);
	XF_STAT_INC(w, woken_first, !batch);
	__atomic_store_n(&w->line_waiting, true, __ATOMIC_RELAXED);
	atomic_fetch_or_explicit(&w->due, XF_DUE_LINE, memory_order_relaxed);
}

/*
 * Whether a fiber the preempted one steps aside for (passed_over) waits in
 * w's ring, looked for among the first XF_BATCH_LOOK that wait (a
 * preemption walks them: bounded; behind more than that, it waits its turn
 * as without the rule).  If so, the fibers ahead of it leave its way: to
 * the line those that may not move anyway (preempted, or pinned batch
 * work), to the ring's tail the others - batch work, fibers that yielded,
 * fibers holding a lock -, where an idle worker may still take them
 * (in the line they would wait for their first preemption there, and then
 * never move: a reviewer's 6 batch fibers shared one worker while the
 * other idled).
 */
#define XF_BATCH_LOOK 16

/* Woken (or new) and not yet run since, as a short request's fiber is when
 * its bytes arrive: not a fiber that yielded, preempted or batch work. */
static bool latency_critical(const struct xf_fiber *f)
{
	return __atomic_load_n(&f->woken, __ATOMIC_RELAXED) && !f->preempted &&
	       atomic_load_explicit(&f->on_cpu, memory_order_relaxed) != XF_OFF_CPU_YIELDED &&
	       !__atomic_load_n(&f->batch, __ATOMIC_RELAXED);
}

/* Whether f, waiting in the ring, is no reason for the preempted fiber to
 * step aside: for batch work, another batch fiber; for any other, a fiber
 * that is not latency-critical. */
static bool passed_over(const struct xf_fiber *f, bool batch)
{
	return batch ? __atomic_load_n(&f->batch, __ATOMIC_RELAXED) : !latency_critical(f);
}

static bool line_clear_the_way(struct xf__worker *w, bool batch)
{
	struct xf__runq *q = &w->runq;
	struct xf_fiber *f = q->head;
	unsigned ahead = 0;

	while (f && ahead < q->len && ahead < XF_BATCH_LOOK && passed_over(f, batch)) {
		f = f->run_next;
		ahead++;
	}
	if (!f || ahead == q->len || ahead == XF_BATCH_LOOK)
		return false; /* batch fibers alone: they take turns */
	XF_WARN_ON(!q->running_linked);
	struct xf_fiber *movable = NULL, **movable_end = &movable;

	for (; ahead; ahead--) {
		struct xf_fiber *b = q->head;

		q->head = b->run_next;
		q->len--;
		xf__runq_fixed_set(w, b, false);
		if (!xf__fiber_holds_lock(b) &&
		    (b->preempted ||
		     (xf__fiber_stays(b) && __atomic_load_n(&b->batch, __ATOMIC_RELAXED)))) {
			line_append(w, b);
		} else {
			b->line_next = NULL;
			*movable_end = b;
			movable_end = &b->line_next;
		}
	}
	w->current->run_next = q->head; /* the ring: tail -> current -> head */
	for (struct xf_fiber *b = movable, *after; b; b = after) {
		after = b->line_next;
		xf__runq_push(w, b);
	}
	xf__runq_publish(w);
	return true;
}

bool xf__step_aside(struct xf__worker *w, struct xf_fiber *f)
{
	XF_WARN_ON(w->current != f || !f->preempted);
	if (!line_clear_the_way(w, __atomic_load_n(&f->batch, __ATOMIC_RELAXED)))
		return false;
	line_append(w, f);
	xf__schedule(w, XF_PREV_BLOCK);
	return true;
}

/* The one scheduler decision: who runs next on w, and the switch to it.
 * *mxcsr is the caller's MXCSR, which it stored first of all. */
static void schedule(struct xf__worker *w, enum xf__prev_action action, uint32_t *mxcsr)
{
	struct xf_fiber *prev = w->current;
	struct xf_fiber *next;

	XF_WARN_ON(!(xf__preempt_word_get() & XF_PREEMPT_NESTING));
	release_dead_tiles(w, prev);
	if (action == XF_PREV_REQUEUE) {
		__atomic_store_n(&prev->woken, false, __ATOMIC_RELAXED); /* yielded */
		xf__runq_poll(w);
		line_look(w, false);		 /* prev still runs: the line's due fibers */
		next = xf__runq_rotate(w, prev); /* prev behind the others */
		if (next == prev)
			return; /* nothing else to run: keep going */
	} else {
		/* Off the ring before the poll, which may queue prev again:
		 * woken before it left, by a timer the poll runs or a waker
		 * through the inbox. */
		xf__runq_remove_running(w, prev);
		xf__runq_poll(w);
		line_look(w, true);
		if (!w->runq.head || (action == XF_PREV_EXIT && !resumes_in_c(w->runq.head))) {
			next = w->idle;
		} else {
			next = xf__runq_run_head(w);
			if (next == prev)
				return; /* woken before it left, and first in line */
			prefetch_in_line(w);
		}
	}
	switch_to(w, prev, next, action, mxcsr);
}

void xf__schedule(struct xf__worker *w, enum xf__prev_action action)
{
	uint32_t mxcsr;

	xf__store_mxcsr(&mxcsr);
	schedule(w, action, &mxcsr);
}

int xf__misuse_preempt_disabled(const char *what)
{
	struct xf_fiber *f = xf__current();

	fprintf(stderr,
		"xfiber: fiber %llu called %s with preemption disabled (xf_preempt_disable); a "
		"switch there would end its critical section behind its back%s\n",
		(unsigned long long)(f ? f->id : 0), what,
		xf__rt.misuse_returns ? ": EDEADLK" : "");
	if (!xf__rt.misuse_returns)
		abort();
	return EDEADLK;
}

void xf__yield_slow(void)
{
	uint32_t mxcsr;
	struct xf__worker *w;

	/* First of all: the switch reads it back, and the later the cheaper
	 * (context.h).  A preemption before the disable leaves it valid. */
	xf__store_mxcsr(&mxcsr);
	w = xf__this_worker();
	if (!w || (w->current->flags & XF_FIBER_F_IDLE))
		return;
	if (unlikely(xf__preempt_disabled_beyond(0))) {
		xf__misuse_preempt_disabled("xf_yield");
		return; /* no yield: the caller's section stays closed */
	}
	xf__preempt_disable();
	/* A yield that finds nobody else waiting lets the line back: it would
	 * return at once, and may be waiting for a fiber there. */
	if (unlikely(w->line_waiting) && !w->runq.head)
		line_release(w, true);
	schedule(w, XF_PREV_REQUEUE, &mxcsr);
	xf__preempt_enable();
}

#ifdef XF_SWITCH_ANNOTATED
/* Sanitizer builds: every yield takes the C path, which annotates it. */
void xf_yield(void)
{
	xf__yield_slow();
}
#endif

/* The idle context's way into a fiber it found. */
void xf__switch_from_idle(struct xf__worker *w, struct xf_fiber *next)
{
	uint32_t mxcsr;

	xf__store_mxcsr(&mxcsr);
	/* next ends the idling: its start, for the ticker, which times its
	 * slice from here rather than from its next look (up to a slice
	 * later).  Before the count the switch bumps: the ticker pairs them by
	 * it.  Only here: on every switch the stamp cost a channel ping-pong
	 * 6% (bench fiber scale-chan/1w, 90.5 against 85.0 ns a round trip),
	 * and where a worker keeps switching the ticker's next look is a slice
	 * after the one that saw the fiber anyway. */
	atomic_store_explicit(&w->switch_tsc, __builtin_ia32_rdtsc(), memory_order_relaxed);
	atomic_store_explicit(&w->switch_seq, w->stats.switches + 1, memory_order_relaxed);
	switch_to(w, w->idle, next, XF_PREV_NONE, &mxcsr);
}

/* A new context starts here at nesting 1 (its frame says so). */
_Noreturn void xf__fiber_main(struct xf_fiber *f, struct xf__worker *w, uintptr_t prev)
{
	xf__san_switch_finish(f);
	finish_switch((struct xf__switched){w, prev});
	if (f->flags & XF_FIBER_F_IDLE)
		xf__idle_loop(w); /* worker 0's scheduler context: never returns */
	*w->errno_ptr = 0;
	xf__preempt_enable();
	xf__fiber_exit(f, f->fn(f->arg));
}

/* Pauses a waker spends waiting for a fiber to get off its CPU: ~2 us on
 * the development machine, where one takes ~30 ns (77 TSC cycles). */
#define XF_WAKE_SPIN 64

/* Whether f, being woken, may still be linked in its home's ring as the
 * running fiber, which only that worker may change (runq.h).  This
 * worker's own fiber, woken in its own blocking window (a timer it could
 * not arm), is until schedule() takes it off.  Any other is off its ring
 * once off its CPU; the waker waits a little for that, as Linux's
 * try_to_wake_up waits for on_cpu: a switch-out takes well under a
 * microsecond, unless its thread loses the CPU midway. */
static bool may_be_linked(struct xf__worker *w, struct xf_fiber *f)
{
	if (w && f == w->current)
		return w->runq.running_linked;
	return !wait_off_cpu(f, XF_WAKE_SPIN);
}

void xf__wake(struct xf_fiber *f)
{
	struct xf__worker *w, *home;

	if (unlikely(f->flags & (XF_FIBER_F_THREAD | XF_FIBER_F_SELECT))) {
		if (f->flags & XF_FIBER_F_SELECT)
			f = (struct xf_fiber *)f->wait_object; /* a select's case: its fiber */
		if (f->flags & XF_FIBER_F_THREAD) {
			xf__thread_wake(f);
			return;
		}
	}
	home = &xf__rt.workers[f->home];
	/* Latency-critical unless it ran a whole slice since it last woke. */
	__atomic_store_n(&f->woken, !f->ran_long, __ATOMIC_RELAXED);
	f->ran_long = false;
	xf__preempt_disable(); /* the run queue is this worker's alone */
	xf__ticker_poke();
	w = xf__this_worker();
	XF_PROBE2(fiber__wake, f->id, w ? (int)w->id : -1);
	if (may_be_linked(w, f)) {
		/* Through its home's inbox, which that worker polls only
		 * after f has left its ring. */
		xf__inbox_push(home, f);
		if (home != w)
			xf__worker_kick(home);
	} else if (w && (!xf__fiber_stays(f) || home == w)) {
		f->home = (int)w->id; /* where it will run: its home from now on */
		xf__runq_push(w, f);
		xf__maybe_wake_idle(w);
	} else {
		xf__inbox_push(home, f);
		xf__worker_kick(home);
	}
	xf__preempt_enable();
}

int xf__wait_block(struct xf_fiber *self, uint64_t timeout_ns, _Atomic uint32_t *unlock,
		   enum xf__wait_kind kind, const void *object)
{
	struct xf__worker *w;
	int state;

	/* The caller's disable carries us into the switch: a preemption
	 * between publishing ourselves and the switch would queue a fiber
	 * that its waker may queue too. */
	XF_WARN_ON(!(xf__preempt_word_get() & XF_PREEMPT_NESTING));
	if (unlikely(self->flags & XF_FIBER_F_THREAD))
		return xf__thread_block(self, timeout_ns, unlock);
	w = xf__this_worker();
	if (timeout_ns) {
		uint64_t now = xf__now_ns();

		/* A deadline past the clock's range is never: no timer. */
		if (timeout_ns <= UINT64_MAX - now)
			xf__timer_arm(w, self, now + timeout_ns);
		else
			timeout_ns = 0;
	}
	if (unlock)
		xf__spin_unlock_raw(unlock);
	self->wait_kind = (uint8_t)kind;
	self->wait_object = object;
	/* Cancelled before it could wait, in a wait claimed by compare-and-
	 * swap (a queued waiter looked under its queue's lock, waitq.c; a
	 * blocking call's job may be running on our stack's data: only the
	 * pool takes it back, io/blocking.c; an io_uring request's buffer is the
	 * kernel's until it completes, io/ring.c): the kind stored, then the look,
	 * against the canceller's barrier (cancel.c).  A waker that won first
	 * is consumed by the switch. */
	if (xf__cancel_pending(self) && xf__wait_kind_cancellable(kind) && !self->wait_lock &&
	    kind != XF_WAIT_ON_BLOCKING_CALL && kind != XF_WAIT_ON_IO_REQUEST &&
	    xf__wait_claim(self, XF_WAIT_CANCELED)) {
		self->wait_kind = XF_WAIT_ON_NOTHING;
		xf__preempt_enable();
		if (timeout_ns)
			xf__timer_cancel(self);
		return XF_WAIT_CANCELED;
	}
	XF_PROBE3(fiber__block, self->id, self->wait_queue, w->id);
	xf__schedule(w, XF_PREV_BLOCK);
	self->wait_kind = XF_WAIT_ON_NOTHING;
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
	if (xf__wait_claim(self, XF_WAIT_NONE)) {
		xf__preempt_enable();
		return XF_WAIT_NONE;
	}
	/* A waker won and is queueing us: consume that wake-up. */
	return xf__wait_block(self, 0, NULL, XF_WAIT_ON_NOTHING, NULL); /* runnable already */
}
