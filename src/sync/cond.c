/* cond.c - xf_cond: condition variables over xf_mutex, with timed waits. */
#include <errno.h>

#include "sched/sched.h"

int xf_cond_init(xf_cond *c)
{
	if (!c)
		return EINVAL;
	*c = (xf_cond)XF_COND_INITIALIZER;
	return 0;
}

int xf_cond_destroy(xf_cond *c)
{
	int err = 0;

	if (!c)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&c->wq));
	if (c->wq.head)
		err = EBUSY;
	xf__spin_unlock(xf__waitq_lock(&c->wq));
	return err;
}

static int wait_common(xf_cond *c, xf_mutex *m, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread();
	int state;

	if (!c || !m)
		return EINVAL;
	if (!self)
		return EPERM;
	if (m->owner != self)
		return EPERM;
	if (xf__cancel_point())
		return ECANCELED; /* the mutex still held, as after any wait */
	if (xf__preempt_disabled_beyond(0))
		return xf__misuse_preempt_disabled(timeout_ns ? "xf_cond_timedwait" : "xf_cond_wait");
	/* Queue first, then release the mutex, both under the cond's lock:
	 * a signal sent after the unlock finds us queued (no lost wake-up). */
	xf__spin_lock(xf__waitq_lock(&c->wq));
	xf_mutex_unlock(m);
	state = xf__waitq_wait(&c->wq, xf__waitq_lock(&c->wq), self, timeout_ns,
			       XF_WAIT_ON_COND, c);
	xf_mutex_lock(m); /* not cancellable: the caller gets its mutex back */
	return state == XF_WAIT_TIMEDOUT ? ETIMEDOUT : state == XF_WAIT_CANCELED ? ECANCELED : 0;
}

int xf_cond_wait(xf_cond *c, xf_mutex *m)
{
	return wait_common(c, m, 0);
}

int xf_cond_timedwait(xf_cond *c, xf_mutex *m, uint64_t timeout_ns)
{
	/* A zero timeout means "do not wait", not "wait forever". */
	return wait_common(c, m, timeout_ns ? timeout_ns : 1);
}

int xf_cond_signal(xf_cond *c)
{
	struct xf_fiber *f;

	if (!c)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&c->wq));
	f = xf__waitq_claim(&c->wq, XF_WAIT_WOKEN);
	xf__spin_unlock(xf__waitq_lock(&c->wq));
	if (f)
		xf__wake(f);
	return 0;
}

int xf_cond_broadcast(xf_cond *c)
{
	struct xf_fiber *woken;

	if (!c)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&c->wq));
	woken = xf__waitq_claim_all(&c->wq, XF_WAIT_WOKEN, NULL);
	xf__spin_unlock(xf__waitq_lock(&c->wq));
	xf__wake_list(woken);
	return 0;
}
