/*
 * pthread.c - pthread, C11, semaphore and C++ waits made from fibers.
 *
 * A fiber that waits in the kernel blocks its worker's thread, and with it
 * every other fiber that thread could run.  When what it waits for is held
 * by one of those fibers - a pthread mutex, a once-object, a C++ static's
 * guard, held by a fiber preempted in the middle - nothing moves again: a
 * preempted fiber resumes only on the thread it was interrupted on
 * (preempt/signal.c).  These calls are therefore interposed
 * (common/interpose.h); made from a fiber, each does two things around the
 * C library's own code:
 *
 *  1. It marks the fiber XF_BLOCKING_AT_WAIT for the length of the call:
 *     "holds no lock where it waits in the kernel".  That is true of every
 *     call here - they wait on futexes with nothing of their own held, or
 *     only locks that other callers of these same calls wait for - so the
 *     preemption handler may switch the fiber away right there, although
 *     the pc lies in libc, which is otherwise never preempted.  The kernel
 *     has rewound the wait for restart (SA_RESTART), and the fiber issues it
 *     again when it resumes; a timed wait, which the kernel ends with EINTR
 *     instead, is retried by the C library (mutexes, condition variables,
 *     rwlocks) or here (semaphores).  The ticker signals a worker whose
 *     fiber sits in such a wait at its next tick, without waiting for a
 *     slice to pass, and the handler keeps the fiber out while the futex
 *     word is unchanged and other fibers can run.
 *  2. Locks the thread owns - recursive and error-checking mutexes, the
 *     write side of rwlocks - record a thread id, and glibc decides
 *     recursion, EDEADLK and even which kind of unlock to do by comparing
 *     it with the caller's.  Two fibers of one thread would pass for one
 *     owner.  So a fiber that finds such a lock held by its own thread but
 *     not by itself waits as a fiber (yields, or sleeps with a backoff)
 *     until that changes, and a fiber that holds one stays on its thread
 *     (XF_FIBER_F_STAY) until it lets go: its unlock must come from the
 *     same thread id.  A normal mutex held by another fiber of the thread
 *     is waited out the same way, which spares the worker a sleep in the
 *     kernel until the next tick.
 *
 * pthread_once's routine, unlike the waits, is the program's own code: it
 * runs with the mark taken off (once_routine), so a lock the C library
 * takes inside it is not mistaken for one that is safe to wait at.
 *
 * Outside a fiber, and with preemption disabled, every call is the C
 * library's, untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <threads.h>
#include <time.h>

#include "common/interpose.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

/* glibc's mutex kinds (nptl/pthreadP.h): the type, and the flags that make
 * the kernel track the owner. */
#define MUTEX_TYPE_MASK	   3
#define MUTEX_ROBUST	   16
#define MUTEX_PRIO_INHERIT 32
#define MUTEX_PRIO_PROTECT 64

#define WAIT_BACKOFF_MIN_NS 1000
#define WAIT_BACKOFF_MAX_NS (1000 * 1000)

/* The calling fiber, if these calls should treat it as one: not the
 * runtime's own code, nor code that disabled preemption. */
static struct xf_fiber *fiber(void)
{
	struct xf_fiber *f = xf__self();

	return f && !(xf__preempt_word_get() & XF_PREEMPT_NESTING) ? f : NULL;
}

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

/* C library call `call`, made by fiber f (or NULL) as a blocking call. */
#define BLOCKING(f, kind, call)                                                                    \
	({                                                                                         \
		struct xf_fiber *f_ = (f);                                                         \
		uint8_t prev_ = f_ ? mark(f_, (kind)) : 0;                                         \
		__typeof__(call) r_ = (call);                                                      \
		if (f_)                                                                            \
			unmark(f_, prev_);                                                         \
		r_;                                                                                \
	})

/* --- thread-owned locks --- */

static pid_t my_tid(void)
{
	return xf__this_worker()->tid;
}

static bool owns(const struct xf_fiber *f, const void *lock)
{
	for (unsigned i = 0; i < f->owned_nr; i++) {
		if (f->owned[i] == lock)
			return true;
	}
	return false;
}

/* f now holds a lock its thread owns: it stays on this worker. */
static void own(struct xf_fiber *f, const void *lock)
{
	if (owns(f, lock) || f->owned_nr == XF_OWNED_LOCKS_MAX)
		return; /* past the table, a later check can only err towards waiting */
	f->owned[f->owned_nr++] = lock;
	xf__preempt_disable(); /* home and flags together, before any wake-up */
	f->home = (int)xf__this_worker()->id;
	f->flags |= XF_FIBER_F_STAY;
	xf__preempt_enable();
}

static void disown(struct xf_fiber *f, const void *lock)
{
	for (unsigned i = 0; i < f->owned_nr; i++) {
		if (f->owned[i] != lock)
			continue;
		f->owned[i] = f->owned[--f->owned_nr];
		if (!f->owned_nr && !(f->flags & XF_FIBER_F_FIRST))
			f->flags &= ~XF_FIBER_F_STAY;
		return;
	}
}

/* Whether a lock whose owner field says `owner` is held by another fiber of
 * this thread. */
static bool held_here_by_another(const struct xf_fiber *f, pid_t owner, const void *lock)
{
	return owner && owner == my_tid() && !owns(f, lock);
}

/* Waits as a fiber while `held` says the lock is another fiber's of this
 * thread: a yield when other fibers wait to run (the holder may be one),
 * else a sleep, doubled each time.  0, or ETIMEDOUT at deadline_ns
 * (CLOCK_MONOTONIC; 0 = none). */
static int wait_out(struct xf_fiber *f, bool (*held)(struct xf_fiber *, const void *),
		    const void *lock, uint64_t deadline_ns)
{
	uint64_t ns = WAIT_BACKOFF_MIN_NS;

	while (held(f, lock)) {
		if (deadline_ns && xf__now_ns() >= deadline_ns)
			return ETIMEDOUT;
		if (atomic_load_explicit(&xf__this_worker()->nr_queued, memory_order_relaxed)) {
			xf_yield();
			continue;
		}
		xf_sleep_ns(ns);
		if (ns < WAIT_BACKOFF_MAX_NS)
			ns *= 2;
	}
	return 0;
}

static int mutex_kind(const pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
}

/* Recursive, error-checking, robust and priority-inheriting mutexes
 * compare their owner's thread id with the caller's. */
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

	return held_here_by_another(f, __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) &
					   0x3fffffff /* FUTEX_TID_MASK */,
				    lock);
}

static bool rwlock_held_here(struct xf_fiber *f, const void *lock)
{
	const pthread_rwlock_t *rw = lock;

	return held_here_by_another(
	    f, __atomic_load_n(&rw->__data.__cur_writer, __ATOMIC_RELAXED), lock);
}

/* CLOCK_MONOTONIC deadline for an absolute time on clock c. */
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

/* The common part of every mutex lock: wait out another fiber of this
 * thread, lock, remember a thread-owned one. */
#define MUTEX_LOCK(m, deadline, call)                                                              \
	({                                                                                         \
		struct xf_fiber *f = fiber();                                                      \
		int err = f ? wait_out(f, mutex_held_here, (m), (deadline)) : 0;                   \
		if (!err)                                                                          \
			err = BLOCKING(f, XF_BLOCKING_AT_WAIT, call);                              \
		if (!err && f && mutex_thread_owned(m))                                            \
			own(f, (m));                                                               \
		err;                                                                               \
	})

XF_INTERPOSE(int, pthread_mutex_lock, (pthread_mutex_t * m))
{
	return MUTEX_LOCK(m, 0, XF_REAL(pthread_mutex_lock)(m));
}

XF_INTERPOSE(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t))
{
	return MUTEX_LOCK(m, deadline_of(CLOCK_REALTIME, t), XF_REAL(pthread_mutex_timedlock)(m, t));
}

XF_INTERPOSE(int, pthread_mutex_clocklock,
	     (pthread_mutex_t * m, clockid_t c, const struct timespec *t))
{
	return MUTEX_LOCK(m, deadline_of(c, t), XF_REAL(pthread_mutex_clocklock)(m, c, t));
}

XF_INTERPOSE(int, pthread_mutex_trylock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = fiber();
	int err;

	/* A recursive mutex would count another fiber of this thread in. */
	if (f && mutex_held_here(f, m))
		return EBUSY;
	err = XF_REAL(pthread_mutex_trylock)(m);
	if (!err && f && mutex_thread_owned(m))
		own(f, m);
	return err;
}

XF_INTERPOSE(int, pthread_mutex_unlock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = fiber();
	int err;

	if (!f || !mutex_thread_owned(m))
		return XF_REAL(pthread_mutex_unlock)(m);
	/* Another fiber's lock, which glibc would take for ours. */
	if (mutex_held_here(f, m) && (mutex_kind(m) & MUTEX_TYPE_MASK) != PTHREAD_MUTEX_NORMAL)
		return EPERM;
	err = XF_REAL(pthread_mutex_unlock)(m);
	if (!err && __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) != my_tid())
		disown(f, m); /* released, not just one level of recursion */
	return err;
}

/* --- condition variables --- */

/* After glibc's wait re-locked m (a thread-owned kind): if another fiber of
 * this thread held it meanwhile, glibc counted us in (recursive) or gave
 * up (error-checking, EDEADLK); take it properly, as a fiber.  What the
 * wait returned stands: a wake-up that needs a second look is allowed. */
static int cond_relock(struct xf_fiber *f, pthread_mutex_t *m, int err)
{
	int type = mutex_kind(m) & MUTEX_TYPE_MASK;

	if (type == PTHREAD_MUTEX_RECURSIVE_NP && !err && m->__data.__count > 1) {
		XF_REAL(pthread_mutex_unlock)(m);
		err = pthread_mutex_lock(m) ?: err;
	} else if (type == PTHREAD_MUTEX_ERRORCHECK_NP && err == EDEADLK) {
		err = pthread_mutex_lock(m);
	} else if (!err) {
		own(f, m);
	}
	return err;
}

#define COND_WAIT(c, m, call)                                                                      \
	({                                                                                         \
		struct xf_fiber *f = fiber();                                                      \
		bool owned = f && mutex_thread_owned(m);                                           \
		int err;                                                                           \
		if (owned)                                                                         \
			disown(f, (m)); /* glibc releases it for the wait */                       \
		err = BLOCKING(f, XF_BLOCKING_AT_WAIT, call);                                      \
		if (owned)                                                                         \
			err = cond_relock(f, (m), err);                                            \
		err;                                                                               \
	})

XF_INTERPOSE(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m))
{
	return COND_WAIT(c, m, XF_REAL_VERSION(pthread_cond_wait, "GLIBC_2.3.2")(c, m));
}

XF_INTERPOSE(int, pthread_cond_timedwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t))
{
	return COND_WAIT(c, m, XF_REAL_VERSION(pthread_cond_timedwait, "GLIBC_2.3.2")(c, m, t));
}

XF_INTERPOSE(int, pthread_cond_clockwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t))
{
	return COND_WAIT(c, m, XF_REAL(pthread_cond_clockwait)(c, m, clk, t));
}

/* Signalling may wait too: for the waiters of the group it closes to leave
 * it, with the condition variable's internal lock held - which only other
 * calls on it wait for, all of them marked. */
XF_INTERPOSE(int, pthread_cond_signal, (pthread_cond_t * c))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT,
			XF_REAL_VERSION(pthread_cond_signal, "GLIBC_2.3.2")(c));
}

XF_INTERPOSE(int, pthread_cond_broadcast, (pthread_cond_t * c))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT,
			XF_REAL_VERSION(pthread_cond_broadcast, "GLIBC_2.3.2")(c));
}

/* --- rwlocks --- */

#define RWLOCK(rw, deadline, write, call)                                                          \
	({                                                                                         \
		struct xf_fiber *f = fiber();                                                      \
		int err = f ? wait_out(f, rwlock_held_here, (rw), (deadline)) : 0;                 \
		if (!err)                                                                          \
			err = BLOCKING(f, XF_BLOCKING_AT_WAIT, call);                              \
		if (!err && f && (write))                                                          \
			own(f, (rw));                                                              \
		err;                                                                               \
	})

XF_INTERPOSE(int, pthread_rwlock_rdlock, (pthread_rwlock_t * rw))
{
	return RWLOCK(rw, 0, false, XF_REAL(pthread_rwlock_rdlock)(rw));
}

XF_INTERPOSE(int, pthread_rwlock_wrlock, (pthread_rwlock_t * rw))
{
	return RWLOCK(rw, 0, true, XF_REAL(pthread_rwlock_wrlock)(rw));
}

XF_INTERPOSE(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(CLOCK_REALTIME, t), false,
		      XF_REAL(pthread_rwlock_timedrdlock)(rw, t));
}

XF_INTERPOSE(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(CLOCK_REALTIME, t), true,
		      XF_REAL(pthread_rwlock_timedwrlock)(rw, t));
}

XF_INTERPOSE(int, pthread_rwlock_clockrdlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(c, t), false, XF_REAL(pthread_rwlock_clockrdlock)(rw, c, t));
}

XF_INTERPOSE(int, pthread_rwlock_clockwrlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return RWLOCK(rw, deadline_of(c, t), true, XF_REAL(pthread_rwlock_clockwrlock)(rw, c, t));
}

XF_INTERPOSE(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * rw))
{
	struct xf_fiber *f = fiber();
	int err = XF_REAL(pthread_rwlock_trywrlock)(rw);

	if (!err && f)
		own(f, rw);
	return err;
}

XF_INTERPOSE(int, pthread_rwlock_unlock, (pthread_rwlock_t * rw))
{
	struct xf_fiber *f = fiber();
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

/* The routine runs as the program's own code, unmarked. */
static void once_routine(void)
{
	struct xf_fiber *f = xf__self();
	void (*init)(void) = f->once_init;
	uint8_t prev = mark(f, XF_BLOCKING_NONE);

	init();
	unmark(xf__self(), prev); /* the same fiber, perhaps on another worker */
}

XF_INTERPOSE(int, pthread_once, (pthread_once_t * once, void (*init)(void)))
{
	struct xf_fiber *f = fiber();
	void (*outer)(void);
	int err;

	if (!f)
		return XF_REAL(pthread_once)(once, init);
	outer = f->once_init; /* a routine that calls pthread_once itself */
	f->once_init = init;
	err = BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(pthread_once)(once, once_routine));
	f->once_init = outer;
	return err;
}

/* --- semaphores --- */

/* A timed semaphore wait cut short by the runtime's own signal (EINTR) is
 * resumed; one an application signal interrupted is not. */
#define SEM_WAIT(call)                                                                             \
	({                                                                                         \
		struct xf_fiber *f = fiber();                                                      \
		int r;                                                                             \
		for (;;) {                                                                         \
			uint32_t ticks = f ? f->preempt_signals : 0;                               \
			uint64_t app = xf__signal_app_count();                                     \
			r = BLOCKING(f, XF_BLOCKING_AT_WAIT, call);                                \
			if (r == 0 || errno != EINTR || !f || f->preempt_signals == ticks ||       \
			    xf__signal_app_count() != app)                                         \
				break;                                                             \
		}                                                                                  \
		r;                                                                                 \
	})

XF_INTERPOSE(int, sem_wait, (sem_t * s))
{
	return SEM_WAIT(XF_REAL(sem_wait)(s));
}

XF_INTERPOSE(int, sem_timedwait, (sem_t * s, const struct timespec *t))
{
	return SEM_WAIT(XF_REAL(sem_timedwait)(s, t));
}

XF_INTERPOSE(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t))
{
	return SEM_WAIT(XF_REAL(sem_clockwait)(s, c, t));
}

/* --- the rest of the waits --- */

XF_INTERPOSE(int, pthread_barrier_wait, (pthread_barrier_t * b))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(pthread_barrier_wait)(b));
}

XF_INTERPOSE(int, pthread_spin_lock, (pthread_spinlock_t * l))
{
	/* Its loop holds nothing: preemptible anywhere in it. */
	return BLOCKING(fiber(), XF_BLOCKING_SPIN, XF_REAL(pthread_spin_lock)(l));
}

XF_INTERPOSE(int, pthread_join, (pthread_t t, void **result))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(pthread_join)(t, result));
}

/* C11 threads: glibc implements them on the pthread calls above, but calls
 * its own internal entry points, past the interposition. */
XF_INTERPOSE(int, mtx_lock, (mtx_t * m))
{
	return MUTEX_LOCK((pthread_mutex_t *)m, 0, XF_REAL(mtx_lock)(m));
}

XF_INTERPOSE(int, mtx_timedlock, (mtx_t * m, const struct timespec *t))
{
	int r = MUTEX_LOCK((pthread_mutex_t *)m, deadline_of(CLOCK_REALTIME, t),
			   XF_REAL(mtx_timedlock)(m, t));

	return r == ETIMEDOUT ? thrd_timedout : r;
}

XF_INTERPOSE(int, mtx_unlock, (mtx_t * m))
{
	return pthread_mutex_unlock((pthread_mutex_t *)m) ? thrd_error : thrd_success;
}

XF_INTERPOSE(int, cnd_wait, (cnd_t * c, mtx_t *m))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(cnd_wait)(c, m));
}

XF_INTERPOSE(int, cnd_timedwait, (cnd_t * c, mtx_t *m, const struct timespec *t))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(cnd_timedwait)(c, m, t));
}

XF_INTERPOSE(int, cnd_signal, (cnd_t * c))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(cnd_signal)(c));
}

XF_INTERPOSE(int, cnd_broadcast, (cnd_t * c))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(cnd_broadcast)(c));
}

XF_INTERPOSE(void, call_once, (once_flag * once, void (*init)(void)))
{
	pthread_once((pthread_once_t *)once, init);
}

XF_INTERPOSE(int, thrd_join, (thrd_t t, int *result))
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(thrd_join)(t, result));
}

/* --- C++ function-local statics: libstdc++'s guard --- */

/* The Itanium C++ ABI's guard acquisition; the initialiser itself runs
 * after it returns, in the program's code. */
__attribute__((visibility("default"))) int __cxa_guard_acquire(uint64_t *guard);
static __typeof__(__cxa_guard_acquire) *xf__real___cxa_guard_acquire;

int __cxa_guard_acquire(uint64_t *guard)
{
	return BLOCKING(fiber(), XF_BLOCKING_AT_WAIT, XF_REAL(__cxa_guard_acquire)(guard));
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
	(void)XF_REAL(mtx_lock);
	(void)XF_REAL(mtx_timedlock);
	(void)XF_REAL(mtx_unlock);
	(void)XF_REAL(cnd_wait);
	(void)XF_REAL(cnd_timedwait);
	(void)XF_REAL(cnd_signal);
	(void)XF_REAL(cnd_broadcast);
	(void)XF_REAL(call_once);
	(void)XF_REAL(thrd_join);
}
