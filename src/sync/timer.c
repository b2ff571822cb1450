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
#include <pthread.h>
#include <stdlib.h>

#include "runtime/hooks.h"
#include "sched/sched.h"

#define XF_TIMER_MAGIC 0x78746d72u /* "xtmr": started, not yet stopped */
#define XF_TIMER_DEAD  0xdead71u   /* stopped: on the free list, or about to be */

struct xf_timer {
	xf_fiber *fiber;
	xf_sem stop;
	uint64_t first_ns, period_ns; /* CLOCK_MONOTONIC (xf__now_ns) */
	void (*fn)(void *);
	void *arg;
	_Atomic bool stopped;	 /* xf_timer_stop was called */
	_Atomic bool self_stop; /* ... from the callback: the fiber frees it */
	_Atomic uint32_t magic; /* XF_TIMER_MAGIC, XF_TIMER_DEAD */
	xf_timer *free_next;
};

/*
 * Stopped timers are kept for the next start, never given back to malloc:
 * a second stop of the same handle then reads a timer, whose magic says it
 * is stopped - EINVAL - rather than freed memory, where its semaphore's
 * spinlock spun for good (a reviewer's program).  A handle whose timer was
 * started again since names the new one, as a closed descriptor's number
 * does.  A lock: starts and stops are no hot path.
 */
static struct {
	pthread_mutex_t lock;
	xf_timer *head;
} timers_free = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void timers_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&timers_free.lock, phase);
}

XF_HOOK(timers_hook) = {
    .module = "sync/timer", .fork_order = XF_FORK_ORDER_TIMERS, .fork = timers_fork};

static xf_timer *timer_alloc(void)
{
	xf_timer *t;

	pthread_mutex_lock(&timers_free.lock);
	t = timers_free.head;
	if (t)
		timers_free.head = t->free_next;
	pthread_mutex_unlock(&timers_free.lock);
	if (!t)
		return calloc(1, sizeof(*t));
	*t = (xf_timer){0};
	return t;
}

static void timer_free(xf_timer *t)
{
	atomic_store(&t->magic, XF_TIMER_DEAD);
	pthread_mutex_lock(&timers_free.lock);
	t->free_next = timers_free.head;
	timers_free.head = t;
	pthread_mutex_unlock(&timers_free.lock);
}

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
		timer_free(t); /* stopped from its own callback: nobody joins */
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
	t = timer_alloc();
	if (!t)
		return ENOMEM;
	xf_sem_init(&t->stop, 0);
	atomic_store(&t->magic, XF_TIMER_MAGIC);
	t->first_ns = after_ns > UINT64_MAX - now ? UINT64_MAX : now + after_ns;
	t->period_ns = period_ns;
	t->fn = fn;
	t->arg = arg;
	err = xf_spawn(&t->fiber, timer_main, t, &attr);
	if (err) {
		timer_free(t);
		return err;
	}
	*out = t;
	return 0;
}

int xf_timer_stop(xf_timer *t)
{
	int err;

	/* One stop per start: a second, or a concurrent one, is refused. */
	if (!t || atomic_exchange(&t->magic, XF_TIMER_DEAD) != XF_TIMER_MAGIC)
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
		timer_free(t);
	return err;
}
