/*
 * pthread_wait.h - what the C library's waits made from fibers share
 * (sync/pthread.c has the rule they keep): the mark a wait in the kernel
 * carries, one round of waiting as a fiber, and the table of locks a
 * fiber's thread owns.  Private to src/sync/; inline where the lock fast
 * paths use it, as when it was all one file.
 */
#ifndef XF_SYNC_PTHREAD_WAIT_H
#define XF_SYNC_PTHREAD_WAIT_H

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "preempt/preempt.h"
#include "sched/runq.h"
#include "sched/sched.h"

#pragma GCC visibility push(hidden)

/* glibc's mutex kinds (nptl/pthreadP.h): the type, and the flags that make
 * the kernel track the owner. */
#define MUTEX_TYPE_MASK	   3
#define MUTEX_ROBUST	   16
#define MUTEX_PRIO_INHERIT 32
#define MUTEX_PRIO_PROTECT 64
#define FUTEX_TID_MASK	   0x3fffffff


static inline uint8_t mark(struct xf_fiber *f, uint8_t kind)
{
	uint8_t prev = f->blocking;

	__atomic_store_n(&f->blocking, kind, __ATOMIC_RELAXED); /* the ticker reads it */
	return prev;
}

static inline void unmark(struct xf_fiber *f, uint8_t prev)
{
	__atomic_store_n(&f->blocking, prev, __ATOMIC_RELAXED);
}

/* C library call `call`, made by fiber f (or NULL) as a wait in the kernel. */
#define BLOCKING(f, kind, call)                                                                    \
	({                                                                                         \
		struct xf_fiber *f_ = (f);                                                         \
		uint8_t prev_ = f_ ? mark(f_, (kind)) : 0;                                         \
		__typeof__(call) r_ = (call);                                                      \
		if (f_)                                                                            \
			unmark(f_, prev_);                                                         \
		r_;                                                                                \
	})

/* --- waiting as a fiber --- */

/* Whether other fibers of this worker are ready to run. */
static inline bool others_ready(void)
{
	struct xf__worker *w = xf__this_worker();

	/* Fibers in its line too (sched/schedule.c): a yield lets them back. */
	return atomic_load_explicit(&w->nr_queued, memory_order_relaxed) != 0 ||
	       __atomic_load_n(&w->line_waiting, __ATOMIC_RELAXED);
}

/* The deadline of an absolute time whose tv_nsec is outside [0, 1e9): the
 * wait fails with EINVAL where it would begin, as the C library's does. */
#define XF_DEADLINE_INVALID UINT64_MAX

/* One round of a wait as a fiber: the others of this worker run (a yield),
 * or, after a run of rounds without progress or with nobody else ready,
 * this fiber sleeps a while.  ETIMEDOUT at deadline_ns (CLOCK_MONOTONIC;
 * 0 = none), EINVAL for XF_DEADLINE_INVALID, else 0 (pthread.c). */
int xf__lock_wait_round(struct xf_fiber *f, uint64_t deadline_ns);

/* CLOCK_MONOTONIC deadline for an absolute time on clock c: 0 for none (a
 * NULL time, or one too far away for 64-bit nanoseconds, ~292 years),
 * XF_DEADLINE_INVALID for a tv_nsec out of range. */
uint64_t xf__lock_deadline_of(clockid_t c, const struct timespec *abstime);

/* --- which of an object's waits a call makes --- */

/* Which of a lock's waits in the kernel a call makes: the plain one, the
 * one timed on CLOCK_REALTIME, or the one timed on a clock of its choice. */
enum lock_timing { LOCK_UNTIMED, LOCK_REALTIME, LOCK_CLOCK };

struct lock_call {
	enum lock_timing timing;
	clockid_t clock;		/* LOCK_CLOCK */
	const struct timespec *abstime; /* LOCK_REALTIME, LOCK_CLOCK */
	const void *caller;		/* where the call returns: xf__preempt_enable_for */
};

/* In the replaced function itself, where CALLER is its return address. */
#define CALLER	    __builtin_return_address(0)
#define UNTIMED	    ((struct lock_call){.timing = LOCK_UNTIMED, .caller = CALLER})
#define REALTIME(t) ((struct lock_call){.timing = LOCK_REALTIME, .abstime = (t), .caller = CALLER})
#define ON_CLOCK(c, t)                                                                             \
	((struct lock_call){.timing = LOCK_CLOCK, .clock = (c), .abstime = (t), .caller = CALLER})

/* The call's deadline on CLOCK_MONOTONIC (0: none). */
static inline uint64_t call_deadline(const struct lock_call *how)
{
	switch (how->timing) {
	case LOCK_UNTIMED: return 0;
	case LOCK_REALTIME: return xf__lock_deadline_of(CLOCK_REALTIME, how->abstime);
	default: return xf__lock_deadline_of(how->clock, how->abstime);
	}
}

/* The fiber made progress: its next wait yields again before it sleeps. */
static inline void progress(struct xf_fiber *f)
{
	if (f)
		f->polls = 0;
}

/* --- thread-owned locks --- */

static inline pid_t my_tid(void)
{
	return xf__this_worker()->tid;
}

static inline bool owns(struct xf_fiber *f, const void *lock)
{
	for (unsigned i = 0; i < f->owned_nr; i++) {
		if (f->owned[i] == lock)
			return true;
	}
	return false;
}

/* Room in f's table for one more lock, made before the lock is taken:
 * the lock and the record of it go together, with preemption disabled
 * (own_locked), and nothing may allocate there. */
static inline void own_reserve(struct xf_fiber *f)
{
	unsigned cap;
	const void **more;

	if (f->owned_nr < f->owned_cap)
		return;
	cap = f->owned_cap ? 2u * f->owned_cap : 8;
	more = realloc(f->owned, cap * sizeof(*more));
	if (!more)
		abort(); /* a lock about to be taken that could not be remembered */
	f->owned = more;
	f->owned_cap = (uint16_t)cap;
}

/* f has just taken a lock its thread owns: it stays on this worker from now
 * on.  Called with preemption disabled since before the lock was taken: a
 * preemption taken in between - at the enable that ends the try, say -
 * could let a thief move f while glibc records this thread as the owner,
 * and f's next lock of it (a recursive one) would wait in the kernel for
 * itself (sync/owner tests).  own_reserve() made the room. */
static inline void own_locked(struct xf_fiber *f, const void *lock)
{
	XF_WARN_ON(!(xf__preempt_word_get() & XF_PREEMPT_NESTING));
	if (owns(f, lock))
		return;
	XF_WARN_ON(f->owned_nr >= f->owned_cap);
	f->owned[f->owned_nr++] = lock;
	f->home = (int)xf__this_worker()->id;
	f->flags |= XF_FIBER_F_STAY;
	xf__runq_fixed_update(xf__this_worker(), f);
}

/* f took a lock its thread owns by a wait in the kernel, after which
 * nothing has taken a pending preemption yet (no enable since): the record
 * of it now. */
static inline void own(struct xf_fiber *f, const void *lock, const void *caller)
{
	own_reserve(f);
	xf__preempt_disable();
	own_locked(f, lock);
	xf__preempt_enable_for(caller);
}

static inline void disown(struct xf_fiber *f, const void *lock, const void *caller)
{
	for (unsigned i = 0; i < f->owned_nr; i++) {
		if (f->owned[i] != lock)
			continue;
		f->owned[i] = f->owned[--f->owned_nr];
		if (!f->owned_nr && !(f->flags & XF_FIBER_F_FIRST)) {
			xf__preempt_disable();
			f->flags &= ~XF_FIBER_F_STAY;
			xf__runq_fixed_update(xf__this_worker(), f);
			xf__preempt_enable_for(caller);
		}
		return;
	}
}


/* Whether a lock whose owner field says `owner` is held by another fiber of
 * this thread. */
static inline bool held_here_by_another(struct xf_fiber *f, pid_t owner, const void *lock)
{
	return owner && owner == my_tid() && !owns(f, lock);
}

/* Waits as a fiber while `held` says so.  0, or ETIMEDOUT at deadline_ns. */
static inline int wait_out(struct xf_fiber *f, bool (*held)(struct xf_fiber *, const void *),
		    const void *lock, uint64_t deadline_ns)
{
	int err = 0;

	while (!err && held(f, lock))
		err = xf__lock_wait_round(f, deadline_ns);
	return err;
}

/* Each file's resolver, called by xf__pthread_interpose_resolve. */
void xf__pthread_mutex_resolve(void);
void xf__pthread_once_resolve(void);
void xf__semaphore_resolve(void);
void xf__thread_waits_resolve(void);

#pragma GCC visibility pop

#endif
