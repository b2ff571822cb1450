/*
 * semaphore.c - POSIX semaphores waited on by fibers (the rule:
 * sync/pthread.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <semaphore.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/interpose.h"
#include "sync/pthread_wait.h"

/* --- semaphores --- */

/* Declared ahead of their definitions below, for the calls to the C
 * library's. */
XF_INTERPOSE(int, sem_wait, (sem_t * s));
XF_INTERPOSE(int, sem_timedwait, (sem_t * s, const struct timespec *t));
XF_INTERPOSE(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t));

static XF_ALWAYS_INLINE int sem_block(sem_t *s, const struct lock_call *how)
{
	switch (how->timing) {
	case LOCK_UNTIMED: return XF_REAL(sem_wait)(s);
	case LOCK_REALTIME: return XF_REAL(sem_timedwait)(s, how->abstime);
	default: return XF_REAL(sem_clockwait)(s, how->clock, how->abstime);
	}
}

/* A wait in the kernel.  A timed one cut short by the runtime's own signal
 * (EINTR) is resumed; one an application signal interrupted is not. */
static int sem_block_as_fiber(struct xf_fiber *f, sem_t *s, const struct lock_call *how)
{
	for (;;) {
		uint32_t ticks = f->preempt_signals;
		uint64_t app = xf__signal_app_count();
		int r = BLOCKING(f, XF_BLOCKING_AT_WAIT, sem_block(s, how));

		if (r == 0 || xf__errno_get() != EINTR || !xf__eintr_was_ours(ticks, app))
			return r;
	}
}

/* Tries while others of this worker are ready, else waits in the kernel;
 * -1 with errno as sem_wait's. */
static XF_ALWAYS_INLINE int sem_wait_as_fiber(sem_t *s, const struct lock_call *how)
{
	struct xf_fiber *f = xf__self_may_wait();
	uint64_t deadline_ns;
	int r, err;

	if (!f)
		return sem_block(s, how);
	deadline_ns = call_deadline(how);
	if (deadline_ns == XF_DEADLINE_INVALID) { /* before any try, as glibc's */
		xf__errno_set(EINVAL);
		return -1;
	}
	for (;;) {
		if (!others_ready())
			return sem_block_as_fiber(f, s, how);
		if ((r = sem_trywait(s)) == 0 || xf__errno_get() != EAGAIN) {
			progress(f);
			return r;
		}
		if ((err = xf__lock_wait_round(f, deadline_ns))) {
			xf__errno_set(err);
			return -1;
		}
	}
}

XF_INTERPOSE(int, sem_wait, (sem_t * s))
{
	return sem_wait_as_fiber(s, &UNTIMED);
}

XF_INTERPOSE(int, sem_timedwait, (sem_t * s, const struct timespec *t))
{
	return sem_wait_as_fiber(s, &REALTIME(t));
}

XF_INTERPOSE(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t))
{
	return sem_wait_as_fiber(s, &ON_CLOCK(c, t));
}

/* xf_init, through xf__pthread_interpose_resolve: every definition replaced
 * here found once, in advance (and this file linked in from the static
 * library). */
void xf__semaphore_resolve(void)
{
	(void)XF_REAL(sem_wait);
	(void)XF_REAL(sem_timedwait);
	(void)XF_REAL(sem_clockwait);
}
