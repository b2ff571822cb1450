/*
 * mutex.c - xf_mutex: a fiber mutex with direct hand-off.
 *
 * Unlock gives the mutex straight to the first waiter (owner = waiter)
 * before waking it, so a woken waiter never has to compete again and no
 * wake-up is lost or wasted.  Owner, queue and the decision are all under
 * the wait queue's spinlock.
 */
#include <errno.h>

#include "sched/sched.h"

int xf_mutex_init(xf_mutex *m)
{
	if (!m)
		return EINVAL;
	*m = (xf_mutex)XF_MUTEX_INITIALIZER;
	return 0;
}

int xf_mutex_destroy(xf_mutex *m)
{
	int err = 0;

	if (!m)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&m->wq));
	if (m->owner || m->wq.head)
		err = EBUSY;
	xf__spin_unlock(xf__waitq_lock(&m->wq));
	return err;
}

static int lock_common(xf_mutex *m, bool try)
{
	struct xf_fiber *self = xf__self_or_thread();

	if (!m)
		return EINVAL;
	if (!self)
		return EPERM;
	xf__spin_lock(xf__waitq_lock(&m->wq));
	if (!m->owner) {
		m->owner = self;
		self->mutexes_held++;
		xf__spin_unlock(xf__waitq_lock(&m->wq));
		return 0;
	}
	if (m->owner == self || try) {
		xf__spin_unlock(xf__waitq_lock(&m->wq));
		return m->owner == self && !try ? EDEADLK : EBUSY;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the queue's lock */
		xf__spin_unlock(xf__waitq_lock(&m->wq));
		return xf__misuse_preempt_disabled("xf_mutex_lock");
	}
	/* Released with the mutex already ours (hand-off). */
	xf__waitq_wait(&m->wq, xf__waitq_lock(&m->wq), self, 0, XF_WAIT_ON_MUTEX, m);
	XF_WARN_ON(m->owner != self);
	return 0;
}

int xf_mutex_lock(xf_mutex *m)
{
	return lock_common(m, false);
}

int xf_mutex_trylock(xf_mutex *m)
{
	return lock_common(m, true);
}

int xf_mutex_unlock(xf_mutex *m)
{
	struct xf_fiber *self = xf__self_or_thread();
	struct xf_fiber *next;

	if (!m)
		return EINVAL;
	if (!self)
		return EPERM;
	xf__spin_lock(xf__waitq_lock(&m->wq));
	if (m->owner != self) {
		xf__spin_unlock(xf__waitq_lock(&m->wq));
		return EPERM;
	}
	next = xf__waitq_claim(&m->wq, XF_WAIT_WOKEN);
	m->owner = next;
	self->mutexes_held--;
	if (next)
		next->mutexes_held++; /* handed over: counted for it */
	xf__spin_unlock(xf__waitq_lock(&m->wq));
	if (next)
		xf__wake(next);
	return 0;
}
