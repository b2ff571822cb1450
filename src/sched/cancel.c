/*
 * cancel.c - xf_cancel: ending a fiber's waits from outside.
 *
 * A cancel is a flag that never clears (XF_CANCEL_DONE in the fiber's
 * `cancel`) and, if the fiber is in a cancellable wait right now, the end
 * of that wait, as a timeout ends one: the canceller claims the wait with
 * XF_WAIT_CANCELED and wakes the fiber, which leaves its queue and returns
 * ECANCELED.  Every cancellable call (xf__wait_kind_cancellable) also looks
 * at the flag where it starts (xf__cancel_point) and again where it is
 * about to wait, so a cancel that comes while the fiber runs ends the next
 * wait before it begins.
 *
 * The two looks meet without a fence on the waiter's side, which would
 * cost every block: the canceller sets the flag, runs a heavy barrier
 * (membarrier: a full barrier on every running thread), and only then
 * looks at the fiber's wait.  Whatever the waiter stored before the
 * barrier reached it - WAITING, its kind, its queue's lock - the canceller
 * sees; whatever it loads after, sees the flag.
 *
 * How a wait is claimed depends on who else may claim it:
 *  - a queued waiter of a sync object (waitq.c): its wakers claim it under
 *    the queue's lock, an untimed one with a plain store, so the canceller
 *    takes that lock too (wait_lock), and unlinks the waiter itself;
 *  - every other wait (a sleep, a join, a descriptor, a blocking call) is
 *    claimed by compare-and-swap, and so is a cancel.
 * While it looks, the canceller counts itself in xf__cancellers, and a
 * queued waiter waits for that count to drop before it returns, since its
 * caller may then free the object whose lock a canceller holds; the count
 * is global, so that nothing of a fiber's own outlives it.
 *
 * xf_cancel_disable() (cancel_disabled) keeps the flag from ending waits
 * until the matching enable: cleanup that must wait - a destructor joining
 * the fibers it owns, xf_timer_stop waiting for a callback - still can in
 * a cancelled fiber.  The canceller leaves such a fiber's wait alone, and
 * the calls that look at the flag look at the count too
 * (xf__cancel_pending).
 *
 * The flag shares a word with the structure's generation: the cancel is a
 * compare-and-swap that holds only while the handle's generation does, so
 * it never lands on a fiber that reused the structure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "runtime/hooks.h"
#include "sched/runq.h"
#include "sched/sched.h"

_Atomic unsigned xf__cancellers;

void xf__cancel_wait_idle(void)
{
	for (unsigned i = 0; atomic_load_explicit(&xf__cancellers, memory_order_acquire); i++) {
		/* A canceller holds a spinlock for a few instructions; one that
		 * lost its CPU, or is a fiber of this worker, needs ours. */
		if (i < 64)
			__builtin_ia32_pause();
		else
			xf_yield();
	}
}

/* Ends f's wait if it is a cancellable one; after the flag and the barrier. */
static void end_wait(struct xf_fiber *f)
{
	_Atomic uint32_t *lock;
	unsigned kind;
	bool won = false;

	if (atomic_load_explicit(&f->wait_state, memory_order_acquire) != XF_WAIT_WAITING ||
	    __atomic_load_n(&f->cancel_disabled, __ATOMIC_RELAXED))
		return; /* the flag alone: its next cancellable call sees it */
	lock = __atomic_load_n(&f->wait_lock, __ATOMIC_ACQUIRE);
	if (lock) {
		xf__spin_lock(lock);
		/* Still queued under this lock, in a wait that may end so. */
		if (f->wait_lock == lock && f->wait_queue &&
		    xf__wait_kind_cancellable(__atomic_load_n(&f->wait_kind, __ATOMIC_RELAXED)) &&
		    xf__wait_claim(f, XF_WAIT_CANCELED)) {
			xf__waitq_remove(f->wait_queue, f);
			won = true;
		}
		xf__spin_unlock(lock);
	} else {
		kind = __atomic_load_n(&f->wait_kind, __ATOMIC_RELAXED);
		/* A module that queues such waits itself ends them: the
		 * blocking pool takes a job back if no helper runs it yet, and
		 * one that runs is waited for (io/blocking.c). */
		if (!xf__hooks_cancel_wait(f, kind) && xf__wait_kind_cancellable(kind))
			won = xf__wait_claim(f, XF_WAIT_CANCELED);
	}
	if (won)
		xf__wake(f);
}

/* Sets the flag of the fiber handle h names, if it still does; the fiber
 * or NULL. */
static struct xf_fiber *mark(const xf_fiber *h)
{
	struct xf_fiber *f = (struct xf_fiber *)((uintptr_t)h & XF_HANDLE_ADDR_MASK);
	uint16_t v;

	if (!f || __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != XF_FIBER_MAGIC ||
	    (f->flags & XF_FIBER_F_IDLE))
		return NULL;
	v = atomic_load_explicit(&f->gen_cancel, memory_order_relaxed);
	do {
		if ((v & XF_GEN_MASK) != xf__handle_gen(h))
			return NULL; /* freed, perhaps reused */
	} while (!atomic_compare_exchange_weak_explicit(&f->gen_cancel, &v, v | XF_CANCELLED,
							memory_order_seq_cst, memory_order_relaxed));
	return f;
}

int xf_cancel(xf_fiber *h)
{
	struct xf_fiber *f;

	if (!atomic_load_explicit(&xf__rt.running, memory_order_acquire))
		return EPERM; /* its memory is freed (check_handle, fiber.c) */
	atomic_fetch_add_explicit(&xf__cancellers, 1, memory_order_seq_cst);
	f = mark(h);
	if (f) {
		xf__heavy_barrier();
		end_wait(f);
	}
	atomic_fetch_sub_explicit(&xf__cancellers, 1, memory_order_release);
	return f ? 0 : ESRCH;
}

bool xf_cancelled(void)
{
	return xf__cancelled(xf__self());
}

int xf_cancel_disable(void)
{
	struct xf_fiber *self = xf__self_or_thread();

	if (!self)
		return EPERM;
	if (self->cancel_disabled == UINT8_MAX)
		return EOVERFLOW;
	__atomic_store_n(&self->cancel_disabled, self->cancel_disabled + 1, __ATOMIC_RELAXED);
	return 0;
}

int xf_cancel_enable(void)
{
	struct xf_fiber *self = xf__self_or_thread();

	if (!self)
		return EPERM;
	if (!self->cancel_disabled)
		return EINVAL;
	__atomic_store_n(&self->cancel_disabled, self->cancel_disabled - 1, __ATOMIC_RELAXED);
	return 0;
}

int xf_cancel_all(void)
{
	struct xf_fiber *self = xf__self(), **chunks;
	size_t nr;

	if (!xf__runtime_hold()) {
		xf__runtime_release();
		return EPERM;
	}
	chunks = xf__fiber_arena_chunks(&nr);
	xf__runtime_release();
	if (!chunks)
		return ENOMEM;
	atomic_fetch_add_explicit(&xf__cancellers, 1, memory_order_seq_cst);
	/* Every flag first, one barrier for all, then every wait. */
	for (size_t c = 0; c < nr; c++)
		for (size_t i = 0; i < XF_ARENA_CHUNK; i++)
			if (&chunks[c][i] != self)
				mark(xf__handle(&chunks[c][i]));
	xf__heavy_barrier();
	for (size_t c = 0; c < nr; c++)
		for (size_t i = 0; i < XF_ARENA_CHUNK; i++) {
			struct xf_fiber *f = &chunks[c][i];

			if (f != self && xf__cancelled(f) &&
			    __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) == XF_FIBER_MAGIC)
				end_wait(f);
		}
	atomic_fetch_sub_explicit(&xf__cancellers, 1, memory_order_release);
	free(chunks);
	return 0;
}
