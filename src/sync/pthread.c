/*
 * pthread.c - pthread, C11, semaphore and C++ waits made from fibers.
 *
 * A fiber that waits in the kernel puts its worker's thread to sleep, and
 * with it every other fiber that thread could run.  When what it waits for
 * is held by one of those fibers - a pthread mutex, a once-object, a C++
 * static's guard, held by a fiber preempted in the middle - nothing moves
 * again: a preempted fiber resumes only on the thread it was interrupted on
 * (preempt/signal.c).  So these calls are interposed (common/interpose.h),
 * and made from a fiber they keep one rule:
 *
 *   A fiber does not put its worker to sleep in the kernel while other
 *   fibers of that worker are ready to run.  It tries the object (trylock,
 *   trywait, tryjoin) and, while it must wait, lets them run first - a
 *   yield - trying again each time it runs.  A condition variable cannot be
 *   tried: its wait gives the others their turn and returns 0, a spurious
 *   wake-up, which POSIX allows and every correct caller re-checks its
 *   predicate after.  Fibers that only wait for each other's turns would
 *   spin the CPU this way while they wait for something from outside the
 *   worker, so after WAIT_YIELDS rounds without progress a waiter sleeps on
 *   the runtime's timers instead, doubling from WAIT_SLEEP_MIN_NS to
 *   WAIT_SLEEP_MAX_NS.  Progress ends the series: the wait succeeding, or
 *   - for a condition variable - the fiber itself signalling one or
 *   unlocking a mutex, which a fiber that only waits never does.
 *
 *   A fiber alone on its worker waits in the kernel, as a thread would,
 *   marked XF_BLOCKING_AT_WAIT: "holds no lock where it waits in the
 *   kernel", true of every wait here.  When something becomes ready on the
 *   worker meanwhile, the ticker signals it at its next look, and the
 *   preemption handler switches the fiber out right at its futex wait,
 *   although the pc lies in libc, which is otherwise never preempted; the
 *   kernel has rewound the wait for restart (SA_RESTART) and the fiber
 *   issues it again when it resumes.  A timed wait, which the kernel ends
 *   with EINTR instead, is retried by the C library (mutexes, condition
 *   variables) or here (semaphores).
 *
 * Locks the thread owns - recursive, error-checking, robust and priority
 * mutexes, the write side of rwlocks - record a thread id, and glibc
 * decides recursion, EDEADLK and even which kind of unlock to do by
 * comparing it with the caller's: two fibers of one thread would pass for
 * one owner.  So a fiber that finds one held by its own thread but not by
 * itself waits as a fiber until that changes - recursive mutexes are only
 * ever tried, never waited for in the kernel - and a fiber that holds one
 * stays on its thread (XF_FIBER_F_STAY) until it lets go: its unlock must
 * come from the same thread id.  A once-object in progress and a C++ static
 * being built are waited out as a fiber too, whoever runs the routine.
 *
 * pthread_once's routine, unlike the waits, is the program's own code: it
 * runs with the mark taken off (once_routine), so a lock the C library
 * takes inside it is not mistaken for one that is safe to wait at.  C11's
 * mtx_, cnd_, call_once and thrd_join are glibc's pthread calls under other
 * names, and go through the ones here.
 *
 * Outside a fiber, and with preemption disabled, every call is the C
 * library's, untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <stdatomic.h>
#include <string.h>
#include <threads.h>
#include <time.h>

#include "common/interpose.h"
#include "preempt/preempt.h"
#include "sched/runq.h"
#include "sched/sched.h"
#include "runtime/hooks.h"

/* glibc's mutex kinds (nptl/pthreadP.h): the type, and the flags that make
 * the kernel track the owner. */
#define MUTEX_TYPE_MASK	   3
#define MUTEX_ROBUST	   16
#define MUTEX_PRIO_INHERIT 32
#define MUTEX_PRIO_PROTECT 64
#define FUTEX_TID_MASK	   0x3fffffff

#define WAIT_YIELDS	   32		/* yields in a row, then sleeps */
#define WAIT_SLEEP_MIN_NS  (10 * 1000)
#define WAIT_SLEEP_MAX_NS  (1000 * 1000)
#define WAIT_SERIES_GAP_NS (1000 * 1000) /* a round after this long starts anew */

static uint8_t mark(struct xf_fiber *f, uint8_t kind)
{
	uint8_t prev = f->blocking;

	__atomic_store_n(&f->blocking, kind, __ATOMIC_RELAXED); /* the ticker reads it */
	return prev;
}

static void unmark(struct xf_fiber *f, uint8_t prev)
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
static bool others_ready(void)
{
	return atomic_load_explicit(&xf__this_worker()->nr_queued, memory_order_relaxed) != 0;
}

/* One round of a wait as a fiber: the others of this worker run (a yield),
 * or, after WAIT_YIELDS rounds without progress or with nobody else ready,
 * this fiber sleeps a while.  ETIMEDOUT at deadline_ns (CLOCK_MONOTONIC;
 * 0 = none), else 0. */
static int wait_round(struct xf_fiber *f, uint64_t deadline_ns)
{
	uint64_t now = xf__now_ns(), ns;

	if (deadline_ns && now >= deadline_ns)
		return ETIMEDOUT;
	if (now - f->poll_last_ns > WAIT_SERIES_GAP_NS)
		f->polls = 0;
	if (f->polls < WAIT_YIELDS && others_ready()) {
		xf_yield();
	} else {
		unsigned doublings = f->polls < WAIT_YIELDS ? 0 : (f->polls - WAIT_YIELDS) / 4;

		ns = doublings >= 7 ? WAIT_SLEEP_MAX_NS : WAIT_SLEEP_MIN_NS << doublings;
		if (ns > WAIT_SLEEP_MAX_NS)
			ns = WAIT_SLEEP_MAX_NS;
		if (deadline_ns && ns > deadline_ns - now)
			ns = deadline_ns - now;
		xf__sleep_on(ns, XF_WAIT_ON_LOCK); /* a debugger sees the lock it waits for */
	}
	f->polls++;
	f->poll_last_ns = xf__now_ns();
	return 0;
}

/* The fiber made progress: its next wait yields again before it sleeps. */
static void progress(struct xf_fiber *f)
{
	if (f)
		f->polls = 0;
}

/* --- thread-owned locks --- */

static pid_t my_tid(void)
{
	return xf__this_worker()->tid;
}

static bool owns(struct xf_fiber *f, const void *lock)
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
static void own_reserve(struct xf_fiber *f)
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
static void own_locked(struct xf_fiber *f, const void *lock)
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
static void own(struct xf_fiber *f, const void *lock)
{
	own_reserve(f);
	xf__preempt_disable();
	own_locked(f, lock);
	xf__preempt_enable();
}

static void disown(struct xf_fiber *f, const void *lock)
{
	for (unsigned i = 0; i < f->owned_nr; i++) {
		if (f->owned[i] != lock)
			continue;
		f->owned[i] = f->owned[--f->owned_nr];
		if (!f->owned_nr && !(f->flags & XF_FIBER_F_FIRST)) {
			xf__preempt_disable();
			f->flags &= ~XF_FIBER_F_STAY;
			xf__runq_fixed_update(xf__this_worker(), f);
			xf__preempt_enable();
		}
		return;
	}
}

/* A fiber ends: its table of thread-owned locks goes. */
static void pthread_fiber_exit(struct xf_fiber *f)
{
	free(f->owned);
	f->owned = NULL;
	f->owned_nr = f->owned_cap = 0;
}

XF_HOOK(pthread_hook) = {.module = "sync/pthread", .fiber_exit = pthread_fiber_exit};

/* Whether a lock whose owner field says `owner` is held by another fiber of
 * this thread. */
static bool held_here_by_another(struct xf_fiber *f, pid_t owner, const void *lock)
{
	return owner && owner == my_tid() && !owns(f, lock);
}

/* Waits as a fiber while `held` says so.  0, or ETIMEDOUT at deadline_ns. */
static int wait_out(struct xf_fiber *f, bool (*held)(struct xf_fiber *, const void *),
		    const void *lock, uint64_t deadline_ns)
{
	int err = 0;

	while (!err && held(f, lock))
		err = wait_round(f, deadline_ns);
	return err;
}

/* CLOCK_MONOTONIC deadline for an absolute time on clock c (0: none). */
static uint64_t deadline_of(clockid_t c, const struct timespec *abstime)
{
	struct timespec now;
	int64_t left;

	if (!abstime)
		return 0;
	clock_gettime(c, &now);
	left = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 +
	       (abstime->tv_nsec - now.tv_nsec);
	return xf__now_ns() + (uint64_t)(left > 0 ? left : 1);
}

/* --- mutexes --- */

static int mutex_kind(const pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
}

/* Recursive, error-checking, robust and priority mutexes compare their
 * owner's thread id with the caller's. */
static bool mutex_thread_owned(const pthread_mutex_t *m)
{
	int kind = mutex_kind(m);

	return (kind & MUTEX_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE_NP ||
	       (kind & MUTEX_TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK_NP ||
	       (kind & (MUTEX_ROBUST | MUTEX_PRIO_INHERIT | MUTEX_PRIO_PROTECT));
}

static bool mutex_held_here(struct xf_fiber *f, const void *lock)
{
	const pthread_mutex_t *m = lock;

	return held_here_by_another(
	    f, __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) & FUTEX_TID_MASK, lock);
}

XF_INTERPOSE(int, pthread_mutex_trylock, (pthread_mutex_t * m));

/* A trylock that another fiber of this thread cannot slip into between the
 * look at the owner and the lock (a recursive mutex would count it in). */
static int mutex_try(struct xf_fiber *f, pthread_mutex_t *m)
{
	int err = EBUSY;

	/* Only a lock the thread owns is recorded: a normal one never takes
	 * this room, and an allocator's own normal mutex (jemalloc's) must not
	 * allocate inside its malloc. */
	if (mutex_thread_owned(m))
		own_reserve(f);
	xf__preempt_disable();
	if (!mutex_held_here(f, m))
		err = XF_REAL(pthread_mutex_trylock)(m);
	if (!err && mutex_thread_owned(m))
		own_locked(f, m);
	xf__preempt_enable();
	return err;
}

/* Locks m for fiber f by tries while it must wait as a fiber, then - a
 * normal mutex, nothing else ready - by `block` in the kernel. */
#define MUTEX_LOCK(f, m, deadline, block)                                                          \
	({                                                                                         \
		int err_;                                                                          \
		for (;;) {                                                                         \
			if (owns(f, m)) { /* again: recursion, or EDEADLK */                       \
				err_ = (block);                                                    \
				break;                                                             \
			}                                                                          \
			if (mutex_thread_owned(m) || others_ready() || mutex_held_here(f, m)) {    \
				err_ = mutex_try(f, m);                                            \
				if (err_ != EBUSY)                                                 \
					break;                                                     \
				err_ = wait_round(f, (deadline));                                  \
				if (err_)                                                          \
					break;                                                     \
				continue;                                                          \
			}                                                                          \
			err_ = BLOCKING(f, XF_BLOCKING_AT_WAIT, block);                            \
			break;                                                                     \
		}                                                                                  \
		if (!err_)                                                                         \
			progress(f);                                                               \
		err_;                                                                              \
	})

/* With preemption disabled, a mutex another fiber of this thread holds
 * would never be released: that fiber cannot run again before this one
 * switches.  The misuse is reported, not turned into a hang. */
static int misuse_if_held_here(pthread_mutex_t *m, const char *what)
{
	struct xf_fiber *f = xf__self();

	if (f && !owns(f, m) && mutex_held_here(f, m))
		return xf__misuse_preempt_disabled(what);
	return 0;
}

XF_INTERPOSE(int, pthread_mutex_lock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();
	int err;

	if (!f) {
		if (xf__self() && (err = misuse_if_held_here(m, "pthread_mutex_lock")))
			return err;
		return XF_REAL(pthread_mutex_lock)(m);
	}
	/* The common case first: free, and nobody of this thread in the way. */
	if (!mutex_thread_owned(m) && XF_REAL(pthread_mutex_trylock)(m) == 0)
		return 0;
	return MUTEX_LOCK(f, m, 0, XF_REAL(pthread_mutex_lock)(m));
}

XF_INTERPOSE(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return XF_REAL(pthread_mutex_timedlock)(m, t);
	return MUTEX_LOCK(f, m, deadline_of(CLOCK_REALTIME, t),
			  XF_REAL(pthread_mutex_timedlock)(m, t));
}

XF_INTERPOSE(int, pthread_mutex_clocklock,
	     (pthread_mutex_t * m, clockid_t c, const struct timespec *t))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return XF_REAL(pthread_mutex_clocklock)(m, c, t);
	return MUTEX_LOCK(f, m, deadline_of(c, t), XF_REAL(pthread_mutex_clocklock)(m, c, t));
}

XF_INTERPOSE(int, pthread_mutex_trylock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return XF_REAL(pthread_mutex_trylock)(m);
	return owns(f, m) ? XF_REAL(pthread_mutex_trylock)(m) : mutex_try(f, m);
}

XF_INTERPOSE(int, pthread_mutex_unlock, (pthread_mutex_t * m));

static int mutex_unlock(struct xf_fiber *f, pthread_mutex_t *m)
{
	int err;

	/* Another fiber's lock, which glibc would take for ours. */
	if (!owns(f, m) && mutex_held_here(f, m))
		return EPERM;
	err = XF_REAL(pthread_mutex_unlock)(m);
	if (!err && (__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) & FUTEX_TID_MASK) !=
			my_tid())
		disown(f, m); /* released, not just one level of recursion */
	return err;
}

XF_INTERPOSE(int, pthread_mutex_unlock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();

	progress(f);
	/* The common case first: a normal mutex, whose unlock needs nothing. */
	if (!f || !mutex_thread_owned(m))
		return XF_REAL(pthread_mutex_unlock)(m);
	return mutex_unlock(f, m);
}

/* --- condition variables --- */

/* A wait while other fibers of this worker are ready, or on a mutex its
 * thread owns: their turn first, then a spurious wake-up with the mutex
 * held again; ETIMEDOUT past deadline_ns. */
static int cond_wait_round(struct xf_fiber *f, pthread_mutex_t *m, uint64_t deadline_ns)
{
	int err = mutex_thread_owned(m) ? mutex_unlock(f, m) : XF_REAL(pthread_mutex_unlock)(m);
	uint32_t polls;

	if (err)
		return err;
	err = wait_round(f, deadline_ns);
	polls = f->polls; /* the lock again is no progress of the wait's */
	MUTEX_LOCK(f, m, 0, XF_REAL(pthread_mutex_lock)(m));
	f->polls = polls;
	if (!err && deadline_ns && xf__now_ns() >= deadline_ns)
		err = ETIMEDOUT;
	return err;
}

#define COND_WAIT(c, m, deadline, block)                                                           \
	({                                                                                         \
		struct xf_fiber *f = xf__self_may_wait();                                                      \
		int err_;                                                                          \
		if (!f)                                                                            \
			err_ = (block);                                                            \
		else if (others_ready() || mutex_thread_owned(m))                                  \
			err_ = cond_wait_round(f, (m), (deadline));                                \
		else                                                                               \
			err_ = BLOCKING(f, XF_BLOCKING_AT_WAIT, block);                            \
		err_;                                                                              \
	})

XF_INTERPOSE(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m))
{
	return COND_WAIT(c, m, 0, XF_REAL_VERSION(pthread_cond_wait, "GLIBC_2.3.2")(c, m));
}

XF_INTERPOSE(int, pthread_cond_timedwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t))
{
	return COND_WAIT(c, m, deadline_of(CLOCK_REALTIME, t),
			 XF_REAL_VERSION(pthread_cond_timedwait, "GLIBC_2.3.2")(c, m, t));
}

XF_INTERPOSE(int, pthread_cond_clockwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t))
{
	return COND_WAIT(c, m, deadline_of(clk, t),
			 XF_REAL(pthread_cond_clockwait)(c, m, clk, t));
}

/* Signalling may wait too: for the waiters of the group it closes to leave
 * it, with the condition variable's internal lock held - which only other
 * calls on it wait for, all of them marked. */
XF_INTERPOSE(int, pthread_cond_signal, (pthread_cond_t * c))
{
	struct xf_fiber *f = xf__self_may_wait();

	progress(f);
	return BLOCKING(f, XF_BLOCKING_AT_WAIT,
			XF_REAL_VERSION(pthread_cond_signal, "GLIBC_2.3.2")(c));
}

XF_INTERPOSE(int, pthread_cond_broadcast, (pthread_cond_t * c))
{
	struct xf_fiber *f = xf__self_may_wait();

	progress(f);
	return BLOCKING(f, XF_BLOCKING_AT_WAIT,
			XF_REAL_VERSION(pthread_cond_broadcast, "GLIBC_2.3.2")(c));
}

/* --- rwlocks --- */

static bool rwlock_held_here(struct xf_fiber *f, const void *lock)
{
	const pthread_rwlock_t *rw = lock;

	return held_here_by_another(
	    f, __atomic_load_n(&rw->__data.__cur_writer, __ATOMIC_RELAXED), lock);
}

/* Tries while it must wait as a fiber, then blocks; an EDEADLK from glibc
 * when another fiber of this thread took the write side meanwhile is only
 * another round. */
#define RWLOCK(rw, deadline, write, try, block)                                                   \
	({                                                                                         \
		struct xf_fiber *f = xf__self_may_wait();                                                      \
		int err_;                                                                          \
		for (;;) {                                                                         \
			if (!f) {                                                                  \
				err_ = (block);                                                    \
				break;                                                             \
			}                                                                          \
			if (rwlock_held_here(f, rw) || others_ready()) {                           \
				err_ = rwlock_held_here(f, rw) ? EBUSY : (try);                    \
			} else {                                                                   \
				err_ = BLOCKING(f, XF_BLOCKING_AT_WAIT, block);                    \
				if (err_ == EDEADLK && !owns(f, rw))                               \
					err_ = EBUSY;                                              \
			}                                                                          \
			if (err_ != EBUSY || (err_ = wait_round(f, (deadline))))                   \
				break;                                                             \
		}                                                                                  \
		if (!err_ && f && (write))                                                         \
			own(f, (rw));                                                              \
		if (!err_)                                                                         \
			progress(f);                                                               \
		err_;                                                                              \
	})

XF_INTERPOSE(int, pthread_rwlock_rdlock, (pthread_rwlock_t * rw))
{
	return RWLOCK(rw, 0, false, pthread_rwlock_tryrdlock(rw), XF_REAL(pthread_rwlock_rdlock)(rw));
}

XF_INTERPOSE(int, pthread_rwlock_wrlock, (pthread_rwlock_t * rw))
{
	return RWLOCK(rw, 0, true, pthread_rwlock_trywrlock(rw), XF_REAL(pthread_rwlock_wrlock)(rw));
}

XF_INTERPOSE(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(CLOCK_REALTIME, t), false, pthread_rwlock_tryrdlock(rw),
		      XF_REAL(pthread_rwlock_timedrdlock)(rw, t));
}

XF_INTERPOSE(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(CLOCK_REALTIME, t), true, pthread_rwlock_trywrlock(rw),
		      XF_REAL(pthread_rwlock_timedwrlock)(rw, t));
}

XF_INTERPOSE(int, pthread_rwlock_clockrdlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(c, t), false, pthread_rwlock_tryrdlock(rw),
		      XF_REAL(pthread_rwlock_clockrdlock)(rw, c, t));
}

XF_INTERPOSE(int, pthread_rwlock_clockwrlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(c, t), true, pthread_rwlock_trywrlock(rw),
		      XF_REAL(pthread_rwlock_clockwrlock)(rw, c, t));
}

XF_INTERPOSE(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * rw))
{
	struct xf_fiber *f = xf__self_may_wait();
	int err;

	if (!f)
		return XF_REAL(pthread_rwlock_trywrlock)(rw);
	/* The write side and its record together, as mutex_try does. */
	own_reserve(f);
	xf__preempt_disable();
	err = XF_REAL(pthread_rwlock_trywrlock)(rw);
	if (!err)
		own_locked(f, rw);
	xf__preempt_enable();
	return err;
}

XF_INTERPOSE(int, pthread_rwlock_unlock, (pthread_rwlock_t * rw))
{
	struct xf_fiber *f = xf__self_may_wait();
	bool writer = f && owns(f, rw);
	int err;

	/* glibc takes a write unlock for a read unlock when another fiber of
	 * this thread is the writer. */
	if (f && !writer && rwlock_held_here(f, rw))
		return EPERM;
	err = XF_REAL(pthread_rwlock_unlock)(rw);
	if (!err && writer)
		disown(f, rw);
	return err;
}

/* --- once-objects --- */

/* glibc's once word: bit 0 while the routine runs, bit 1 once it has run
 * (the fork generation above them). */
#define ONCE_IN_PROGRESS 1
#define ONCE_DONE	 2

/* Whoever runs the routine - a fiber of this worker or not - is waited for
 * as a fiber: no owner is recorded to tell. */
static bool once_running(struct xf_fiber *f, const void *lock)
{
	int v = __atomic_load_n((const int *)lock, __ATOMIC_ACQUIRE);

	(void)f;
	return (v & (ONCE_IN_PROGRESS | ONCE_DONE)) == ONCE_IN_PROGRESS;
}

/* The routine runs as the program's own code, unmarked. */
static void once_routine(void)
{
	struct xf_fiber *f = xf__self();
	void (*init)(void) = f->once_init;
	uint8_t prev = mark(f, XF_BLOCKING_NONE);

	xf__cxx_once_set(xf__this_worker(), f->once_passed); /* on this thread */
	init();
	unmark(xf__self(), prev); /* the same fiber, perhaps on another worker */
}

XF_INTERPOSE(int, pthread_once, (pthread_once_t * once, void (*init)(void)))
{
	struct xf_fiber *f = xf__self_may_wait();
	void (*outer)(void);
	int err;

	void *passed[2], *outer_passed[2];

	if (!f)
		return XF_REAL(pthread_once)(once, init);
	/* Before any switch: std::call_once set them on this thread (cxx.c). */
	xf__cxx_once_get(xf__this_worker(), passed);
	wait_out(f, once_running, once, 0);
	outer = f->once_init; /* a routine that calls pthread_once itself */
	memcpy(outer_passed, f->once_passed, sizeof(passed));
	f->once_init = init;
	memcpy(f->once_passed, passed, sizeof(passed));
	err = BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(pthread_once)(once, once_routine));
	f->once_init = outer;
	memcpy(f->once_passed, outer_passed, sizeof(passed));
	return err;
}

/* --- semaphores --- */

/* A timed semaphore wait cut short by the runtime's own signal (EINTR) is
 * resumed; one an application signal interrupted is not. */
#define SEM_BLOCK(f, call)                                                                         \
	({                                                                                         \
		int blk_r_;                                                                            \
		for (;;) {                                                                         \
			uint32_t ticks = (f)->preempt_signals;                                     \
			uint64_t app = xf__signal_app_count();                                     \
			blk_r_ = BLOCKING((f), XF_BLOCKING_AT_WAIT, call);                             \
			if (blk_r_ == 0 || xf__errno_get() != EINTR || !xf__eintr_was_ours(ticks, app))          \
				break;                                                             \
		}                                                                                  \
		blk_r_;                                                                                \
	})

#define SEM_WAIT(s, deadline, call)                                                                \
	({                                                                                         \
		struct xf_fiber *f = xf__self_may_wait();                                                      \
		int wait_r_;                                                                            \
		for (;;) {                                                                         \
			if (!f) {                                                                  \
				wait_r_ = (call);                                                       \
				break;                                                             \
			}                                                                          \
			if (!others_ready()) {                                                     \
				wait_r_ = SEM_BLOCK(f, call);                                           \
				break;                                                             \
			}                                                                          \
			if ((wait_r_ = sem_trywait(s)) == 0 || xf__errno_get() != EAGAIN) {                       \
				progress(f);                                                       \
				break;                                                             \
			}                                                                          \
			if (wait_round(f, (deadline))) {                                           \
				xf__errno_set(ETIMEDOUT);                                                 \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
		wait_r_;                                                                                \
	})

XF_INTERPOSE(int, sem_wait, (sem_t * s))
{
	return SEM_WAIT(s, 0, XF_REAL(sem_wait)(s));
}

XF_INTERPOSE(int, sem_timedwait, (sem_t * s, const struct timespec *t))
{
	return SEM_WAIT(s, deadline_of(CLOCK_REALTIME, t), XF_REAL(sem_timedwait)(s, t));
}

XF_INTERPOSE(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t))
{
	return SEM_WAIT(s, deadline_of(c, t), XF_REAL(sem_clockwait)(s, c, t));
}

/* --- the rest of the waits --- */

XF_INTERPOSE(int, pthread_barrier_wait, (pthread_barrier_t * b))
{
	/* Nothing to try: always a wait in the kernel. */
	return BLOCKING(xf__self_may_wait(), XF_BLOCKING_AT_WAIT, XF_REAL(pthread_barrier_wait)(b));
}

XF_INTERPOSE(int, pthread_spin_lock, (pthread_spinlock_t * l))
{
	struct xf_fiber *f = xf__self_may_wait();

	while (f && others_ready()) {
		if (pthread_spin_trylock(l) == 0)
			return 0;
		wait_round(f, 0);
	}
	/* Its loop holds nothing: preemptible anywhere in it. */
	return BLOCKING(f, XF_BLOCKING_SPIN, XF_REAL(pthread_spin_lock)(l));
}

XF_INTERPOSE(int, pthread_join, (pthread_t t, void **result))
{
	struct xf_fiber *f = xf__self_may_wait();

	while (f && others_ready()) {
		int err = pthread_tryjoin_np(t, result);

		if (err != EBUSY)
			return err;
		wait_round(f, 0);
	}
	return BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(pthread_join)(t, result));
}

/* --- C11 threads: glibc's pthread calls under other names --- */

static int thrd_result(int err)
{
	switch (err) {
	case 0: return thrd_success;
	case EBUSY: return thrd_busy;
	case ETIMEDOUT: return thrd_timedout;
	case ENOMEM: return thrd_nomem;
	default: return thrd_error;
	}
}

XF_REPLACE(int, mtx_lock, (mtx_t * m))
{
	return thrd_result(pthread_mutex_lock((pthread_mutex_t *)m));
}

XF_REPLACE(int, mtx_timedlock, (mtx_t * m, const struct timespec *t))
{
	return thrd_result(pthread_mutex_timedlock((pthread_mutex_t *)m, t));
}

XF_REPLACE(int, mtx_trylock, (mtx_t * m))
{
	return thrd_result(pthread_mutex_trylock((pthread_mutex_t *)m));
}

XF_REPLACE(int, mtx_unlock, (mtx_t * m))
{
	return thrd_result(pthread_mutex_unlock((pthread_mutex_t *)m));
}

XF_REPLACE(int, cnd_wait, (cnd_t * c, mtx_t *m))
{
	return thrd_result(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

XF_REPLACE(int, cnd_timedwait, (cnd_t * c, mtx_t *m, const struct timespec *t))
{
	return thrd_result(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, t));
}

XF_REPLACE(int, cnd_signal, (cnd_t * c))
{
	return thrd_result(pthread_cond_signal((pthread_cond_t *)c));
}

XF_REPLACE(int, cnd_broadcast, (cnd_t * c))
{
	return thrd_result(pthread_cond_broadcast((pthread_cond_t *)c));
}

XF_REPLACE(void, call_once, (once_flag * once, void (*init)(void)))
{
	pthread_once((pthread_once_t *)once, init);
}

XF_REPLACE(int, thrd_join, (thrd_t t, int *result))
{
	void *r;
	int err = pthread_join((pthread_t)t, &r);

	if (!err && result)
		*result = (int)(intptr_t)r;
	return thrd_result(err);
}

/* --- C++ function-local statics: libstdc++'s guard --- */

/* libstdc++'s guard word (guard.cc, with futexes): byte 0 set once the
 * object is built, bit 8 while a thread builds it. */
#define GUARD_DONE    1
#define GUARD_PENDING 0x100

static bool guard_building(struct xf_fiber *f, const void *lock)
{
	int v = __atomic_load_n((const int *)lock, __ATOMIC_ACQUIRE);

	(void)f;
	return (v & (GUARD_DONE | GUARD_PENDING)) == GUARD_PENDING;
}

/* The Itanium C++ ABI's guard acquisition; the initialiser itself runs
 * after it returns, in the program's code. */
__attribute__((visibility("default"))) int __cxa_guard_acquire(uint64_t *guard);
static __typeof__(__cxa_guard_acquire) *xf__real___cxa_guard_acquire;

int __cxa_guard_acquire(uint64_t *guard)
{
	struct xf_fiber *f = xf__self_may_wait();

	if (f)
		wait_out(f, guard_building, guard, 0);
	return BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(__cxa_guard_acquire)(guard));
}

/* --- raw futex waits --- */

/* libstdc++ waits on raw futexes through syscall(): std::future,
 * std::counting_semaphore, std::latch, std::barrier, std::atomic::wait.  A
 * futex wait may return spuriously - every caller re-checks its word - so
 * one made from a fiber while others of its worker are ready is one round
 * of waiting as a fiber, then a spurious return (EAGAIN at once if the word
 * already differs, ETIMEDOUT past an absolute deadline); a fiber alone
 * waits in the kernel, marked. */
static long futex_wait_round(struct xf_fiber *f, long *a)
{
	const uint32_t *word = (const uint32_t *)a[0];
	const unsigned op = (unsigned)a[1];
	const struct timespec *t = (const struct timespec *)a[3];
	uint64_t deadline = 0;

	if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != (uint32_t)a[2]) {
		xf__errno_set(EAGAIN);
		return -1;
	}
	if (t && (op & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET)
		deadline = deadline_of(op & FUTEX_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC, t);
	if (wait_round(f, deadline)) {
		xf__errno_set(ETIMEDOUT);
		return -1;
	}
	return 0;
}

static bool futex_wait_op(long nr, long op)
{
	unsigned cmd = (unsigned)op & FUTEX_CMD_MASK;

	return nr == SYS_futex && (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET);
}

/* Six arguments, whatever the call takes: glibc's own syscall() loads six
 * registers the same way, the last from the caller's stack - which ASan
 * would report as a read past the caller's frame. */
__attribute__((no_sanitize_address)) long syscall(long nr, ...);

XF_INTERPOSE(long, syscall, (long nr, ...))
{
	struct xf_fiber *f;
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!futex_wait_op(nr, a[1]) || !(f = xf__self_may_wait()))
		return XF_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (others_ready())
		return futex_wait_round(f, a);
	return BLOCKING(f, XF_BLOCKING_AT_WAIT,
			XF_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

/* --- stdio's FILE locks --- */

/* A FILE's lock is recursive and belongs to the thread: while a fiber held
 * one switched out, another fiber of the thread - any stdio call on that
 * FILE - would enter it.  So a fiber holds it with preemption disabled,
 * from flockfile() to funlockfile(), and must not block in between. */
XF_INTERPOSE(void, flockfile, (FILE * fp))
{
	xf__preempt_disable();
	XF_REAL(flockfile)(fp);
}

XF_INTERPOSE(int, ftrylockfile, (FILE * fp))
{
	int r;

	xf__preempt_disable();
	r = XF_REAL(ftrylockfile)(fp);
	if (r)
		xf__preempt_enable();
	return r;
}

XF_INTERPOSE(void, funlockfile, (FILE * fp))
{
	XF_REAL(funlockfile)(fp);
	if (xf__preempt_word_get() & XF_PREEMPT_NESTING)
		xf__preempt_enable();
}

/* xf_init: every definition replaced here found once, in advance (and this
 * file linked in from the static library). */
void xf__pthread_interpose_resolve(void)
{
	(void)XF_REAL(pthread_mutex_lock);
	(void)XF_REAL(pthread_mutex_timedlock);
	(void)XF_REAL(pthread_mutex_clocklock);
	(void)XF_REAL(pthread_mutex_trylock);
	(void)XF_REAL(pthread_mutex_unlock);
	(void)XF_REAL_VERSION(pthread_cond_wait, "GLIBC_2.3.2");
	(void)XF_REAL_VERSION(pthread_cond_timedwait, "GLIBC_2.3.2");
	(void)XF_REAL(pthread_cond_clockwait);
	(void)XF_REAL_VERSION(pthread_cond_signal, "GLIBC_2.3.2");
	(void)XF_REAL_VERSION(pthread_cond_broadcast, "GLIBC_2.3.2");
	(void)XF_REAL(pthread_rwlock_rdlock);
	(void)XF_REAL(pthread_rwlock_wrlock);
	(void)XF_REAL(pthread_rwlock_timedrdlock);
	(void)XF_REAL(pthread_rwlock_timedwrlock);
	(void)XF_REAL(pthread_rwlock_clockrdlock);
	(void)XF_REAL(pthread_rwlock_clockwrlock);
	(void)XF_REAL(pthread_rwlock_trywrlock);
	(void)XF_REAL(pthread_rwlock_unlock);
	(void)XF_REAL(pthread_once);
	(void)XF_REAL(sem_wait);
	(void)XF_REAL(sem_timedwait);
	(void)XF_REAL(sem_clockwait);
	(void)XF_REAL(pthread_barrier_wait);
	(void)XF_REAL(pthread_spin_lock);
	(void)XF_REAL(pthread_join);
	(void)XF_REAL(syscall);
	(void)XF_REAL(flockfile);
	(void)XF_REAL(ftrylockfile);
	(void)XF_REAL(funlockfile);
}
