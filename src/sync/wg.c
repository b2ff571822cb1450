/*
 * wg.c - xf_wg: a wait group, Go's sync.WaitGroup.
 *
 * A count and a queue of fibers waiting for it to reach zero, under the
 * queue's spinlock.  The add that brings the count to zero wakes every
 * waiter at once; a wait that finds zero returns at once.  The count may
 * rise again afterwards: the group is reusable, as Go's is, once its
 * waiters have been woken.
 */
#include <errno.h>

#include "sched/sched.h"

int xf_wg_init(xf_wg *wg)
{
	if (!wg)
		return EINVAL;
	*wg = (xf_wg)XF_WG_INITIALIZER;
	return 0;
}

int xf_wg_add(xf_wg *wg, int64_t delta)
{
	struct xf_fiber *woken = NULL;

	if (!wg)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&wg->wq));
	/* count + delta < 0, without negating delta: -INT64_MIN overflows. */
	if ((delta < 0 && wg->count + delta < 0) || (delta > 0 && wg->count > INT64_MAX - delta)) {
		xf__spin_unlock(xf__waitq_lock(&wg->wq));
		return EINVAL; /* below zero, or past the count's range */
	}
	wg->count += delta;
	if (!wg->count)
		woken = xf__waitq_claim_all(&wg->wq, XF_WAIT_WOKEN, NULL);
	xf__spin_unlock(xf__waitq_lock(&wg->wq));
	xf__wake_list(woken);
	return 0;
}

int xf_wg_done(xf_wg *wg)
{
	return xf_wg_add(wg, -1);
}

int xf_wg_timedwait(xf_wg *wg, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread();
	int state;

	if (!wg)
		return EINVAL;
	if (timeout_ns && xf__cancel_point())
		return ECANCELED;
	xf__spin_lock(xf__waitq_lock(&wg->wq));
	if (!wg->count || !timeout_ns || !self) {
		int64_t count = wg->count;

		xf__spin_unlock(xf__waitq_lock(&wg->wq));
		return !count ? 0 : !timeout_ns ? ETIMEDOUT : EPERM;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the queue's lock */
		xf__spin_unlock(xf__waitq_lock(&wg->wq));
		return xf__misuse_preempt_disabled("xf_wg_wait");
	}
	state = xf__waitq_wait(&wg->wq, xf__waitq_lock(&wg->wq), self,
			       timeout_ns == XF_FOREVER ? 0 : timeout_ns, XF_WAIT_ON_WG, wg);
	return state == XF_WAIT_TIMEDOUT ? ETIMEDOUT : state == XF_WAIT_CANCELED ? ECANCELED : 0;
}

int xf_wg_wait(xf_wg *wg)
{
	return xf_wg_timedwait(wg, XF_FOREVER);
}
