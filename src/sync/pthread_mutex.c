/*
 * pthread_mutex.c - pthread mutexes, condition variables and rwlocks
 * waited for by fibers (the rule: sync/pthread.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/interpose.h"
#include "sync/pthread_wait.h"

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
static int mutex_try(struct xf_fiber *f, pthread_mutex_t *m, const void *caller)
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
	xf__preempt_enable_for(caller);
	return err;
}

/* Declared ahead of their definitions below, for the calls to the C
 * library's. */
XF_INTERPOSE(int, pthread_mutex_lock, (pthread_mutex_t * m));
XF_INTERPOSE(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t));
XF_INTERPOSE(int, pthread_mutex_clocklock,
	     (pthread_mutex_t * m, clockid_t c, const struct timespec *t));

static XF_ALWAYS_INLINE int mutex_block(pthread_mutex_t *m, const struct lock_call *how)
{
	switch (how->timing) {
	case LOCK_UNTIMED: return XF_REAL(pthread_mutex_lock)(m);
	case LOCK_REALTIME: return XF_REAL(pthread_mutex_timedlock)(m, how->abstime);
	default: return XF_REAL(pthread_mutex_clocklock)(m, how->clock, how->abstime);
	}
}

/* Locks m for fiber f by tries while it must wait as a fiber, then - a
 * normal mutex, nothing else ready - by the C library's wait in the
 * kernel. */
static XF_ALWAYS_INLINE int mutex_lock_as_fiber(struct xf_fiber *f, pthread_mutex_t *m,
						const struct lock_call *how)
{
	uint64_t deadline_ns = call_deadline(how);
	int err;

	for (;;) {
		if (owns(f, m)) { /* again: recursion, or EDEADLK */
			err = mutex_block(m, how);
			break;
		}
		if (mutex_thread_owned(m) || others_ready() || mutex_held_here(f, m)) {
			err = mutex_try(f, m, how->caller);
			if (err != EBUSY || (err = xf__lock_wait_round(f, deadline_ns)))
				break;
			continue;
		}
		err = BLOCKING(f, XF_BLOCKING_AT_WAIT, mutex_block(m, how));
		break;
	}
	if (!err)
		progress(f);
	return err;
}

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

/* A fiber's mutexes held, counted at the calls the program makes (never
 * the unlock and lock inside a condition wait): while it holds one, a
 * preempted fiber does not step aside for fibers just woken, which would
 * keep the mutex's waiters waiting with it (sched/schedule.c). */
static inline int counted_lock(struct xf_fiber *f, int err)
{
	if (!err && (f || (f = xf__self())))
		f->mutexes_held++;
	return err;
}

static inline void counted_unlock(struct xf_fiber *f)
{
	if ((f || (f = xf__self())) && f->mutexes_held)
		f->mutexes_held--;
}

XF_INTERPOSE(int, pthread_mutex_lock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();
	int err;

	if (!f) {
		if (xf__self() && (err = misuse_if_held_here(m, "pthread_mutex_lock")))
			return err;
		return counted_lock(NULL, XF_REAL(pthread_mutex_lock)(m));
	}
	/* The common case first: free, and nobody of this thread in the way. */
	if (!mutex_thread_owned(m) && XF_REAL(pthread_mutex_trylock)(m) == 0)
		return counted_lock(f, 0);
	return counted_lock(f, mutex_lock_as_fiber(f, m, &UNTIMED));
}

XF_INTERPOSE(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return counted_lock(NULL, XF_REAL(pthread_mutex_timedlock)(m, t));
	return counted_lock(f, mutex_lock_as_fiber(f, m, &REALTIME(t)));
}

XF_INTERPOSE(int, pthread_mutex_clocklock,
	     (pthread_mutex_t * m, clockid_t c, const struct timespec *t))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return counted_lock(NULL, XF_REAL(pthread_mutex_clocklock)(m, c, t));
	return counted_lock(f, mutex_lock_as_fiber(f, m, &ON_CLOCK(c, t)));
}

XF_INTERPOSE(int, pthread_mutex_trylock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return counted_lock(NULL, XF_REAL(pthread_mutex_trylock)(m));
	return counted_lock(f, owns(f, m) ? XF_REAL(pthread_mutex_trylock)(m)
					  : mutex_try(f, m, CALLER));
}

XF_INTERPOSE(int, pthread_mutex_unlock, (pthread_mutex_t * m));

static int mutex_unlock(struct xf_fiber *f, pthread_mutex_t *m, const void *caller)
{
	int err;

	/* Another fiber's lock, which glibc would take for ours. */
	if (!owns(f, m) && mutex_held_here(f, m))
		return EPERM;
	err = XF_REAL(pthread_mutex_unlock)(m);
	if (!err && (__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) & FUTEX_TID_MASK) !=
			my_tid())
		disown(f, m, caller); /* released, not just one level of recursion */
	return err;
}

XF_INTERPOSE(int, pthread_mutex_unlock, (pthread_mutex_t * m))
{
	struct xf_fiber *f = xf__self_may_wait();
	int err;

	progress(f);
	/* The common case first: a normal mutex, whose unlock needs nothing. */
	if (!f || !mutex_thread_owned(m))
		err = XF_REAL(pthread_mutex_unlock)(m);
	else
		err = mutex_unlock(f, m, CALLER);
	if (!err)
		counted_unlock(f);
	return err;
}

/* --- condition variables --- */

/* A wait while other fibers of this worker are ready, or on a mutex its
 * thread owns: their turn first, then a spurious wake-up with the mutex
 * held again; ETIMEDOUT past deadline_ns. */
static int cond_wait_round(struct xf_fiber *f, pthread_mutex_t *m, uint64_t deadline_ns)
{
	int err =
	    mutex_thread_owned(m) ? mutex_unlock(f, m, NULL) : XF_REAL(pthread_mutex_unlock)(m);
	uint32_t polls;

	if (err)
		return err;
	err = xf__lock_wait_round(f, deadline_ns);
	polls = f->polls; /* the lock again is no progress of the wait's */
	/* From inside the wait: no preemption point of the caller's. */
	mutex_lock_as_fiber(f, m, &(struct lock_call){.timing = LOCK_UNTIMED});
	f->polls = polls;
	if (!err && deadline_ns && xf__now_ns() >= deadline_ns)
		err = ETIMEDOUT;
	return err;
}

XF_INTERPOSE(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m));
XF_INTERPOSE(int, pthread_cond_timedwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t));
XF_INTERPOSE(int, pthread_cond_clockwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t));

static XF_ALWAYS_INLINE int cond_block(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct lock_call *how)
{
	switch (how->timing) {
	case LOCK_UNTIMED: return XF_REAL_VERSION(pthread_cond_wait, "GLIBC_2.3.2")(c, m);
	case LOCK_REALTIME:
		return XF_REAL_VERSION(pthread_cond_timedwait, "GLIBC_2.3.2")(c, m, how->abstime);
	default: return XF_REAL(pthread_cond_clockwait)(c, m, how->clock, how->abstime);
	}
}

static XF_ALWAYS_INLINE int cond_wait(pthread_cond_t *c, pthread_mutex_t *m,
				      const struct lock_call *how)
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return cond_block(c, m, how);
	if (others_ready() || mutex_thread_owned(m)) {
		uint64_t deadline_ns = call_deadline(how);

		/* Checked first, as glibc's: the mutex stays locked. */
		return deadline_ns == XF_DEADLINE_INVALID ? EINVAL
							  : cond_wait_round(f, m, deadline_ns);
	}
	return BLOCKING(f, XF_BLOCKING_AT_WAIT, cond_block(c, m, how));
}

XF_INTERPOSE(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m))
{
	return cond_wait(c, m, &UNTIMED);
}

XF_INTERPOSE(int, pthread_cond_timedwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t))
{
	return cond_wait(c, m, &REALTIME(t));
}

XF_INTERPOSE(int, pthread_cond_clockwait,
	     (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t))
{
	return cond_wait(c, m, &ON_CLOCK(clk, t));
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

XF_INTERPOSE(int, pthread_rwlock_rdlock, (pthread_rwlock_t * rw));
XF_INTERPOSE(int, pthread_rwlock_wrlock, (pthread_rwlock_t * rw));
XF_INTERPOSE(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * rw, const struct timespec *t));
XF_INTERPOSE(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * rw, const struct timespec *t));
XF_INTERPOSE(int, pthread_rwlock_clockrdlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t));
XF_INTERPOSE(int, pthread_rwlock_clockwrlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t));

static XF_ALWAYS_INLINE int rwlock_block(pthread_rwlock_t *rw, bool write,
					 const struct lock_call *how)
{
	switch (how->timing) {
	case LOCK_UNTIMED:
		return write ? XF_REAL(pthread_rwlock_wrlock)(rw)
			     : XF_REAL(pthread_rwlock_rdlock)(rw);
	case LOCK_REALTIME:
		return write ? XF_REAL(pthread_rwlock_timedwrlock)(rw, how->abstime)
			     : XF_REAL(pthread_rwlock_timedrdlock)(rw, how->abstime);
	default:
		return write ? XF_REAL(pthread_rwlock_clockwrlock)(rw, how->clock, how->abstime)
			     : XF_REAL(pthread_rwlock_clockrdlock)(rw, how->clock, how->abstime);
	}
}

XF_INTERPOSE(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * rw));

/* The write side and its record together, as mutex_try does. */
static int rwlock_trywr(struct xf_fiber *f, pthread_rwlock_t *rw, const void *caller)
{
	int err;

	own_reserve(f);
	xf__preempt_disable();
	err = XF_REAL(pthread_rwlock_trywrlock)(rw);
	if (!err)
		own_locked(f, rw);
	xf__preempt_enable_for(caller);
	return err;
}

/* Tries while it must wait as a fiber, then blocks; an EDEADLK from glibc
 * when another fiber of this thread took the write side meanwhile is only
 * another round. */
static XF_ALWAYS_INLINE int rwlock_lock(pthread_rwlock_t *rw, bool write,
					const struct lock_call *how)
{
	struct xf_fiber *f = xf__self_may_wait();
	uint64_t deadline_ns;
	int err;

	if (!f)
		return rwlock_block(rw, write, how);
	deadline_ns = call_deadline(how);
	if (deadline_ns == XF_DEADLINE_INVALID)
		return EINVAL; /* before any try, as glibc's */
	for (;;) {
		if (rwlock_held_here(f, rw)) {
			err = EBUSY;
		} else if (others_ready()) {
			err =
			    write ? rwlock_trywr(f, rw, how->caller) : pthread_rwlock_tryrdlock(rw);
		} else {
			err = BLOCKING(f, XF_BLOCKING_AT_WAIT, rwlock_block(rw, write, how));
			if (err == EDEADLK && !owns(f, rw))
				err = EBUSY;
		}
		if (err != EBUSY || (err = xf__lock_wait_round(f, deadline_ns)))
			break;
	}
	if (!err && write)
		own(f, rw, how->caller);
	if (!err)
		progress(f);
	return err;
}

XF_INTERPOSE(int, pthread_rwlock_rdlock, (pthread_rwlock_t * rw))
{
	return rwlock_lock(rw, false, &UNTIMED);
}

XF_INTERPOSE(int, pthread_rwlock_wrlock, (pthread_rwlock_t * rw))
{
	return rwlock_lock(rw, true, &UNTIMED);
}

XF_INTERPOSE(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return rwlock_lock(rw, false, &REALTIME(t));
}

XF_INTERPOSE(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * rw, const struct timespec *t))
{
	return rwlock_lock(rw, true, &REALTIME(t));
}

XF_INTERPOSE(int, pthread_rwlock_clockrdlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return rwlock_lock(rw, false, &ON_CLOCK(c, t));
}

XF_INTERPOSE(int, pthread_rwlock_clockwrlock,
	     (pthread_rwlock_t * rw, clockid_t c, const struct timespec *t))
{
	return rwlock_lock(rw, true, &ON_CLOCK(c, t));
}

XF_INTERPOSE(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * rw))
{
	struct xf_fiber *f = xf__self_may_wait();

	if (!f)
		return XF_REAL(pthread_rwlock_trywrlock)(rw);
	return rwlock_trywr(f, rw, CALLER);
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
		disown(f, rw, CALLER);
	return err;
}

/* xf_init, through xf__pthread_interpose_resolve: every definition replaced
 * here found once, in advance (and this file linked in from the static
 * library). */
void xf__pthread_mutex_resolve(void)
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
}
