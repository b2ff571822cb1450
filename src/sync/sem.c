/* sem.c - xf_sem: a counting semaphore; post hands a unit straight to a waiter. */
#include <errno.h>

#include "sched/sched.h"

int xf_sem_init(xf_sem *s, uint64_t value)
{
	if (!s)
		return EINVAL;
	*s = (xf_sem)XF_SEM_INITIALIZER(value);
	return 0;
}

int xf_sem_destroy(xf_sem *s)
{
	int err = 0;

	if (!s)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&s->wq));
	if (s->wq.head)
		err = EBUSY;
	xf__spin_unlock(xf__waitq_lock(&s->wq));
	return err;
}

static int wait_common(xf_sem *s, bool try, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread();
	int state;

	if (!s)
		return EINVAL;
	if (!try && xf__cancel_point())
		return ECANCELED;
	xf__spin_lock(xf__waitq_lock(&s->wq));
	if (s->value) {
		s->value--;
		xf__spin_unlock(xf__waitq_lock(&s->wq));
		return 0;
	}
	if (try || !self) {
		xf__spin_unlock(xf__waitq_lock(&s->wq));
		return try ? EAGAIN : EPERM;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the queue's lock */
		xf__spin_unlock(xf__waitq_lock(&s->wq));
		return xf__misuse_preempt_disabled(timeout_ns ? "xf_sem_timedwait" : "xf_sem_wait");
	}
	state = xf__waitq_wait(&s->wq, xf__waitq_lock(&s->wq), self, timeout_ns,
			       XF_WAIT_ON_SEM, s);
	return state == XF_WAIT_TIMEDOUT ? ETIMEDOUT : state == XF_WAIT_CANCELED ? ECANCELED : 0;
}

int xf_sem_wait(xf_sem *s)
{
	return wait_common(s, false, 0);
}

int xf_sem_trywait(xf_sem *s)
{
	return wait_common(s, true, 0);
}

int xf_sem_timedwait(xf_sem *s, uint64_t timeout_ns)
{
	return timeout_ns		     ? wait_common(s, false, timeout_ns)
	       : xf_sem_trywait(s) == EAGAIN ? ETIMEDOUT
					     : 0;
}

int xf_sem_post(xf_sem *s)
{
	struct xf_fiber *f;
	int err = 0;

	if (!s)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&s->wq));
	f = xf__waitq_claim(&s->wq, XF_WAIT_WOKEN);
	if (!f) {
		if (s->value == UINT64_MAX)
			err = EOVERFLOW;
		else
			s->value++;
	}
	xf__spin_unlock(xf__waitq_lock(&s->wq));
	if (f)
		xf__wake(f);
	return err;
}

int xf_sem_getvalue(xf_sem *s, uint64_t *value)
{
	if (!s || !value)
		return EINVAL;
	xf__spin_lock(xf__waitq_lock(&s->wq));
	*value = s->value;
	xf__spin_unlock(xf__waitq_lock(&s->wq));
	return 0;
}
