/*
 * timer.c - per-worker timer heaps, for xf_sleep_ns() and timed waits.
 *
 * A fiber has at most one timer (it waits on one thing at a time), so the
 * timer lives in the fiber and the heap holds fiber pointers.  The heap is
 * guarded by its worker's timer_lock: the fiber arms it on the worker it
 * runs on, but may cancel it from another after a migration.  Firing and
 * cancelling both happen under that lock, except a cancel that finds the
 * timer already out of the heap: firing claims the wait before it takes
 * the timer out, so by then the claim is over, and a firing timer never
 * touches a fiber that has already returned from its wait.
 *
 * Due timers are run by their worker at scheduling points - when the ticker
 * has seen one due (XF_DUE_TIMERS; without a ticker, at every point while
 * timers wait) and at every 16th point anyway, see runq.h - and in its idle
 * loop, which also bounds its sleep by the earliest deadline.  The ticker
 * looks every half slice and sends the preemption tick that brings a
 * worker busy with one fiber to a scheduling point, so a timer fires within
 * a slice of its deadline whatever runs beside it.
 */
#include <stdlib.h>

#include "sched/sched.h"

static bool earlier(const struct xf_fiber *a, const struct xf_fiber *b)
{
	return a->timer.deadline_ns < b->timer.deadline_ns;
}

static void place(struct xf__worker *w, unsigned i, struct xf_fiber *f)
{
	w->timers[i] = f;
	f->timer.index = i;
}

static void sift_up(struct xf__worker *w, unsigned i)
{
	struct xf_fiber *f = w->timers[i];

	while (i) {
		unsigned parent = (i - 1) / 2;
		if (!earlier(f, w->timers[parent]))
			break;
		place(w, i, w->timers[parent]);
		i = parent;
	}
	place(w, i, f);
}

static void sift_down(struct xf__worker *w, unsigned i)
{
	unsigned n = atomic_load_explicit(&w->timers_nr, memory_order_relaxed);
	struct xf_fiber *f = w->timers[i];

	for (;;) {
		unsigned child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && earlier(w->timers[child + 1], w->timers[child]))
			child++;
		if (!earlier(w->timers[child], f))
			break;
		place(w, i, w->timers[child]);
		i = child;
	}
	place(w, i, f);
}

/* Takes entry i out of the heap; lock held. */
static void heap_remove(struct xf__worker *w, unsigned i)
{
	unsigned last = atomic_load_explicit(&w->timers_nr, memory_order_relaxed) - 1;
	struct xf_fiber *moved = w->timers[last];

	__atomic_store_n(&w->timers[i]->timer.heap, NULL, __ATOMIC_RELEASE); /* after any claim */
	atomic_store_explicit(&w->timers_nr, last, memory_order_relaxed);
	if (i == last)
		return;
	place(w, i, moved);
	sift_down(w, i);
	sift_up(w, moved->timer.index);
}

/* The earliest deadline, for readers that must not take the lock (the
 * ticker: it shares a CPU with workers, and a worker spinning on a lock the
 * descheduled ticker holds waits for the kernel's next turn, milliseconds).
 * After every change of the heap; lock held. */
static void publish_first(struct xf__worker *w)
{
	atomic_store_explicit(&w->timers_first_ns,
			      atomic_load_explicit(&w->timers_nr, memory_order_relaxed)
				  ? w->timers[0]->timer.deadline_ns
				  : 0,
			      memory_order_relaxed);
}

/*
 * Without a ticker (xf_config.cooperative) nothing sets XF_DUE_TIMERS, and
 * fibers that only yield to each other stay on xf_yield's assembly fast
 * path, which never looks at timers: a sleeper beside them slept forever.
 * So while timers wait there, every yield takes C's path (runq.h), which
 * runs the due ones and sets the bit again - ~40 ns a yield, only then.
 */
static void send_yields_to_timers(struct xf__worker *w)
{
	if (!xf__rt.preempt_enabled && atomic_load_explicit(&w->timers_nr, memory_order_relaxed))
		atomic_fetch_or_explicit(&w->due, XF_DUE_TIMERS, memory_order_relaxed);
}

void xf__timer_arm(struct xf__worker *w, struct xf_fiber *f, uint64_t deadline_ns)
{
	unsigned n;

	xf__spin_lock(&w->timer_lock);
	n = atomic_load_explicit(&w->timers_nr, memory_order_relaxed);
	if (n == w->timers_cap) {
		unsigned cap = w->timers_cap ? 2 * w->timers_cap : 64;
		struct xf_fiber **t = realloc(w->timers, cap * sizeof(*t));
		if (!t) {
			/* No room to remember the deadline: time out now rather
			 * than sleep forever. */
			xf__spin_unlock(&w->timer_lock);
			if (xf__wait_claim(f, XF_WAIT_TIMEDOUT))
				xf__wake(f);
			return;
		}
		w->timers = t;
		w->timers_cap = cap;
	}
	f->timer.deadline_ns = deadline_ns;
	__atomic_store_n(&f->timer.heap, w, __ATOMIC_RELEASE);
	w->timers[n] = f;
	atomic_store_explicit(&w->timers_nr, n + 1, memory_order_relaxed);
	sift_up(w, n);
	publish_first(w);
	xf__spin_unlock(&w->timer_lock);
	send_yields_to_timers(w);
}

void xf__timer_cancel(struct xf_fiber *f)
{
	struct xf__worker *w = __atomic_load_n(&f->timer.heap, __ATOMIC_ACQUIRE);

	if (!w)
		return; /* fired already */
	xf__spin_lock(&w->timer_lock);
	if (f->timer.heap == w) {
		heap_remove(w, f->timer.index);
		publish_first(w);
	}
	xf__spin_unlock(&w->timer_lock);
}

void xf__timers_run(struct xf__worker *w)
{
	uint64_t now = xf__now_ns();

	xf__spin_lock(&w->timer_lock);
	while (atomic_load_explicit(&w->timers_nr, memory_order_relaxed) &&
	       w->timers[0]->timer.deadline_ns <= now) {
		struct xf_fiber *f = w->timers[0];
		/* Claimed before the entry leaves the heap: xf__timer_cancel
		 * reads an empty heap pointer as "this timer is done with",
		 * and the fiber may then start another wait, which a claim
		 * made after that would end with a timeout it never asked for. */
		bool timed_out = xf__wait_claim(f, XF_WAIT_TIMEDOUT);

		heap_remove(w, 0);
		if (timed_out)
			xf__wake(f);
	}
	publish_first(w);
	xf__spin_unlock(&w->timer_lock);
	send_yields_to_timers(w);
}

uint64_t xf__timers_next_deadline(struct xf__worker *w)
{
	return atomic_load_explicit(&w->timers_first_ns, memory_order_relaxed);
}
