/*
 * runq.h - a worker's run queue (owner-only FIFO) and inbox (multi-producer).
 *
 * The local queue needs no atomics because only its worker touches it; the
 * length is published (relaxed) for thieves deciding whom to ask.  Other
 * threads push into the inbox, a Treiber stack: one CAS per push, one
 * exchange for the owner to take everything, then a reversal to keep FIFO
 * order.  xf__runq_poll() is the owner's cheap check for both the inbox and
 * pending steal requests, done at every scheduling point.
 */
#ifndef XF_SCHED_RUNQ_H
#define XF_SCHED_RUNQ_H

#include "sched/sched.h"

static inline void xf__fifo_push(struct xf__fifo *q, struct xf_fiber *f)
{
	f->run_next = NULL;
	if (q->tail)
		q->tail->run_next = f;
	else
		q->head = f;
	q->tail = f;
	q->len++;
}

static inline struct xf_fiber *xf__fifo_pop(struct xf__fifo *q)
{
	struct xf_fiber *f = q->head;

	if (!f)
		return NULL;
	q->head = f->run_next;
	if (!q->head)
		q->tail = NULL;
	q->len--;
	return f;
}

static inline void xf__runq_publish(struct xf__worker *w)
{
	atomic_store_explicit(&w->nr_queued, w->runq.len, memory_order_relaxed);
}

static inline void xf__runq_push(struct xf__worker *w, struct xf_fiber *f)
{
	xf__fifo_push(&w->runq, f);
	xf__runq_publish(w);
}

static inline struct xf_fiber *xf__runq_pop(struct xf__worker *w)
{
	struct xf_fiber *f = xf__fifo_pop(&w->runq);

	if (f)
		xf__runq_publish(w);
	return f;
}

/* Pops the head (the caller has seen it is there) and queues f at the tail
 * in one go: what a yield does, here and in xf_yield's assembly, step for
 * step.  When the head was alone it is also the tail, and leaves with a
 * stale link to f; a fiber's link means nothing until it is queued again.
 * The length does not change, so nothing is published to thieves. */
static inline void xf__runq_rotate(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf__fifo *q = &w->runq;
	struct xf_fiber *second = q->head->run_next;

	q->head = second ? second : f;
	q->tail->run_next = f;
	q->tail = f;
	f->run_next = NULL;
}

static inline void xf__inbox_push(struct xf__worker *w, struct xf_fiber *f)
{
	struct xf_fiber *old = atomic_load_explicit(&w->inbox, memory_order_relaxed);

	do
		f->run_next = old;
	while (!atomic_compare_exchange_weak_explicit(&w->inbox, &old, f, memory_order_release,
						      memory_order_relaxed));
}

/* Moves the inbox into the run queue, oldest first; answers steal requests;
 * runs due timers every 16th scheduling point.  Out of line when needed. */
void xf__runq_poll_slow(struct xf__worker *w);

static inline void xf__runq_poll(struct xf__worker *w)
{
	if (unlikely(atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
		     atomic_load_explicit(&w->steal_request, memory_order_relaxed)))
		xf__runq_poll_slow(w);
	if (unlikely(atomic_load_explicit(&w->timers_nr, memory_order_relaxed)) &&
	    (++w->sched_ticks & 15) == 0)
		xf__timers_run(w);
}

#endif
