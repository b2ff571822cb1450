/*
 * ticker.c - the thread that decides when a fiber has run too long.
 *
 * When a look may matter - a running slice can end, a deferred preemption
 * is due again, a busy worker's timer falls due - and at least once a
 * slice (at most XF_TICK_MAX_NS apart), it looks at each worker: a worker
 * whose switch count has
 * not moved for a whole slice, that runs a fiber (not its idle loop), and
 * that has something else to run - a queued fiber, an inbox, a steal
 * request, a due timer - gets one preemption signal, aimed: it carries the
 * switch count the ticker saw, and the handler drops it if the worker has
 * switched since (preempt/signal.c), for it would land on a fiber whose
 * slice has just begun.  So:
 *  - a parked or idle worker never receives a signal;
 *  - a CPU-bound fiber alone on its worker is never interrupted: a tick
 *    that would find nothing else to run is not even sent;
 *  - a fiber preempted since its last wake-up loses the rest of its slice
 *    as soon as a look finds events in the poller (io_wakes);
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
 * does: when one worker has two or more fibers more than another, queued
 * and running counted (xf__worker_load), and some of its queued ones may
 * move (runq.h), it files a steal request for the less loaded one - an idle
 * worker before a busy one whose queue is as empty; between busy workers,
 * once the imbalance has lasted XF_BALANCE_BUSY_NS.
 * A worker asked for work while its fiber's slice goes on gets a tick that
 * only has it answer (XF_TICK_ANSWER), at once: the thief wakes the ticker
 * (xf__ticker_wake), so an idle worker is not kept waiting for the slice's
 * end.  The more loaded one answers at its next scheduling point - the
 * preemption this tick may send - with half the difference; preempted
 * fibers stay, to resume on the thread they were interrupted on
 * (preempt/signal.c).
 *
 * The slice of a fiber that ends its worker's idling counts from that
 * switch's stamp (fiber_start_ns), and the next look comes at its end: one
 * slice passes before such a fiber - a request's, perhaps a long one - is
 * preempted.  Any other fiber's slice counts from the look that first saw
 * it run, and the next look comes a slice after that one (at most
 * XF_TICK_MAX_NS): one to two slices pass (one and XF_TICK_MAX_NS for
 * longer slices).  The slice is wall time: with more workers than CPUs,
 * the kernel's time-sharing of their threads counts in it.  A preemption
 * deferred at a safe point is re-sent every tick until the fiber switches;
 * a worker that never does again, with others waiting, is reported on
 * stderr (stall.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
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
	/* Only reported (the kernel keeps what a process gives for its own
	 * threads): not a getuid system call per tick (~0.2 us here). */
	si.si_uid = xf__rt.uid;
	si.si_value.sival_ptr = (void *)value;
	return syscall(SYS_rt_tgsigqueueinfo, xf__rt.pid, tid, XF_PREEMPT_SIGNAL, &si) ? errno : 0;
}

static bool io_ready; /* this look found events in the poller (xf__poller_tick) */

/* The TSC against the clock, for the idle loop's stamps: the ratio from the
 * ticker's first look to this one, once they are far enough apart
 * (CLOCK_CALIBRATE_NS) to make it exact to 0.1%. */
#define CLOCK_CALIBRATE_NS 10000000u
static struct {
	uint64_t first_ns, first_tsc;
	uint64_t prev_look_ns; /* the previous look's clock */
	uint64_t look_tsc;     /* this look's TSC */
	uint64_t ns_per_tsc;   /* in 32.32 fixed point (no FPU here); 0 until calibrated */
} clock_pair;

static void clock_pair_update(uint64_t now)
{
	uint64_t tsc = __builtin_ia32_rdtsc();

	clock_pair.look_tsc = tsc;
	if (!clock_pair.first_ns) {
		clock_pair.first_ns = now;
		clock_pair.first_tsc = tsc;
	} else if (now - clock_pair.first_ns >= CLOCK_CALIBRATE_NS && tsc > clock_pair.first_tsc) {
		clock_pair.ns_per_tsc =
		    (uint64_t)(((unsigned __int128)(now - clock_pair.first_ns) << 32) /
			       (tsc - clock_pair.first_tsc));
	}
}

/*
 * When busy worker w's running fiber started, seen at a look to have
 * switched since the previous one (`switches` is the count now), if it
 * ended the worker's idling: the stamp of that switch out of the idle loop
 * (sched/schedule.c), if it made this count - no other since - and fell
 * after the previous look; else 0.  Without it a fiber that started just
 * after a look was first seen a slice later and ran up to two before its
 * preemption, while requests waited behind it.
 */
static uint64_t fiber_start_ns(struct xf__worker *w, uint64_t switches, uint64_t now)
{
	uint64_t seq = atomic_load_explicit(&w->switch_seq, memory_order_relaxed);
	uint64_t tsc = atomic_load_explicit(&w->switch_tsc, memory_order_relaxed), ago;

	if (!clock_pair.ns_per_tsc || seq != switches || tsc > clock_pair.look_tsc)
		return 0;
	ago = (uint64_t)(((unsigned __int128)(clock_pair.look_tsc - tsc) * clock_pair.ns_per_tsc) >>
			 32);
	if (ago > now - clock_pair.prev_look_ns)
		return 0; /* before the previous look, which saw another count */
	return now - ago;
}

static bool wants_cpu(struct xf__worker *w, uint64_t now)
{
	bool wants = io_ready || atomic_load_explicit(&w->nr_queued, memory_order_relaxed) ||
		     atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
		     atomic_load_explicit(&w->steal_request, memory_order_relaxed) ||
		     /* the line's guard is looked at by the next decision */
		     __atomic_load_n(&w->line_waiting, __ATOMIC_RELAXED) ||
		     /* its ring has requests to submit or collect (io/ring.c) */
		     (w->ring && xf__ring_wants_cpu(w));

	/* Timers are looked at whatever else is queued: a worker whose fibers
	 * yield to each other never takes the slow path on its own, and a
	 * due timer must send it there (runq.h), or a sleeper beside a
	 * yield loop would never wake. */
	if (atomic_load_explicit(&w->timers_nr, memory_order_relaxed)) {
		uint64_t deadline = xf__timers_next_deadline(w);

		if (deadline && deadline <= now) {
			atomic_fetch_or_explicit(&w->due, XF_DUE_TIMERS, memory_order_relaxed);
			wants = true;
		}
	}
	return wants;
}

/*
 * One tick in flight per worker.  A handler enters within microseconds of
 * a send, before the next look; one that has not entered is on a thread
 * that does not run - descheduled, or stopped by a debugger, which delivers
 * each signal through a stop of its own.  Under gdb the resends of a
 * deferred preemption (every half slice) came faster than that, each
 * nested on the last at the handler's first instruction (SA_NODEFER), and
 * the stack overflowed within seconds.  A tick unseen for
 * XF_TICK_UNSEEN_NS is sent again all the same.
 */
#define XF_TICK_UNSEEN_NS (10 * 1000 * 1000)

static void tick_send_to(struct xf__worker *w, pid_t tid, uint64_t value, uint64_t now)
{
	uint32_t seen = atomic_load_explicit(&w->ticks_seen, memory_order_relaxed);

	if ((int32_t)(w->ticks_sent - seen) > 0 && now - w->tick_sent_ns < XF_TICK_UNSEEN_NS)
		return;
	if (xf__tick_send(tid, value) == 0) {
		w->ticks_sent = seen + 1;
		w->tick_sent_ns = now;
	}
}

/*
 * Whether a timer due on busy worker w ends its fiber's slice early: a
 * sleeper's wake-up need not wait for the slice's end once the running
 * fiber has had a quarter of it (Linux's wake-up preemption, with a floor).
 * The slice counts from the fiber's switch (fiber_start_ns): 1 ms sleeps
 * beside a CPU-bound fiber at 1 ms slices woke 550 us late on average when
 * they waited for its end (bench fiber sleep-1ms-late).
 * Otherwise *next_ns learns when the quarter is up.
 * A slice so ended stays ended: a tick that lands where the fiber cannot
 * switch (the C library) is deferred, and its handler runs the due timer
 * all the same, so the next look finds none due while the sleeper waits in
 * the queue - until the slice's end, 200-310 ms later at 200 ms slices
 * beside a fiber in clock_gettime (preempt.ticker.deferred_timer).
 */
static bool timer_wakes(struct xf__worker *w, uint64_t now, uint64_t slice_ns, uint64_t *next_ns)
{
	uint64_t due, floor = w->tick_since_ns + slice_ns / 4;

	if (w->tick_ended_early)
		return true;
	if (!atomic_load_explicit(&w->timers_nr, memory_order_relaxed))
		return false;
	due = xf__timers_next_deadline(w);
	if (!due || due > now)
		return false;
	if (now >= floor)
		return w->tick_ended_early = true;
	if (floor < *next_ns)
		*next_ns = floor;
	return false;
}

/*
 * Whether events in the poller end the slice of busy worker w's fiber cur at
 * once: it has run long since its last wake-up (it was preempted since),
 * so the requests that just arrived go ahead of it now rather than after
 * its slice - Linux's wake-up preemption, which runs a woken task ahead of
 * one that has had its share.  A fiber's first slice after a wake-up stays
 * whole.  At 100 us slices, 15 interleaved runs a side of `bench server`:
 * the shorts' p99 at 70% load 1,499 us against 2,066 (p50 86 against
 * 145), at 30% 229 against 307; at 10% and 50% within the noise
 * (docs/io.md).
 */
static bool io_wakes(const struct xf_fiber *cur)
{
	/* Not with xf_config.round_robin: there slices stay whole, the order
	 * before woken fibers went first (sched/schedule.c). */
	return io_ready && !xf__rt.round_robin && __atomic_load_n(&cur->ran_long, __ATOMIC_RELAXED);
}

/* Looks at every worker once; returns whether any has something waiting
 * to run (so that preemption may become necessary), and in *next_ns the
 * next time a look may find something to do: the earliest end of a slice
 * that runs, a re-send of a deferred preemption, or a timer due on a busy
 * worker. */
static bool tick(uint64_t now, uint64_t slice_ns, uint64_t resend_ns, uint64_t *next_ns)
{
	bool waiting = false;
	uint64_t next = UINT64_MAX;

	clock_pair_update(now);
	/* Fibers wait on descriptors and no worker sits in the poller: every
	 * worker is busy, and the ticker looks for events (io/poller.c). */
	io_ready = false;
	if (atomic_load_explicit(&xf__io_waiters, memory_order_relaxed) && !xf__poller_busy()) {
		io_ready = xf__poller_tick();
		waiting = true;
	}
	/* Workers that switch without using up a slice are never preempted:
	 * each busy one takes the events at its next scheduling point. */
	for (unsigned i = 0; io_ready && i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		struct xf_fiber *cur = __atomic_load_n(&w->current, __ATOMIC_RELAXED);

		if (cur && cur != w->idle)
			atomic_fetch_or_explicit(&w->due, XF_DUE_IO, memory_order_relaxed);
	}

	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		struct xf_fiber *cur = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
		uint64_t switches = __atomic_load_n(&w->stats.switches, __ATOMIC_RELAXED);

		bool busy = cur && cur != w->idle;
		/* An idle worker's timers end its own sleep: only a busy
		 * worker's need our looks. */
		bool wants = wants_cpu(w, now) ||
			     (busy && atomic_load_explicit(&w->timers_nr, memory_order_relaxed)) ||
			     (busy && xf__ring_busy(w));

		waiting |= wants;
		/* A busy worker's timer that falls due within its slice. */
		if (busy && atomic_load_explicit(&w->timers_nr, memory_order_relaxed)) {
			uint64_t d = xf__timers_next_deadline(w);

			if (d > now && d < next)
				next = d;
		}
		/* cur may be finishing on its worker right now: compared, and
		 * read below only for a hint. */
		/* tick_since_ns 0: the first look at this worker. */
		if (switches != w->tick_switches || !busy || !w->tick_since_ns) {
			uint64_t started =
			    busy && w->tick_since_ns ? fiber_start_ns(w, switches, now) : 0;

			w->tick_switches = switches;
			w->tick_since_ns = started ? started : now;
			w->tick_deferred = __atomic_load_n(&w->stats.preemptions_deferred,
							   __ATOMIC_RELAXED);
			w->stall_reported = false;
			w->tick_ended_early = false;
			if (!busy)
				continue;
			/* Its slice may be over already: then on below.  Else the
			 * next look: at its slice's end if it ended the idling -
			 * it may be a long request's - and a slice from now if the
			 * worker keeps switching: a look at each fiber's end there
			 * took the 100 us server from 75 to 81% of the CPU at 50%
			 * load, and from 91 to 98% at 70% (docs/preemption.md). */
			if (now - w->tick_since_ns < slice_ns && !io_wakes(cur)) {
				if (w->tick_since_ns + slice_ns < next)
					next = w->tick_since_ns + slice_ns;
				continue;
			}
		}
		/* Running since tick_since_ns: its slice ends then, or it has
		 * (or a timer ended it), and a deferred preemption is sent
		 * again. */
		if (now - w->tick_since_ns < slice_ns && !w->tick_ended_early) {
			if (w->tick_since_ns + slice_ns < next)
				next = w->tick_since_ns + slice_ns;
		} else if (now + resend_ns < next) {
			next = now + resend_ns;
		}
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
		xf__stall_check(w, cur, tid, now, wants);
		bool slice_goes_on = !blocked && now - w->tick_since_ns < slice_ns &&
				     !timer_wakes(w, now, slice_ns, &next) && !io_wakes(cur);

		if (slice_goes_on) {
			/* Its slice goes on, with fibers that could run elsewhere
			 * queued behind it: a parked worker is woken to ask for
			 * them, and a request is answered now, not at the
			 * slice's end (signal.c: no switch). */
			if (!xf__runq_movable(w))
				continue;
			if (atomic_load_explicit(&w->steal_request, memory_order_relaxed))
				tick_send_to(w, tid, xf__tick_aimed(switches) | XF_TICK_ANSWER, now);
			else if (atomic_load_explicit(&xf__rt.nr_parked, memory_order_relaxed))
				xf__wake_idle_worker(w);
			continue;
		}
		if (!wants_cpu(w, now))
			continue;
		XF_PROBE2(preempt__tick, w->id, switches);
		tick_send_to(w, tid, xf__tick_aimed(switches), now);
		if (w->tick_ended_early && now + resend_ns < next)
			next = now + resend_ns; /* sent again if deferred */
	}
	*next_ns = next;
	clock_pair.prev_look_ns = now;
	return waiting;
}

/*
 * Between two busy workers, an imbalance must last XF_BALANCE_BUSY_NS
 * before the more loaded one is asked for work: the request costs it a
 * signal (it answers in its handler, ~10 us in a VM), and under a stream of
 * short requests the queues swing by two and back within a slice - asked
 * at every such swing, the two workers of bench server's two-worker row
 * traded ~3,000 requests a second each way, for fibers that would have run
 * within a slice where they were (docs/io.md).  Linux's load balancer too
 * acts on loads averaged over milliseconds, not on each wake-up.  A worker
 * idle or all but (nothing running) is given work at once.
 */
#define XF_BALANCE_BUSY_NS 1000000

static struct {
	struct xf__worker *longest, *shortest; /* the imbalance seen at every look since */
	uint64_t since_ns;
} imbalance;

static bool balance_busy_wait(struct xf__worker *longest, struct xf__worker *shortest, uint64_t now)
{
	if (imbalance.longest != longest || imbalance.shortest != shortest) {
		imbalance.longest = longest;
		imbalance.shortest = shortest;
		imbalance.since_ns = now;
	}
	return now - imbalance.since_ns < XF_BALANCE_BUSY_NS;
}

static void balance(uint64_t now)
{
	struct xf__worker *longest = NULL, *shortest = NULL;
	unsigned most = 0, least = ~0u;

	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		unsigned n = xf__worker_load(w);

		/* The most loaded worker that has something to give. */
		if ((n > most || !longest) && xf__runq_movable(w)) {
			most = n;
			longest = w;
		}
		if (n < least || !shortest) {
			least = n;
			shortest = w;
		}
	}
	if (longest == shortest || most < least + 2) {
		imbalance.longest = NULL; /* balanced at this look */
		return;
	}
	if (xf__worker_busy(shortest) && balance_busy_wait(longest, shortest, now))
		return;
	imbalance.longest = NULL;
	xf__steal_request(shortest, longest);
}

/* XFIBER_TICKER=fair keeps the ticker in the fair class where it could be
 * real-time (fifo, the default). */
static bool ticker_fifo_wanted(void)
{
	const char *e = getenv("XFIBER_TICKER");

	return !e || strcmp(e, "fair");
}

/* Above the workers: they inherit their class from xf_init's caller (or a
 * forked child's first spawner), and a ticker that could not preempt them
 * on a CPU they share would never look - nor would it run at all, queued
 * behind a real-time caller's CPU-bound fiber until the kernel's real-time
 * throttling (0.95 s).  Priority 1 above fair workers; one above real-time
 * ones, up to the top (where it can only wait its turn). */
static int ticker_priority(void)
{
	int policy, top = sched_get_priority_max(SCHED_FIFO);
	struct sched_param sp;

	if (pthread_getschedparam(pthread_self(), &policy, &sp) ||
	    (policy != SCHED_FIFO && policy != SCHED_RR))
		return 1;
	return sp.sched_priority < top ? sp.sched_priority + 1 : top;
}

static void *ticker_main(void *arg)
{
	const uint64_t slice_ns = (uint64_t)xf__rt.slice_us * 1000u;
	/* A deferred preemption is sent again every half slice (at most
	 * XF_TICK_MAX_NS), as looks came before they were timed by deadline. */
	const uint64_t resend_ns = slice_ns / 2 < XF_TICK_MAX_NS ? slice_ns / 2 : XF_TICK_MAX_NS;
	/* Between looks while something may need one: no longer than a slice
	 * (at most XF_TICK_MAX_NS: readiness and timers on busy workers are
	 * noticed that soon), no shorter than a quarter. */
	const uint64_t max_sleep_ns = slice_ns < XF_TICK_MAX_NS ? slice_ns : XF_TICK_MAX_NS;
	const uint64_t min_sleep_ns = max_sleep_ns / 4;
	uint64_t sleep_ns = resend_ns, next_ns, now;
	sigset_t all;
	unsigned quiet_ticks = 0; /* ticks in a row that found nothing waiting */

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* never run a handler here */
	/* The kernel may let a sleep run 50 us past its end (timer slack), as
	 * long as a whole 50 us slice: ticks keep to the slice instead. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	prctl(PR_SET_NAME, "xf-ticker", 0, 0, 0); /* for top, ps -L and gdb */
	while (!atomic_load_explicit(&xf__rt.stopping, memory_order_acquire)) {
		bool sleep_long = quiet_ticks >= XF_TICKER_QUIET_TICKS;
		uint64_t ns = sleep_long ? XF_TICKER_LONG_SLICES * slice_ns : sleep_ns;
		struct timespec ts;
		uint32_t seen = atomic_load(&ticker.wake);

		/* Announce the long sleep before the last look, so that a fiber
		 * queued from now on pokes us (xf__ticker_poke). */
		atomic_store(&xf__ticker_sleeping_long, sleep_long);
		if (sleep_long && tick(xf__now_ns(), slice_ns, resend_ns, &next_ns))
			ns = resend_ns;
		ts = (struct timespec){(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
		syscall(SYS_futex, &ticker.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
		atomic_store(&xf__ticker_sleeping_long, 0);
		balance(xf__now_ns());
		if (atomic_load(&ticker.wake) != seen)
			quiet_ticks = 0; /* poked: something was queued */
		now = xf__now_ns();
		quiet_ticks = tick(now, slice_ns, resend_ns, &next_ns) ? 0 : quiet_ticks + 1;
		/* Until the next look that may matter: each costs the CPU it
		 * shares with a worker (~10 us in a VM), so a worker that keeps
		 * switching - seen anew at every look - is looked at once a slice,
		 * and a fiber that runs on, at its slice's end. */
		sleep_ns = next_ns == UINT64_MAX || next_ns - now > max_sleep_ns ? max_sleep_ns
			   : next_ns - now < min_sleep_ns			      ? min_sleep_ns
										      : next_ns - now;
		/* Objects loaded since the last look get their verdicts. */
		xf__safepoints_refresh(xf__now_ns());
		/* Pooled stacks nobody reused give their pages back. */
		xf__stacks_scavenge(xf__now_ns());
	}
	return NULL;
}

/*
 * Beside a worker that has just left its idle loop for a CPU-bound fiber,
 * Linux's fair class runs the worker first for up to a scheduler tick
 * (4 ms at HZ=250: the lag it saved while idle), and the ticker's looks
 * stop: docs/io.md.  A real-time ticker runs when it wakes.  Only where
 * permitted (root, CAP_SYS_NICE, RLIMIT_RTPRIO; any refusal - EPERM, or
 * EACCES from SELinux or a seccomp sandbox - leaves it a plain thread and
 * its late looks); it never spins on a lock a worker holds (io/poller.c),
 * or a worker it preempted on their shared CPU could never release it.
 * Created real-time, not raised once it runs: a fair thread just created
 * waits behind the CPU-bound fiber its creator goes on to run - the first
 * 1 ms sleep after xf_init woke 2-5 ms late (bench fiber sleep-1ms-late).
 */
static int create_ticker_thread(void)
{
	struct sched_param sp = {.sched_priority = ticker_priority()};
	pthread_attr_t attr;
	int err = EPERM;

	if (ticker_fifo_wanted() && !pthread_attr_init(&attr)) {
		if (!pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) &&
		    !pthread_attr_setschedpolicy(&attr, SCHED_FIFO) &&
		    !pthread_attr_setschedparam(&attr, &sp))
			err = pthread_create(&ticker.thread, &attr, ticker_main, NULL);
		pthread_attr_destroy(&attr);
	}
	/* Inheriting the creator's class, as the workers do. */
	return err ? pthread_create(&ticker.thread, NULL, ticker_main, NULL) : 0;
}

int xf__ticker_start(void)
{
	int err = xf__stall_start();

	if (err)
		return err;
	err = create_ticker_thread();
	if (err)
		xf__stall_stop();
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
	xf__stall_forget();
	imbalance.longest = NULL;
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
	xf__stall_stop();
}
