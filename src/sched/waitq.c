/*
 * waitq.c - the FIFO of fibers waiting on a sync object.
 *
 * Links live in the fiber (it waits on one thing at a time).  Every
 * operation runs under the queue's spinlock.  `wait_queue` says whether, and
 * where, a fiber is linked: a fiber whose timed wait expired finds itself
 * still linked and unlinks itself under the same lock.
 */
#include "sched/sched.h"

void xf__waitq_push(xf__waitq *q, struct xf_fiber *f)
{
	f->wait_next = NULL;
	f->wait_prev = q->tail;
	if (q->tail)
		q->tail->wait_next = f;
	else
		q->head = f;
	q->tail = f;
	f->wait_queue = q;
}

void xf__waitq_remove(xf__waitq *q, struct xf_fiber *f)
{
	if (f->wait_queue != q)
		return;
	if (f->wait_prev)
		f->wait_prev->wait_next = f->wait_next;
	else
		q->head = f->wait_next;
	if (f->wait_next)
		f->wait_next->wait_prev = f->wait_prev;
	else
		q->tail = f->wait_prev;
	f->wait_next = f->wait_prev = NULL;
	f->wait_queue = NULL;
}

/* Unlinks and returns the first waiter that can still be claimed; NULL if
 * none.  Only a timed waiter can be claimed by someone not holding the
 * queue's lock - its timer - so an untimed one is claimed with a plain
 * store: one locked instruction less on every hand-off.  A waiter whose
 * timer claimed it first stays linked: it unlinks itself, under this lock,
 * and until then the object has a waiter, so that destroying it fails
 * (EBUSY) instead of freeing what that fiber is about to lock. */
struct xf_fiber *xf__waitq_claim(xf__waitq *q, int state)
{
	for (struct xf_fiber *f = q->head, *next; f; f = next) {
		next = f->wait_next;
		if (xf__fiber_forked_away(f)) {
			xf__waitq_remove(q, f); /* gone for good */
			continue;
		}
		if (unlikely(f->flags & XF_FIBER_F_SELECT)) {
			/* One case of a select: the claim is its fiber's, which
			 * another case, a timer or a cancel may win; the fiber
			 * learns the case from wait_data, and unlinks the rest. */
			struct xf_fiber *owner = (struct xf_fiber *)f->wait_object;

			if (!xf__wait_claim(owner, state))
				continue;
			owner->wait_data = f;
			xf__waitq_remove(q, f);
			return f;
		}
		if (!f->wait_timed) {
			XF_WARN_ON(atomic_load_explicit(&f->wait_state, memory_order_relaxed) !=
				   XF_WAIT_WAITING);
			xf__waitq_remove(q, f);
			atomic_store_explicit(&f->wait_state, state, memory_order_release);
			return f;
		}
		if (xf__wait_claim(f, state)) {
			xf__waitq_remove(q, f);
			return f;
		}
	}
	return NULL;
}

/*
 * Cancellation of a queued waiter (sched/cancel.c) happens under the
 * queue's lock, as every untimed claim does: the canceller finds the lock
 * in wait_lock.  The two sides meet as an asymmetric fence: the canceller
 * sets XF_CANCELLED, runs a heavy barrier, then looks at wait_state and
 * wait_lock; the waiter publishes both, then looks at the flag - plain
 * stores and a plain load, under the lock.  Either the canceller sees the
 * waiter queued and claims it, or the waiter sees the cancel and does not
 * wait.  A canceller may still hold the lock, or be about to take it, when
 * the waiter leaves, so the waiter waits for it (xf__cancel_wait_idle)
 * before its caller may free the object the lock lives in.
 */
int xf__waitq_wait(xf__waitq *q, _Atomic uint32_t *lock, struct xf_fiber *self, uint64_t timeout_ns,
		   enum xf__wait_kind kind, const void *object)
{
	int state;

	self->wait_lock = lock;
	atomic_store_explicit(&self->wait_state, XF_WAIT_WAITING, memory_order_relaxed);
	self->wait_timed = timeout_ns != 0;
	xf__waitq_push(q, self);
	if (xf__cancel_pending(self) && xf__wait_kind_cancellable(kind)) {
		/* Cancelled before it could wait: not queued after all. */
		xf__waitq_remove(q, self);
		atomic_store_explicit(&self->wait_state, XF_WAIT_NONE, memory_order_relaxed);
		xf__spin_unlock(lock);
		state = XF_WAIT_CANCELED;
	} else {
		state = xf__wait_block(self, timeout_ns, lock, kind, object);
		if (state == XF_WAIT_TIMEDOUT) {
			xf__spin_lock(lock);
			xf__waitq_remove(q, self);
			xf__spin_unlock(lock);
		}
	}
	self->wait_lock = NULL;
	if (unlikely(atomic_load_explicit(&xf__cancellers, memory_order_relaxed)))
		xf__cancel_wait_idle();
	return state;
}

struct xf_fiber *xf__waitq_claim_all(xf__waitq *q, int state, struct xf_fiber *list)
{
	struct xf_fiber *f;

	/* Unlinked fibers' wait_next is free: it chains the list. */
	while ((f = xf__waitq_claim(q, state))) {
		f->wait_next = list;
		list = f;
	}
	return list;
}

void xf__wake_list(struct xf_fiber *list)
{
	while (list) {
		struct xf_fiber *f = list;
		list = f->wait_next;
		f->wait_next = NULL;
		xf__wake(f);
	}
}
