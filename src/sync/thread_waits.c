/*
 * thread_waits.c - the other waits of the C library made from fibers:
 * barriers, spinlocks, pthread_join, C11 threads (glibc's pthread calls
 * under other names), libstdc++'s raw futex waits, and stdio's FILE locks
 * (the rule: sync/pthread.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <threads.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/interpose.h"
#include "sync/pthread_wait.h"

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
		xf__lock_wait_round(f, 0);
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
		xf__lock_wait_round(f, 0);
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
	int err;

	if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != (uint32_t)a[2]) {
		xf__errno_set(EAGAIN);
		return -1;
	}
	if (t && (op & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET)
		deadline = xf__lock_deadline_of(op & FUTEX_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC, t);
	err = xf__lock_wait_round(f, deadline);
	if (err) { /* ETIMEDOUT, or EINVAL as the kernel's for a bad time */
		xf__errno_set(err);
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
		xf__preempt_enable_for(__builtin_return_address(0));
	return r;
}

XF_INTERPOSE(void, funlockfile, (FILE * fp))
{
	XF_REAL(funlockfile)(fp);
	if (xf__preempt_word_get() & XF_PREEMPT_NESTING)
		xf__preempt_enable_for(__builtin_return_address(0));
}

/* xf_init, through xf__pthread_interpose_resolve: every definition replaced
 * here found once, in advance (and this file linked in from the static
 * library). */
void xf__thread_waits_resolve(void)
{
	(void)XF_REAL(pthread_barrier_wait);
	(void)XF_REAL(pthread_spin_lock);
	(void)XF_REAL(pthread_join);
	(void)XF_REAL(syscall);
	(void)XF_REAL(flockfile);
	(void)XF_REAL(ftrylockfile);
	(void)XF_REAL(funlockfile);
}
