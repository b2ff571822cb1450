/*
 * worker.c - worker threads: the idle loop, work requesting, parking.
 *
 * An idle worker looks, in order, at its run queue, its inbox, its timers,
 * and then asks one busy worker for work by setting that worker's
 * steal_request.  The busy worker answers at its next scheduling point
 * (xf__runq_poll_slow) by moving half of its queue into the requester's
 * inbox.  The requester spins for spin_ns (default XF_SPIN_NS_DEFAULT) and
 * then parks on a futex; a kick (inbox push, new surplus work, a timer due)
 * unparks it.
 *
 * The spin budget: parking costs a futex wait plus, later, a futex wake
 * from the other CPU - ~24 us in this project's 2-vCPU VM (REFERENCE.md)
 * against ~1 us for a switch on one CPU.  Spinning for about as long as a
 * park/unpark costs bounds the waste at 2x the optimum (the classic
 * ski-rental argument), so the default is 20 us; xf_config.spin_us tunes
 * it and `bench/` measures it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "io/io.h"
#include "sched/runq.h"
#include "sched/sched.h"

#define XF_SPIN_NS_DEFAULT 20000

/* --- the runtime's start and stop lock --- */

pthread_mutex_t xf__lifecycle = PTHREAD_MUTEX_INITIALIZER;

/*
 * A fiber holds the lifecycle lock with preemption disabled, and blocks on
 * nothing meanwhile: fork()'s prepare handler takes the lock with
 * preemption disabled (runtime/fork.c), and on a thread where another
 * fiber held it switched out, it would wait for a fiber that cannot run -
 * refused as misuse, an abort (an xf_dump preempted while a fiber of its
 * worker forked did that every time).
 */
void xf__lifecycle_lock(void)
{
	if (xf__self())
		xf__preempt_disable();
	pthread_mutex_lock(&xf__lifecycle);
}

void xf__lifecycle_unlock(void)
{
	pthread_mutex_unlock(&xf__lifecycle);
	if (xf__self())
		xf__preempt_enable();
}

bool xf__runtime_hold(void)
{
	xf__lifecycle_lock();
	return atomic_load(&xf__rt.running);
}

void xf__runtime_release(void)
{
	xf__lifecycle_unlock();
}

uint64_t xf__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, timeout_ns ? &ts : NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void xf__worker_kick(struct xf__worker *w)
{
	/* Dekker with park(): we published work, then look at `parked`; it
	 * sets `parked`, then looks for work.  seq_cst on both sides means at
	 * least one of us sees the other. */
	atomic_fetch_add_explicit(&w->park_seq, 1, memory_order_seq_cst);
	switch (atomic_load_explicit(&w->parked, memory_order_seq_cst)) {
	case XF_PARKED_FUTEX: futex_wake(&w->park_seq); break;
	case XF_PARKED_POLLER: xf__poller_kick(); break;
	case XF_PARKED_RING: xf__ring_kick(w); break;
	}
}

void xf__wake_idle_worker(const struct xf__worker *w)
{
	for (unsigned i = 1; i < xf__rt.nr_workers; i++) {
		struct xf__worker *v = &xf__rt.workers[(w->id + i) % xf__rt.nr_workers];

		if (atomic_load_explicit(&v->parked, memory_order_relaxed)) {
			xf__worker_kick(v);
			return;
		}
	}
}

void xf__maybe_wake_idle(struct xf__worker *w)
{
	/* Only surplus work - more than this worker will run next - is worth a
	 * futex wake; a ping-pong hands over one fiber at a time and never
	 * pays for it.  A spinning worker will find the surplus by itself.
	 * (A fiber queued behind one that keeps its worker: the ticker.) */
	if (w->runq.len < 2 || !atomic_load_explicit(&xf__rt.nr_parked, memory_order_relaxed) ||
	    atomic_load_explicit(&xf__rt.nr_spinning, memory_order_relaxed))
		return;
	xf__wake_idle_worker(w);
}

/* Hands half of w's waiting fibers (pinned and preempted ones stay) to the
 * worker that asked: the first that may move, in order, taken out of the
 * ring where they wait.  Only as far as the last one given is walked: a
 * walk of the whole ring at every request cost two busy workers with 80,000
 * fibers queued by plain threads most of their time, 2 workers 3-25x
 * slower than 1 (a reviewer's program), and the stall report blamed the
 * application's fiber for the seconds the handler spent in it. */
static void answer_steal_request(struct xf__worker *w)
{
	unsigned req = atomic_exchange_explicit(&w->steal_request, 0, memory_order_acquire);
	struct xf__runq *q = &w->runq;
	struct xf__worker *thief;
	struct xf_fiber *f, *before;
	unsigned give_nr, movable, left;

	if (!req)
		return;
	thief = &xf__rt.workers[req - 1];
	/* Half the difference: all of an idle thief's share, and no
	 * ping-pong between two busy workers. */
	give_nr = q->len - atomic_load_explicit(&thief->nr_queued, memory_order_relaxed);
	give_nr = (int)give_nr > 0 ? (give_nr + 1) / 2 : 0;
	movable = xf__runq_movable(w);
	if (give_nr > movable)
		give_nr = movable;
	/* before->run_next is f: the running fiber precedes the head while it
	 * is linked, else the tail does. */
	before = q->running_linked ? w->current : q->tail;
	f = q->head;
	for (left = q->len; give_nr && left; left--) {
		struct xf_fiber *after = f->run_next;

		/* Preempted fibers resume on the thread they were interrupted
		 * on (see preempt/signal.c); a fiber woken before it left is
		 * still on this CPU. */
		if (f == w->current || xf__fiber_stays(f) || f->preempted) {
			before = f;
			f = after;
			continue;
		}
		before->run_next = after;
		if (--q->len == 0) {
			q->head = q->tail = NULL;
			if (q->running_linked)
				w->current->run_next = w->current;
		} else {
			if (f == q->head)
				q->head = after;
			if (f == q->tail)
				q->tail = before;
		}
		xf__runq_fixed_set(w, f, false);
		XF_PROBE3(fiber__steal, f->id, w->id, thief->id);
		/* In order: the thief's reversal of its inbox keeps it. */
		xf__inbox_push(thief, f);
		give_nr--;
		f = after;
	}
	xf__runq_publish(w);
	atomic_store_explicit(&thief->steal_pending, 0, memory_order_release);
	xf__worker_kick(thief);
}

void xf__runq_poll_slow(struct xf__worker *w)
{
	struct xf_fiber *chain = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
	struct xf_fiber *reversed = NULL;

	while (chain) {
		struct xf_fiber *next = chain->inbox_next;
		chain->inbox_next = reversed;
		reversed = chain;
		chain = next;
	}
	while (reversed) {
		struct xf_fiber *next = reversed->inbox_next;
		/* Stolen fibers now live here (pinned ones always did). */
		if (!xf__fiber_stays(reversed))
			reversed->home = (int)w->id;
		xf__runq_push(w, reversed);
		reversed = next;
	}
	if (atomic_load_explicit(&w->steal_request, memory_order_relaxed))
		answer_steal_request(w);
}

bool xf__steal_request(struct xf__worker *thief, struct xf__worker *victim)
{
	unsigned expected = 0;
	int not_pending = 0;

	/* One request per thief at a time; the victim's answer clears it. */
	if (!atomic_compare_exchange_strong(&thief->steal_pending, &not_pending, 1))
		return false;
	if (atomic_compare_exchange_strong_explicit(&victim->steal_request, &expected,
						    thief->id + 1, memory_order_release,
						    memory_order_relaxed)) {
		/* A victim that went idle since it was chosen answers from its
		 * idle loop: it must not sleep through the request, or the
		 * thief could ask nobody else. */
		xf__worker_kick(victim);
		/* One busy with a fiber answers at its next scheduling point,
		 * which may be a whole slice away: the ticker has it answer now
		 * (ticker.c). */
		if (xf__runq_movable(victim))
			xf__ticker_wake();
		return true;
	}
	atomic_store(&thief->steal_pending, 0);
	return false;
}

/* Asks the other worker with the most fibers that may move for work. */
static void request_work(struct xf__worker *w)
{
	struct xf__worker *victim = NULL;
	unsigned best = 0;

	if (atomic_load_explicit(&w->steal_pending, memory_order_acquire))
		return;
	for (unsigned i = 1; i < xf__rt.nr_workers; i++) {
		struct xf__worker *v = &xf__rt.workers[(w->id + i) % xf__rt.nr_workers];
		unsigned n = xf__runq_movable(v);

		if (n > best) {
			best = n;
			victim = v;
		}
	}
	if (victim)
		xf__steal_request(w, victim);
}

/* Everything an idle worker checks before it may sleep. */
static struct xf_fiber *find_work(struct xf__worker *w)
{
	xf__runq_poll_slow(w); /* inbox, and decline steal requests (queue is empty) */
	if (atomic_load_explicit(&w->timers_nr, memory_order_relaxed))
		xf__timers_run(w);
	/* Descriptors before anything slower: a fiber waiting on one may be
	 * ready now (and those it wakes come to this run queue). */
	if (!w->runq.head && atomic_load_explicit(&xf__io_waiters, memory_order_relaxed))
		xf__poller_try(w);
	/* Its ring's requests go in, with nothing else to run (io/ring.c). */
	if (!w->runq.head && w->ring)
		xf__ring_flush(w);
	return w->runq.head ? xf__runq_run_head(w) : NULL;
}

/* Sleeps until kicked or its earliest timer: in the poller if fibers wait
 * on descriptors and no other worker polls (io/poller.c), else on its
 * futex. */
static void park(struct xf__worker *w)
{
	uint32_t seq;
	bool poll, ring;
	int how;
	uint64_t deadline, timeout = 0;

	/* Nothing to run: a moment for the scavenger (a runtime without a
	 * ticker has no other). */
	xf__stacks_scavenge(xf__now_ns());
	seq = atomic_load_explicit(&w->park_seq, memory_order_seq_cst);
	poll = xf__poller_claim(w);
	/* Requests in flight: it sleeps in its ring, which also watches the
	 * epoll set if it holds the poller (io/ring.c). */
	ring = xf__ring_busy(w);

	how = ring ? XF_PARKED_RING : XF_PARKED_FUTEX;
	if (!ring && poll)
		how = XF_PARKED_POLLER;
	atomic_store_explicit(&w->parked, how, memory_order_seq_cst);
	atomic_fetch_add_explicit(&xf__rt.nr_parked, 1, memory_order_seq_cst);
	/* Re-check after announcing: a kick from now on changes park_seq (or
	 * writes the poller's eventfd). */
	if (atomic_load_explicit(&w->inbox, memory_order_seq_cst) ||
	    atomic_load_explicit(&w->steal_request, memory_order_seq_cst) ||
	    atomic_load_explicit(&xf__rt.stopping, memory_order_seq_cst))
		goto out;
	deadline = xf__timers_next_deadline(w);
	if (deadline) {
		uint64_t now = xf__now_ns();
		if (deadline <= now)
			goto out;
		timeout = deadline - now;
	}
	if (ring) {
		xf__ring_park(w, timeout, poll); /* lets go of the poller */
		goto done;
	}
	if (poll) {
		xf__poller_idle(w, timeout);
		goto done;
	}
	futex_wait(&w->park_seq, seq, timeout);
out:
	if (poll)
		xf__poller_release();
done:
	atomic_fetch_sub_explicit(&xf__rt.nr_parked, 1, memory_order_relaxed);
	atomic_store_explicit(&w->parked, XF_AWAKE, memory_order_relaxed);
}

/* Runs on the worker's idle context: the original thread stack for workers
 * 1..N-1 (and returns when the runtime stops), a runtime stack for worker 0
 * (and never returns; shutdown abandons it). */
static void idle_loop_run(struct xf__worker *w)
{
	for (;;) {
		struct xf_fiber *next = find_work(w);
		uint64_t spin_until;

		if (next) {
			xf__switch_from_idle(w, next);
			continue;
		}
		if (atomic_load_explicit(&xf__rt.stopping, memory_order_acquire))
			return;
		atomic_fetch_add_explicit(&xf__rt.nr_spinning, 1, memory_order_relaxed);
		spin_until = xf__now_ns() + xf__rt.spin_ns;
		do {
			request_work(w);
			for (int i = 0; i < 64; i++)
				__builtin_ia32_pause();
			if (atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
			    atomic_load_explicit(&xf__rt.stopping, memory_order_relaxed))
				break;
			if (atomic_load_explicit(&xf__io_waiters, memory_order_relaxed) &&
			    xf__poller_try(w))
				break;
			if (w->ring && xf__ring_flush(w))
				break;
		} while (xf__now_ns() < spin_until &&
			 !(atomic_load_explicit(&w->timers_nr, memory_order_relaxed) &&
			   xf__timers_next_deadline(w) <= xf__now_ns()));
		atomic_fetch_sub_explicit(&xf__rt.nr_spinning, 1, memory_order_relaxed);
		/* Not with fibers the poller just woke onto this run queue. */
		if (!atomic_load_explicit(&w->inbox, memory_order_relaxed) && !w->runq.head)
			park(w);
	}
}

_Noreturn void xf__idle_loop(struct xf__worker *w)
{
	idle_loop_run(w);
	/* Worker 0's idle context is suspended whenever the first fiber (pinned
	 * to worker 0) runs, and only that fiber sets `stopping`: this cannot
	 * be reached. */
	abort();
}

void xf__worker_run(struct xf__worker *w)
{
	idle_loop_run(w);
}

void xf__spin_ns_set(unsigned spin_us)
{
	xf__rt.spin_ns = spin_us ? (uint64_t)spin_us * 1000u : XF_SPIN_NS_DEFAULT;
}
