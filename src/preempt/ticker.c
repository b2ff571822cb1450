/*
 * ticker.c - the thread that decides when a fiber has run too long.
 *
 * It looks at each worker when the earliest slice of a running fiber may
 * end (half a slice on while one is over its slice, and at least every
 * XF_TICK_MAX_NS): a worker whose switch count has not moved for a whole
 * slice, that runs a fiber (not its idle loop), and
 * that has something else to run - a queued fiber, an inbox, a steal
 * request, a due timer - gets one preemption signal, aimed: it carries the
 * switch count the ticker saw, and the handler drops it if the worker has
 * switched since (preempt/signal.c), for it would land on a fiber whose
 * slice has just begun.  So:
 *  - a parked or idle worker never receives a signal;
 *  - a CPU-bound fiber alone on its worker is never interrupted: a tick
 *    that would find nothing else to run is not even sent;
 *  - the signal comes from another thread, which costs the target far less
 *    than a timer interrupt of its own in a VM (8.4 us against 23 us here,
 *    REFERENCE.md).
 * While no worker has anything waiting - every worker idle, or each busy
 * with one fiber and nothing queued - no preemption can be needed, and the
 * ticker sleeps XF_TICKER_LONG_SLICES slices instead of half of one: it
 * would otherwise cost a CPU-bound workload measurably (~5% here, from
 * 2,000 wake-ups a second on busy vCPUs).  The first fiber queued anywhere
 * wakes it (xf__ticker_poke, one relaxed load on the wake path).  It goes
 * back to the long sleep only after XF_TICKER_QUIET_TICKS ticks in a row
 * found nothing waiting, and a poke restarts the count: fibers that hand
 * the CPU to each other (a channel ping-pong) leave nothing queued at most
 * ticks, and a ticker that slept long after each of them was poked awake -
 * a futex wake-up and a kernel switch - at every other hand-off (measured:
 * 253 ns per round trip against 105 ns).
 *
 * It also balances busy workers, as the kernel's periodic load balancer
 * does: when one worker's queue is longer than another's by two or more,
 * and holds fibers that may move (runq.h), it files a steal request for the
 * shorter one.
 * A worker asked for work while its fiber's slice goes on gets a tick that
 * only has it answer (XF_TICK_ANSWER), at once: the thief wakes the ticker
 * (xf__ticker_wake), so an idle worker is not kept waiting for the slice's
 * end.  The longer one answers at its
 * next scheduling point - the preemption this tick may send - with half the
 * difference, preempted fibers (frames and all) included.
 *
 * Between one slice and two pass before a fiber is preempted: its slice
 * counts from the first look that saw it run.  A preemption deferred at a
 * safe point is re-sent every half slice until the fiber switches.
 *
 * Each look costs the CPU it shares with a worker: in the KVM guest of
 * docs/benchmarks.md a thread that wakes every 100 us takes 11% from a
 * CPU-bound thread beside it, ~18 us a wake-up.  So the ticker looks only
 * when a slice may have ended, not every half slice (a worker that
 * switches all the time needs no look before a slice has passed), and
 * polls descriptors only for a worker that has kept one fiber a whole
 * slice - before it decides, so that the fibers those descriptors wake
 * preempt it at once.  It asks Linux for a short slice of its own, so that
 * its wake-up preempts the busy worker instead of waiting for the worker's
 * kernel slice to end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "io/io.h"
#include "preempt/preempt.h"
#include "sched/runq.h"
#include "sched/sched.h"

#define XF_TICKER_LONG_SLICES 20
#define XF_TICKER_QUIET_TICKS 4
#define XF_TICK_MAX_NS	      500000

static struct {
	pthread_t thread;
	bool started;
	_Atomic uint32_t wake; /* futex: bumped to stop or wake the ticker */
} ticker;

_Atomic int xf__ticker_sleeping_long;

/* rt_tgsigqueueinfo rather than tgkill: SI_QUEUE carries a value, the tag
 * that tells a tick from the application's SIGURG and the switch count seen
 * (xf__tick_aimed). */
int xf__tick_send(pid_t tid, uint64_t value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = XF_PREEMPT_SIGNAL;
	si.si_code = SI_QUEUE;
	si.si_pid = xf__rt.pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)value;
	return syscall(SYS_rt_tgsigqueueinfo, xf__rt.pid, tid, XF_PREEMPT_SIGNAL, &si) ? errno : 0;
}

static bool wants_cpu(struct xf__worker *w, uint64_t now)
{
	if (atomic_load_explicit(&w->nr_queued, memory_order_relaxed) ||
	    atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
	    atomic_load_explicit(&w->steal_request, memory_order_relaxed))
		return true;
	if (!atomic_load_explicit(&w->timers_nr, memory_order_relaxed))
		return false;
	uint64_t deadline = xf__timers_next_deadline(w);
	if (!deadline || deadline > now)
		return false;
	/* Due: the worker's next scheduling point runs it (runq.h). */
	atomic_store_explicit(&w->timers_due, 1, memory_order_relaxed);
	return true;
}

/* Whether any worker polled the descriptors since the last call. */
static bool workers_polled(void)
{
	static uint64_t seen;
	uint64_t polls = 0;
	bool polled;

	for (unsigned i = 0; i < xf__rt.nr_workers; i++)
		polls += __atomic_load_n(&xf__rt.workers[i].stats.poller_calls, __ATOMIC_RELAXED);
	polled = polls != seen;
	seen = polls;
	return polled;
}

/* Whether w's current fiber has kept it since the last look, and since
 * when (the first look that saw its switch count).  Updates the view. */
static bool same_fiber(struct xf__worker *w, uint64_t now)
{
	struct xf_fiber *cur = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
	uint64_t switches = __atomic_load_n(&w->stats.switches, __ATOMIC_RELAXED);

	/* cur may be finishing on its worker right now: compared only. */
	if (switches != w->tick_switches || !cur || cur == w->idle) {
		w->tick_switches = switches;
		w->tick_since_ns = now;
		return false;
	}
	return true;
}

/* Looks at every worker once; returns whether any has something waiting
 * to run (so that preemption may become necessary), and in *next when to
 * look again: when the earliest slice of a running fiber ends, or half a
 * slice on while one is over its slice (a deferred preemption is sent
 * again), but at least every tick_ns. */
static bool tick(uint64_t now, uint64_t slice_ns, uint64_t tick_ns, uint64_t *next)
{
	bool waiting = false, stuck = false;

	*next = now + tick_ns;
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		uint64_t end;

		if (!same_fiber(w, now)) {
			struct xf_fiber *cur = __atomic_load_n(&w->current, __ATOMIC_RELAXED);

			/* A fiber that began since: its slice ends a slice on
			 * at the earliest. */
			if (cur && cur != w->idle && now + slice_ns < *next)
				*next = now + slice_ns;
			continue;
		}
		end = w->tick_since_ns + slice_ns;
		stuck |= end <= now;
		end = end > now ? end : now + slice_ns / 2;
		if (end < *next)
			*next = end;
	}
	/* Fibers wait on descriptors and no worker sits in the poller: the
	 * ticker polls for them when some worker has kept one fiber for a
	 * slice, before it decides, so that what they wait for preempts that
	 * fiber now; and when no worker has polled since the last look (their
	 * queues never ran dry: a fiber that yields in a loop keeps one
	 * busy).  Otherwise workers poll on their own, and a poll here would
	 * only take their events and cost their CPU (the ticker may share it)
	 * a switch to this thread and back at every tick. */
	if (atomic_load_explicit(&xf__io_waiters, memory_order_relaxed)) {
		if ((stuck || !workers_polled()) && !xf__poller_busy())
			xf__poller_tick();
		waiting = true;
	}
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		struct xf_fiber *cur = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
		uint64_t switches = w->tick_switches;
		bool wants =
		    wants_cpu(w, now) || atomic_load_explicit(&w->timers_nr, memory_order_relaxed);

		waiting |= wants;
		if (w->tick_since_ns == now || !cur || cur == w->idle)
			continue; /* switched since the last look */
		pid_t tid = __atomic_load_n(&w->tid, __ATOMIC_RELAXED);

		/* A fiber waiting in the kernel inside a blocking C library
		 * call keeps the worker from its other fibers without using it:
		 * no need to wait for its slice to end (sync/pthread.c).  cur
		 * is never freed while the runtime runs; a stale read only
		 * sends one signal early or late. */
		bool blocked = __atomic_load_n(&cur->blocking, __ATOMIC_RELAXED) ==
			       XF_BLOCKING_AT_WAIT;

		if (!tid)
			continue;
		if (!blocked && now - w->tick_since_ns < slice_ns) {
			/* Its slice goes on, with fibers that could run elsewhere
			 * queued behind it: a parked worker is woken to ask for
			 * them, and a request is answered now, not at the
			 * slice's end (signal.c: no switch). */
			if (!xf__runq_movable(w))
				continue;
			if (atomic_load_explicit(&w->steal_request, memory_order_relaxed))
				xf__tick_send(tid, xf__tick_aimed(switches) | XF_TICK_ANSWER);
			else if (atomic_load_explicit(&xf__rt.nr_parked, memory_order_relaxed))
				xf__wake_idle_worker(w);
			continue;
		}
		if (!wants_cpu(w, now))
			continue;
		XF_PROBE2(preempt__tick, w->id, switches);
		xf__tick_send(tid, xf__tick_aimed(switches));
	}
	return waiting;
}

static void balance(void)
{
	struct xf__worker *longest = NULL, *shortest = NULL;
	unsigned most = 0, least = ~0u;

	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		unsigned n = atomic_load_explicit(&w->nr_queued, memory_order_relaxed);

		/* The longest queue that has something to give. */
		if ((n > most || !longest) && xf__runq_movable(w)) {
			most = n;
			longest = w;
		}
		if (n < least || !shortest) {
			least = n;
			shortest = w;
		}
	}
	if (longest != shortest && most >= least + 2)
		xf__steal_request(shortest, longest);
}

/* struct sched_attr of sched_setattr(2), which glibc does not wrap. */
struct kernel_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

/* The ticker shares its CPUs with the workers it watches, and a worker runs
 * a fiber that never sleeps: when the ticker wakes, Linux's fair scheduler
 * lets the worker run on until its own slice ends (EEVDF's RUN_TO_PARITY,
 * ~1-3 ms), and every tick comes that late.  Since Linux 6.12 a thread may
 * ask, unprivileged, for a shorter slice (sched_runtime, at least 100 us),
 * and a waking thread with a shorter slice preempts the running one
 * (PREEMPT_SHORT).  Older kernels refuse it with EINVAL: ticks come late
 * there while a worker's CPU is busy (docs/preemption.md). */
static void ask_short_kernel_slice(void)
{
	struct kernel_sched_attr attr = {
	    .size = sizeof(attr),
	    .sched_policy = SCHED_OTHER,
	    .sched_runtime = 100 * 1000,
	};

	if (syscall(SYS_sched_setattr, 0, &attr, 0)) {
		/* an older kernel: nothing to do about it here */
	}
}

static void *ticker_main(void *arg)
{
	const uint64_t slice_ns = (uint64_t)xf__rt.slice_us * 1000u;
	/* Every half slice, and at least every XF_TICK_MAX_NS with longer
	 * slices: readiness, due timers and fibers queued behind a long slice
	 * are noticed that soon (the default slice ticks that often anyway). */
	const uint64_t tick_ns = slice_ns / 2 < XF_TICK_MAX_NS ? slice_ns / 2 : XF_TICK_MAX_NS;
	sigset_t all;
	unsigned quiet_ticks = 0; /* ticks in a row that found nothing waiting */
	uint64_t next = xf__now_ns() + tick_ns, now;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* never run a handler here */
	/* The kernel may let a sleep run 50 us past its end (timer slack), as
	 * long as a whole 50 us slice: ticks keep to the slice instead. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	ask_short_kernel_slice();
	while (!atomic_load_explicit(&xf__rt.stopping, memory_order_acquire)) {
		bool sleep_long = quiet_ticks >= XF_TICKER_QUIET_TICKS;
		uint64_t sleep_ns = XF_TICKER_LONG_SLICES * slice_ns;
		struct timespec ts;
		uint32_t seen = atomic_load(&ticker.wake);

		now = xf__now_ns();
		if (!sleep_long)
			sleep_ns = next > now ? next - now : 0;
		/* Announce the long sleep before the last look, so that a fiber
		 * queued from now on pokes us (xf__ticker_poke). */
		atomic_store(&xf__ticker_sleeping_long, sleep_long);
		if (sleep_long && tick(now, slice_ns, tick_ns, &next))
			sleep_ns = tick_ns;
		ts = (struct timespec){(time_t)(sleep_ns / 1000000000u), (long)(sleep_ns % 1000000000u)};
		syscall(SYS_futex, &ticker.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
		atomic_store(&xf__ticker_sleeping_long, 0);
		balance();
		if (atomic_load(&ticker.wake) != seen)
			quiet_ticks = 0; /* poked: something was queued */
		quiet_ticks = tick(xf__now_ns(), slice_ns, tick_ns, &next) ? 0 : quiet_ticks + 1;
		/* Objects loaded since the last look get their verdicts. */
		xf__safepoints_refresh(xf__now_ns());
		/* Pooled stacks nobody reused give their pages back. */
		xf__stacks_scavenge(xf__now_ns());
	}
	return NULL;
}

int xf__ticker_start(void)
{
	int err = pthread_create(&ticker.thread, NULL, ticker_main, NULL);

	ticker.started = !err;
	return err;
}

void xf__ticker_poke_slow(void)
{
	if (!atomic_exchange(&xf__ticker_sleeping_long, 0))
		return;
	atomic_fetch_add(&ticker.wake, 1);
	syscall(SYS_futex, &ticker.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void xf__ticker_wake(void)
{
	if (!ticker.started)
		return;
	atomic_store(&xf__ticker_sleeping_long, 0);
	atomic_fetch_add(&ticker.wake, 1);
	syscall(SYS_futex, &ticker.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void xf__ticker_forget(void)
{
	ticker.started = false;
	atomic_store(&ticker.wake, 0);
	atomic_store(&xf__ticker_sleeping_long, 0);
}

void xf__ticker_stop(void)
{
	if (!ticker.started)
		return;
	atomic_fetch_add(&ticker.wake, 1);
	syscall(SYS_futex, &ticker.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(ticker.thread, NULL);
	ticker.started = false;
}
