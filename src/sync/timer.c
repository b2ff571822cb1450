/*
 * timer.c - xf_timer: a callback after a delay, once or periodically, run
 * in a fiber of its own.
 *
 * Each timer is a fiber that waits on its stop semaphore until the next
 * deadline: a timeout is a tick, a post is the stop.  So the callback runs
 * in a fiber (it may block, be preempted, use any fiber call), never twice
 * at once for one timer, and a stop that comes while it runs waits for it
 * - the join of the timer's fiber.  A periodic timer that falls behind (a
 * callback longer than the period, a worker busy elsewhere) skips the
 * ticks it missed and keeps to its grid of start + k * period, as Go's
 * Ticker drops ticks rather than firing them in a burst.
 *
 * (The runtime's own per-worker timer heaps, sched/timer.c, wake fibers
 * from timed waits; this is the API's timer, built on them.)
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/sched.h"

struct xf_timer {
	xf_fiber *fiber;
	xf_sem stop;
	uint64_t first_ns, period_ns; /* CLOCK_MONOTONIC (xf__now_ns) */
	void (*fn)(void *);
	void *arg;
	_Atomic bool stopped;	 /* xf_timer_stop was called */
	_Atomic bool self_stop; /* ... from the callback: the fiber frees it */
};

static void *timer_main(void *arg)
{
	xf_timer *t = arg;
	uint64_t next = t->first_ns;

	for (;;) {
		uint64_t now = xf__now_ns();
		int err = next > now ? xf_sem_timedwait(&t->stop, next - now) : ETIMEDOUT;

		if (err != ETIMEDOUT || atomic_load(&t->stopped))
			break; /* stopped (a post, or a cancel of this fiber) */
		t->fn(t->arg);
		if (!t->period_ns || atomic_load(&t->stopped))
			break;
		now = xf__now_ns();
		next += t->period_ns;
		if (next <= now) /* behind: the next tick of the grid still ahead */
			next += ((now - next) / t->period_ns + 1) * t->period_ns;
	}
	if (atomic_load(&t->self_stop))
		free(t); /* stopped from its own callback: nobody joins */
	return NULL;
}

int xf_timer_start(xf_timer **out, uint64_t after_ns, uint64_t period_ns, void (*fn)(void *),
		   void *arg)
{
	static const xf_attr attr = {.name = "xf_timer", .worker = -1};
	xf_timer *t;
	uint64_t now = xf__now_ns();
	int err;

	if (!out || !fn)
		return EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ENOMEM;
	xf_sem_init(&t->stop, 0);
	t->first_ns = after_ns > UINT64_MAX - now ? UINT64_MAX : now + after_ns;
	t->period_ns = period_ns;
	t->fn = fn;
	t->arg = arg;
	err = xf_spawn(&t->fiber, timer_main, t, &attr);
	if (err) {
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

int xf_timer_stop(xf_timer *t)
{
	int err;

	if (!t)
		return EINVAL;
	atomic_store(&t->stopped, true);
	if (xf_self() == t->fiber) {
		/* From its own callback: the fiber ends after it, and frees. */
		atomic_store(&t->self_stop, true);
		return xf_detach(t->fiber);
	}
	xf_sem_post(&t->stop);
	/* Waits for a callback that runs, even in a cancelled caller: the
	 * caller frees what the callback uses once this returns. */
	xf_cancel_disable();
	err = xf_join(t->fiber, NULL);
	xf_cancel_enable();
	if (!err)
		free(t);
	return err;
}
