/*
 * runq.h - a worker's run queue (owner-only) and inbox (multi-producer).
 *
 * The run queue is a ring of fibers linked through run_next.  head and tail
 * delimit the fibers that wait, in the order they will run; the running
 * fiber, while it is runnable, stays linked between tail and head, so that
 * a yield moves two pointers and relinks nothing:
 *
 *   running in the ring (F = w->current):   ... -> tail -> F -> head -> ...
 *   not (the idle context, or F leaving):   ... -> tail -> head -> ...
 *   len counts the waiting fibers, head to tail; none: head = tail = NULL.
 *
 *   F yields:            head = head->run_next, tail = F: the old head runs,
 *                        F waits last (xf__runq_rotate; xf_yield's assembly
 *                        the same two stores)
 *   F blocks or exits:   F leaves the ring (xf__runq_remove_running) before
 *                        the inbox is polled, which may bring it back
 *   C runs the head:     it stops waiting but stays linked where it is
 *                        (xf__runq_run_head)
 *   a fiber is woken:    it waits last, behind tail (xf__runq_push)
 *
 * A fiber in some worker's ring as its running fiber is never pushed: it
 * can be woken only in its blocking window, and xf__wake waits briefly for
 * such a fiber to get off its CPU, or else sends it through its home's
 * inbox, which that worker polls only after the fiber has left its ring.
 * The inbox has its own link (inbox_next) for the same reason.
 *
 * The ring needs no atomics because only its worker touches it; the length
 * is published (relaxed) for thieves deciding whom to ask.  Other threads
 * push into the inbox, a Treiber stack: one CAS per push, one exchange for
 * the owner to take everything, then a reversal to keep FIFO order.
 * xf__runq_poll() is the owner's cheap check for both the inbox and pending
 * steal requests, done at every scheduling point.
 */
#ifndef XF_SCHED_RUNQ_H
#define XF_SCHED_RUNQ_H

#include "io/io.h" /* the poller, which the core calls: xf__poller_try */
#include "sched/sched.h"

static inline void xf__runq_publish(struct xf__worker *w)
{
	atomic_store_explicit(&w->nr_queued, w->runq.len, memory_order_relaxed);
}

/*
 * Which fibers may move.  A thief wants to know how many of a worker's
 * waiting fibers it could be given: not the pinned ones, not those that
 * hold a lock of the worker's thread (XF_FIBER_F_STAY), not the preempted
 * ones (their state is in a signal frame on this thread).  The owner keeps
 * nr_fixed, the ring's members that may not move, the running one
 * included, and each fiber remembers whether it is counted: entering the
 * ring counts it, leaving uncounts it, and where a member's fixedness
 * changes - it is preempted, resumes from a preemption, takes or lets go
 * of a thread's lock - it is counted again.  A yield changes nothing: it
 * only swaps which member runs.  xf__runq_movable() subtracts the running
 * fiber's share, read racily: a hint, as nr_queued is.
 */
static inline bool xf__fiber_fixed(const struct xf_fiber *f)
{
	return xf__fiber_stays(f) || f->preempted;
}

static inline void xf__runq_fixed_set(struct xf__worker *w, struct xf_fiber *f, bool fixed)
{
	if (fixed == f->counted_fixed)
		return;
	f->counted_fixed = fixed;
	atomic_store_explicit(&w->nr_fixed,
			      atomic_load_explicit(&w->nr_fixed, memory_order_relaxed) +
				  (fixed ? 1u : -1u),
			      memory_order_relaxed);
}

/* A member of w's ring whose fixedness may have changed. */
static inline void xf__runq_fixed_update(struct xf__worker *w, struct xf_fiber *f)
{
	xf__runq_fixed_set(w, f, xf__fiber_fixed(f));
}

/* How many of v's waiting fibers could move to another worker. */
static inline unsigned xf__runq_movable(struct xf__worker *v)
{
	unsigned queued = atomic_load_explicit(&v->nr_queued, memory_order_relaxed);
	unsigned fixed = atomic_load_explicit(&v->nr_fixed, memory_order_relaxed);
	struct xf_fiber *cur = __atomic_load_n(&v->current, __ATOMIC_RELAXED);

	if (fixed && cur && __atomic_load_n(&cur->counted_fixed, __ATOMIC_RELAXED))
		fixed--; /* the running one: not waiting */
	return queued > fixed ? queued - fixed : 0;
}

/*
 * The fibers on v: those queued, and the one it runs (none while idle).
 * The balancer and a plain thread's spawn compare this, not the queue
 * alone: a busy worker with an empty queue is not as free as an idle one,
 * and a fiber given to it waits for its running fiber's slice - 2.5 s in
 * sched.steal.behind, at 10 s slices, where an idle worker stood by.
 */
static inline unsigned xf__worker_load(struct xf__worker *v)
{
	struct xf_fiber *cur = __atomic_load_n(&v->current, __ATOMIC_RELAXED);

	return atomic_load_explicit(&v->nr_queued, memory_order_relaxed) + (cur && cur != v->idle);
}

/* Whether v runs a fiber now (not its idle loop), read racily: a hint. */
static inline bool xf__worker_busy(struct xf__worker *v)
{
	struct xf_fiber *cur = __atomic_load_n(&v->current, __ATOMIC_RELAXED);

	return cur && cur != v->idle;
}

/* Queues f, woken or new, behind everything that waits. */
static inline void xf__runq_push(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf__runq *q = &w->runq;

	if (q->tail) {
		f->run_next = q->tail->run_next; /* the running fiber, or head */
		q->tail->run_next = f;
	} else if (q->running_linked) {
		f->run_next = w->current;
		w->current->run_next = f;
		q->head = f;
	} else {
		f->run_next = f;
		q->head = f;
	}
	q->tail = f;
	q->len++;
	f->counted_fixed = false; /* whatever another worker counted */
	xf__runq_fixed_update(w, f);
	xf__runq_publish(w);
}

/* C picked the head to run next (the caller switches to it): it stops
 * waiting, and is linked where the running fiber belongs already. */
static inline struct xf_fiber *xf__runq_run_head(struct xf__worker *w)
{
	struct xf__runq *q = &w->runq;
	struct xf_fiber *f = q->head;

	XF_WARN_ON(q->running_linked || !f);
	if (f == q->tail)
		q->head = q->tail = NULL; /* it is linked to itself */
	else
		q->head = f->run_next;
	q->len--;
	q->running_linked = true;
	xf__runq_publish(w);
	return f;
}

/* The running fiber f blocks or exits: it leaves the ring. */
static inline void xf__runq_remove_running(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf__runq *q = &w->runq;

	XF_WARN_ON(!q->running_linked || w->current != f);
	if (q->tail)
		q->tail->run_next = q->head;
	q->running_linked = false;
	xf__runq_fixed_set(w, f, false);
}

/* The running fiber f yields: the head runs, and f waits last.  Returns
 * the head, or f itself when nothing waits.  The length does not change:
 * one waits, one runs.  What xf_yield's assembly does, step for step. */
static inline struct xf_fiber *xf__runq_rotate(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf__runq *q = &w->runq;
	struct xf_fiber *next = q->head;

	XF_WARN_ON(!q->running_linked || w->current != f);
	if (!next)
		return f;
	q->head = next->run_next; /* f, when next waited alone */
	q->tail = f;
	return next;
}

static inline void xf__inbox_push(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf_fiber *old = atomic_load_explicit(&w->inbox, memory_order_relaxed);

	do
		f->inbox_next = old;
	while (!atomic_compare_exchange_weak_explicit(&w->inbox, &old, f, memory_order_release,
						      memory_order_relaxed));
}

/* Moves the inbox into the run queue, oldest first; answers steal requests.
 * Out of line when needed. */
void xf__runq_poll_slow(struct xf__worker *w);

/* At every scheduling point: what the ticker said is due - descriptors the
 * poller has events for (taken here, so that the ticker never takes a
 * descriptor's lock), timers - the inbox, steal requests, and timers at
 * every 16th point anyway, which reads the clock (timer.c). */
static inline void xf__runq_poll(struct xf__worker *w)
{
	unsigned due = 0;

	if (unlikely(atomic_load_explicit(&w->due, memory_order_relaxed)))
		due = atomic_exchange_explicit(&w->due, 0, memory_order_relaxed);
	if (unlikely(due & XF_DUE_IO))
		xf__poller_due(w);
	if (unlikely(due & XF_DUE_RING))
		xf__ring_poll(w);
	if (unlikely(atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
		     atomic_load_explicit(&w->steal_request, memory_order_relaxed)))
		xf__runq_poll_slow(w);
	if (unlikely(due & XF_DUE_TIMERS) ||
	    (unlikely(atomic_load_explicit(&w->timers_nr, memory_order_relaxed)) &&
	     (++w->sched_ticks & 15) == 0))
		xf__timers_run(w);
}

#endif
