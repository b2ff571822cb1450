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
			if (xf__lock_wait_round(f, (deadline))) {                                           \
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
	return SEM_WAIT(s, xf__lock_deadline_of(CLOCK_REALTIME, t), XF_REAL(sem_timedwait)(s, t));
}

XF_INTERPOSE(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t))
{
	return SEM_WAIT(s, xf__lock_deadline_of(c, t), XF_REAL(sem_clockwait)(s, c, t));
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
