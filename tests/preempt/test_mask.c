/*
 * test_mask.c - the soft preemption mask, safe points and their counters.
 *
 * usage: test_mask mask|libc|unsafe|yield|nested|stale|jumped|stats
 *   mask    disable/enable nest; a preemption arriving while disabled is
 *           taken at the outermost enable, not before
 *   libc    fibers hammering malloc/free and snprintf under 50 us slices on
 *           one worker never deadlock (preemption inside libc is deferred)
 *   unsafe  xf_preempt_unsafe_add() makes a whole object a deferral zone,
 *           uncontended pthread locks inside it included
 *   yield   on two workers, fibers yielding flat out, fibers passing a turn
 *           under a mutex and cond, and a fiber spawning and joining
 *           children, while another thread fires preemption signals at both
 *           workers: signals landing in xf_yield's assembly fast path (which
 *           runs without the soft mask) are deferred, the others preempt; no
 *           yield, turn or child is lost, and each fiber keeps its own errno
 *           and MXCSR through every kind of switch
 *   stale   a tick carries the switch count the ticker saw: one that arrives
 *           after its worker switched is dropped (counted, neither deferred
 *           nor taken), a current one is deferred or taken, a forced one
 *           always counts; a plain tgkill of SIGURG is the application's
 *           (its handler runs, nothing is preempted)
 *   nested  yield's workload, with application signals too: a SIGUSR1
 *           handler installed SA_NODEFER with an empty mask - so the signal
 *           mask does not show it runs - spins inside while forced ticks
 *           land in it, also when it interrupted xf_yield's fast path; a
 *           preemption signal nested in an application handler must leave
 *           the run queue alone
 *   jumped  handlers left by siglongjmp - 20 one after another, then 20
 *           nested SA_NODEFER ones left by a single jump - leave no mark
 *           behind: two spinners on the fiber's worker are preempted
 *           afterwards, and its 50 ms sleep ends (more than 8 such jumps
 *           once turned preemption off on that worker for good)
 *   stats   xf_stats_get's errors; xf_preempt_enable without disable is
 *           harmless
 */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench/syscall.h"
#include "preempt/preempt.h"
#include "testlib.h"
#include "xfiber.h"

static atomic_ulong other_ran;
static atomic_bool stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_for(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void *other(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		atomic_fetch_add(&other_ran, 1);
	return NULL;
}

static void test_mask(void)
{
	xf_fiber *f;
	xf_stats st;
	unsigned long seen;
	uint64_t deferred0, switches0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	CHECK_ERR(xf_spawn(&f, other, NULL, NULL), 0);
	xf_yield(); /* let it start */

	CHECK_ERR(xf_stats_get(&st), 0);
	deferred0 = st.total.preemptions_deferred;
	xf_preempt_disable();
	xf_preempt_disable();
	seen = atomic_load(&other_ran);
	/* At least 20 ms (400 slices), until a preemption was deferred in
	 * this section (a loaded machine may delay the ticker). */
	for (uint64_t t0 = now_ns();; spin_for(1000 * 1000)) {
		CHECK_ERR(xf_stats_get(&st), 0);
		if (st.total.preemptions_deferred > deferred0 && now_ns() - t0 > 20 * 1000 * 1000)
			break;
		if (now_ns() - t0 > 10ull * 1000 * 1000 * 1000)
			xf_test_fail("no preemption was recorded as deferred in 10 s");
	}
	if (atomic_load(&other_ran) != seen)
		xf_test_fail("another fiber ran while preemption was disabled");
	xf_preempt_enable(); /* still nested: nothing yet */
	if (atomic_load(&other_ran) != seen)
		xf_test_fail("an inner enable took the pending preemption");
	/* Outermost: the pending preemption is taken here, as a yield - a
	 * switch away and back.  Counted in switches, not in other_ran: the
	 * other fiber can be sent straight back before its loop runs, by a
	 * tick that was aimed at this fiber and lands on it. */
	CHECK_ERR(xf_stats_get(&st), 0);
	switches0 = st.total.switches;
	xf_preempt_enable();
	xf_preempt_disable(); /* so that a later tick cannot add the switches */
	CHECK_ERR(xf_stats_get(&st), 0);
	xf_preempt_enable();
	if (st.total.switches < switches0 + 2)
		xf_test_fail("the pending preemption was not taken at enable");
	printf("mask: nested disable held off %lu deferred preemptions; taken at enable\n",
	       (unsigned long)st.total.preemptions_deferred);

	/* Preemption works again afterwards. */
	seen = atomic_load(&other_ran);
	for (uint64_t t0 = now_ns(); atomic_load(&other_ran) == seen;) {
		if (now_ns() - t0 > 10ull * 1000 * 1000 * 1000)
			xf_test_fail("no preemption in 10 s after the mask was lifted");
	}
	atomic_store(&stop, true);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

static atomic_ulong libc_rounds[4];

static void *libc_hammer(void *arg)
{
	atomic_ulong *rounds = arg;
	char buf[256];
	unsigned long n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		void *p[8];
		for (int i = 0; i < 8; i++) {
			p[i] = malloc(16 + (size_t)(n + i) % 2000);
			CHECK(p[i]);
			memset(p[i], (int)i, 16);
		}
		snprintf(buf, sizeof(buf), "%lu %f %s", n, (double)n / 3.0,
			 "libc under preemption");
		for (int i = 0; i < 8; i++)
			free(p[i]);
		atomic_store_explicit(rounds, ++n, memory_order_relaxed);
	}
	return NULL;
}

/* Whether every hammer has made progress and the worker has both
 * preempted them and deferred a preemption inside libc. */
static bool libc_seen_all(xf_stats *st)
{
	CHECK_ERR(xf_stats_get(st), 0);
	for (int i = 0; i < 4; i++)
		if (!atomic_load(&libc_rounds[i]))
			return false;
	return st->total.preemptions && st->total.preemptions_deferred;
}

/* Runs for a second, and on a loaded machine (sanitizers, a parallel
 * ctest) until all of it has been seen, for at most 20 s. */
static void test_libc(void)
{
	xf_fiber *f[4];
	xf_stats st;
	uint64_t total = 0;
	int waited_ms = 0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_spawn(&f[i], libc_hammer, &libc_rounds[i], NULL), 0);
	while (waited_ms < 1000 || (!libc_seen_all(&st) && waited_ms < 20000)) {
		xf_sleep_ns(100 * 1000 * 1000);
		waited_ms += 100;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++) {
		CHECK_ERR(xf_join(f[i], NULL), 0);
		if (!atomic_load(&libc_rounds[i]))
			xf_test_fail("fiber %d made no progress", i);
		total += atomic_load(&libc_rounds[i]);
	}
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("libc: %lu malloc/snprintf rounds in %d ms, %lu preemptions, %lu deferred in unsafe code\n",
	       (unsigned long)total, waited_ms, (unsigned long)st.total.preemptions,
	       (unsigned long)st.total.preemptions_deferred);
	if (!st.total.preemptions || !st.total.preemptions_deferred)
		xf_test_fail("expected both preemptions and deferrals inside libc");
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		;
	return NULL;
}

static void *stop_later(void *arg)
{
	struct timespec ts = {0, 200 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	return NULL;
}

/* In an object marked unsafe, through uncontended pthread locks - which
 * the runtime replaces, and whose own sections may find a preemption
 * pending - no other fiber of the worker runs: OpenSSL's RSA signatures
 * came out wrong when one did, inside its pthread_rwlock_wrlock. */
static pthread_rwlock_t unsafe_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t unsafe_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void *_Atomic inside_unsafe;
static atomic_ulong switched_inside;

static void *locks_in_unsafe_code(void *arg)
{
	while (!atomic_load(&stop)) {
		atomic_store(&inside_unsafe, arg);
		CHECK(pthread_rwlock_wrlock(&unsafe_rwlock) == 0);
		CHECK(pthread_rwlock_unlock(&unsafe_rwlock) == 0);
		CHECK(pthread_mutex_lock(&unsafe_recursive) == 0);
		CHECK(pthread_mutex_unlock(&unsafe_recursive) == 0);
		if (atomic_load(&inside_unsafe) != arg)
			atomic_fetch_add(&switched_inside, 1);
	}
	return NULL;
}

static void test_unsafe(void)
{
	xf_fiber *f[2];
	pthread_t timer;
	xf_stats st;

	CHECK_ERR(xf_preempt_unsafe_add(NULL), EINVAL);
	CHECK_ERR(xf_preempt_unsafe_add((void *)8), EINVAL); /* in no object */
	/* This whole test program: its fibers can then never be preempted. */
	CHECK_ERR(xf_preempt_unsafe_add((void *)spinner), 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	/* The spinners cannot be preempted, so no fiber - not even a sleeping
	 * one - could wake to stop them: a plain thread does.  It starts first:
	 * a preemption deferred in this (unsafe) code is still taken at the
	 * next runtime call, such as the spawns, and may never come back. */
	CHECK(pthread_create(&timer, NULL, stop_later, NULL) == 0);
	CHECK_ERR(xf_spawn(&f[0], locks_in_unsafe_code, &f[0], NULL), 0);
	CHECK_ERR(xf_spawn(&f[1], locks_in_unsafe_code, &f[1], NULL), 0);
	CHECK_ERR(xf_join(f[0], NULL), 0);
	CHECK_ERR(xf_join(f[1], NULL), 0);
	pthread_join(timer, NULL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("unsafe: %lu preemptions, %lu deferred, %lu switches inside\n",
	       (unsigned long)st.total.preemptions, (unsigned long)st.total.preemptions_deferred,
	       (unsigned long)atomic_load(&switched_inside));
	if (st.total.preemptions)
		xf_test_fail("a fiber was preempted inside an object marked unsafe");
	if (atomic_load(&switched_inside))
		xf_test_fail("another fiber ran inside an object marked unsafe, at a pthread lock");
	if (!st.total.preemptions_deferred)
		xf_test_fail("no preemption was even attempted");
}

#define YIELDERS     4
#define YIELD_ROUNDS 200000
#define TURNERS	     3
#define TURNS	     20000
#define SPAWNS	     20000

static atomic_ulong yields_done[YIELDERS];
static atomic_int worker_tids[2];
static xf_mutex turn_lock;
static xf_cond turn_cond;
static long turn;
static atomic_ulong spawned;

/* errno through calls gcc cannot see into: it may otherwise keep errno's
 * address (glibc's __errno_location is const) across xf_yield(), and a
 * fiber that moved to another worker would read the old thread's errno -
 * the TLS rule of docs/runtime.md, not what is tested here. */
__attribute__((noipa)) static void errno_set(int v)
{
	errno = v;
}

__attribute__((noipa)) static int errno_get(void)
{
	return errno;
}

/* Each fiber's own MXCSR: round to nearest, down, up, towards zero. */
static unsigned mxcsr_of(unsigned i)
{
	return 0x1f80u | (i % 4) << 13;
}

static void check_own_state(const char *who, unsigned i, int err, unsigned mxcsr)
{
	if (errno_get() != err)
		xf_test_fail("%s %u found errno %d after a switch, not %d", who, i, errno_get(),
			     err);
	if (__builtin_ia32_stmxcsr() != mxcsr)
		xf_test_fail("%s %u found MXCSR %#x after a switch, not %#x", who, i,
			     __builtin_ia32_stmxcsr(), mxcsr);
}

/* Where the signals go: the threads of the workers fibers run on. */
static void note_worker(void)
{
	const int w = xf_worker_id();

	if (w >= 0 && w < 2)
		atomic_store(&worker_tids[w], (int)syscall(SYS_gettid));
}

static void *yielder(void *arg)
{
	const unsigned i = (unsigned)(uintptr_t)arg;

	__builtin_ia32_ldmxcsr(mxcsr_of(i));
	for (unsigned long n = 0; n < YIELD_ROUNDS; n++) {
		if (n % 1024 == 0)
			note_worker();
		errno_set((int)(1000 + i));
		xf_yield();
		check_own_state("yielder", i, (int)(1000 + i), mxcsr_of(i));
		atomic_store_explicit(&yields_done[i], n + 1, memory_order_relaxed);
	}
	return NULL;
}

/* Passes a turn around under a mutex and a cond: fibers that block on one
 * worker and are woken from the other, between yields. */
static void *turner(void *arg)
{
	const unsigned i = (unsigned)(uintptr_t)arg;

	__builtin_ia32_ldmxcsr(mxcsr_of(i + 1));
	for (int k = 0; k < TURNS; k++) {
		CHECK_ERR(xf_mutex_lock(&turn_lock), 0);
		while (turn % TURNERS != i)
			CHECK_ERR(xf_cond_wait(&turn_cond, &turn_lock), 0);
		errno_set((int)(2000 + i));
		turn++;
		CHECK_ERR(xf_cond_broadcast(&turn_cond), 0);
		CHECK_ERR(xf_mutex_unlock(&turn_lock), 0);
		xf_yield();
		check_own_state("turner", i, (int)(2000 + i), mxcsr_of(i + 1));
	}
	return NULL;
}

static void *child(void *arg)
{
	xf_yield();
	return arg;
}

/* Fibers that exit while others yield: every exit goes through the idle
 * context (sched/schedule.c). */
static void *spawner(void *arg)
{
	(void)arg;
	for (uintptr_t k = 1; k <= SPAWNS; k++) {
		xf_fiber *f;
		void *result;

		CHECK_ERR(xf_spawn(&f, child, (void *)k, NULL), 0);
		xf_yield();
		CHECK_ERR(xf_join(f, &result), 0);
		if (result != (void *)k)
			xf_test_fail("child %lu returned %p", (unsigned long)k, result);
		atomic_fetch_add(&spawned, 1);
	}
	return NULL;
}

/* Fires forced ticks (the preemption signal, taken whatever the switch
 * count) at every worker every ~50 us, the ticker's rate at the shortest
 * slices.  Much faster, with three threads on this machine's two CPUs,
 * signals arrive while the handler still runs (SA_NODEFER), nest, and
 * overflow the fiber's stack: a storm no ticker sends. */
static bool with_app_signals;
static atomic_ulong app_handled;

static void *signal_thread(void *arg)
{
	atomic_ulong *sent = arg;

	while (!atomic_load(&stop)) {
		for (int w = 0; w < 2; w++) {
			const int tid = atomic_load(&worker_tids[w]);

			/* The application's signal first: the tick then lands
			 * while its handler spins. */
			if (tid && with_app_signals) {
				syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
				spin_for(15000); /* past the ~10 us delivery */
			}
			if (tid && xf__tick_send(tid, XF_TICK_TAG | XF_TICK_FORCED) == 0)
				atomic_fetch_add(sent, 1);
		}
		/* Slower with the handlers to run too: faster, their frames nest
		 * until the stack overflows (slowest under ASan). */
		spin_for(with_app_signals ? 200 * 1000 : 50 * 1000);
	}
	return NULL;
}

/* Long enough for the other thread's ticks to land inside, and in its own
 * code (rdtsc, not the vDSO's clock, where preemption is deferred anyway). */
static void app_handler(int sig, siginfo_t *si, void *uc)
{
	uint32_t lo, hi;
	uint64_t end;

	(void)sig;
	(void)si;
	(void)uc;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	end = ((uint64_t)hi << 32 | lo) + 60000; /* ~25 us */
	do
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	while (((uint64_t)hi << 32 | lo) < end);
	atomic_fetch_add(&app_handled, 1);
}

static void test_yield(void)
{
	xf_fiber *y[YIELDERS], *t[TURNERS], *sp;
	atomic_ulong sent = 0;
	pthread_t thread;
	xf_stats st;

	if (with_app_signals) {
		struct sigaction sa = {.sa_sigaction = app_handler,
				       .sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART};

		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	}
	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 50}), 0);
	CHECK_ERR(xf_mutex_init(&turn_lock), 0);
	CHECK_ERR(xf_cond_init(&turn_cond), 0);
	note_worker();
	for (unsigned i = 0; i < YIELDERS; i++)
		CHECK_ERR(xf_spawn(&y[i], yielder, (void *)(uintptr_t)i, NULL), 0);
	for (unsigned i = 0; i < TURNERS; i++)
		CHECK_ERR(xf_spawn(&t[i], turner, (void *)(uintptr_t)i, NULL), 0);
	CHECK_ERR(xf_spawn(&sp, spawner, NULL, NULL), 0);
	CHECK(pthread_create(&thread, NULL, signal_thread, &sent) == 0);
	for (unsigned i = 0; i < YIELDERS; i++)
		CHECK_ERR(xf_join(y[i], NULL), 0);
	for (unsigned i = 0; i < TURNERS; i++)
		CHECK_ERR(xf_join(t[i], NULL), 0);
	CHECK_ERR(xf_join(sp, NULL), 0);
	atomic_store(&stop, true);
	pthread_join(thread, NULL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("yield: 2 workers, %d x %d yields, %d x %d turns, %d spawns; %lu signals: "
	       "%lu preemptions, %lu deferred\n",
	       YIELDERS, YIELD_ROUNDS, TURNERS, TURNS, SPAWNS, atomic_load(&sent),
	       (unsigned long)st.total.preemptions, (unsigned long)st.total.preemptions_deferred);
	for (unsigned i = 0; i < YIELDERS; i++) {
		if (atomic_load(&yields_done[i]) != YIELD_ROUNDS)
			xf_test_fail("yielder %u finished %lu yields of %d", i,
				     atomic_load(&yields_done[i]), YIELD_ROUNDS);
	}
	if (turn != (long)TURNERS * TURNS || atomic_load(&spawned) != SPAWNS)
		xf_test_fail("%ld turns of %d, %lu spawns of %d", turn, TURNERS * TURNS,
			     atomic_load(&spawned), SPAWNS);
	if (!atomic_load(&sent) || !(st.total.preemptions + st.total.preemptions_deferred))
		xf_test_fail("no preemption signal reached the fibers");
	if (with_app_signals) {
		printf("nested: %lu application signals handled\n", atomic_load(&app_handled));
		if (!atomic_load(&app_handled))
			xf_test_fail("no application signal was handled");
	}
}

static atomic_ulong quick_ran;

static void *quick(void *arg)
{
	atomic_fetch_add(&quick_ran, 1);
	return arg;
}

/* A tick as the ticker sends it (preempt/ticker.c): SI_QUEUE from this
 * process, carrying the tag and the switch count it saw (or forced).  Sent
 * without libc (xf_bench_sys), so that the signal, handled on the way back,
 * interrupts this file and not libc, where preemption is deferred. */
static void send_value(uint64_t value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGURG;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)value;
	CHECK(xf_bench_sys(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGURG,
			   (long)&si) == 0);
}

static void send_tick(uint64_t switches_seen)
{
	send_value(xf__tick_aimed(switches_seen));
}

static atomic_int app_sigurgs;

static void app_sigurg(int sig)
{
	(void)sig;
	atomic_fetch_add(&app_sigurgs, 1);
}

static void test_stale(void)
{
	xf_stats st, before;
	xf_fiber *f;

	/* Cooperative: no ticker, only the signals sent here.  The fiber
	 * queued behind this one is what a taken tick switches to. */
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .cooperative = true}), 0);
	CHECK_ERR(xf_spawn(&f, quick, NULL, NULL), 0);

	xf_preempt_disable(); /* no switch can move the count from here on */
	CHECK_ERR(xf_stats_get(&before), 0);
	send_tick(before.total.switches - 1); /* aimed before the last switch */
	CHECK_ERR(xf_stats_get(&st), 0);
	if (st.total.preemption_ticks_stale != before.total.preemption_ticks_stale + 1 ||
	    st.total.preemptions_deferred != before.total.preemptions_deferred)
		xf_test_fail("a stale tick was not dropped (stale %lu -> %lu, deferred %lu -> %lu)",
			     (unsigned long)before.total.preemption_ticks_stale,
			     (unsigned long)st.total.preemption_ticks_stale,
			     (unsigned long)before.total.preemptions_deferred,
			     (unsigned long)st.total.preemptions_deferred);
	send_tick(before.total.switches); /* current: deferred */
	CHECK_ERR(xf_stats_get(&st), 0);
	if (st.total.preemptions_deferred != before.total.preemptions_deferred + 1 ||
	    st.total.preemption_ticks_stale != before.total.preemption_ticks_stale + 1)
		xf_test_fail("a current tick was not deferred");
	xf_preempt_enable(); /* ...and taken here: quick runs and finishes */
	if (atomic_load(&quick_ran) != 1)
		xf_test_fail("the deferred tick was not taken at enable");
	CHECK_ERR(xf_join(f, NULL), 0);

	/* Not deferred: a current tick preempts, a stale one does not. */
	CHECK_ERR(xf_spawn(&f, quick, NULL, NULL), 0);
	CHECK_ERR(xf_stats_get(&before), 0);
	send_tick(before.total.switches + 5);
	if (atomic_load(&quick_ran) != 1)
		xf_test_fail("a stale tick preempted");
	CHECK_ERR(xf_stats_get(&before), 0);
	send_tick(before.total.switches);
	if (atomic_load(&quick_ran) != 2)
		xf_test_fail("a current tick did not preempt");
	CHECK_ERR(xf_join(f, NULL), 0);

	/* A forced tick counts whatever the count. */
	CHECK_ERR(xf_spawn(&f, quick, NULL, NULL), 0);
	send_value(XF_TICK_TAG | XF_TICK_FORCED);
	if (atomic_load(&quick_ran) != 3)
		xf_test_fail("a forced tick did not preempt");
	CHECK_ERR(xf_join(f, NULL), 0);

	/* Anything else - a plain tgkill, a tick without the tag - is the
	 * application's SIGURG: its handler runs, nothing is preempted. */
	CHECK(signal(SIGURG, app_sigurg) != SIG_ERR);
	CHECK_ERR(xf_spawn(&f, quick, NULL, NULL), 0);
	CHECK(xf_bench_sys(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGURG, 0) == 0);
	send_value(before.total.switches);
	if (atomic_load(&quick_ran) != 3 || atomic_load(&app_sigurgs) != 2)
		xf_test_fail("a SIGURG the runtime did not send preempted (%lu) or missed the "
			     "application's handler (%d of 2)",
			     atomic_load(&quick_ran), atomic_load(&app_sigurgs));
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	printf("stale: %lu stale ticks dropped, current ones deferred or taken\n",
	       (unsigned long)st.total.preemption_ticks_stale);
	CHECK_ERR(xf_shutdown(), 0);
}

static void test_stats(void)
{
	xf_stats st;

	CHECK_ERR(xf_stats_get(&st), EPERM);
	xf_preempt_enable(); /* unbalanced: ignored */
	xf_preempt_disable();
	xf_preempt_enable();
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_stats_get(NULL), EINVAL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK(st.nr_workers == 1);
	xf_yield();
	CHECK_ERR(xf_shutdown(), 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .cooperative = true}), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("stats: errors ok\n");
}

/* --- jumped --- */

static sigjmp_buf jump_back;
static int nest_depth, nest_want;

static void leaves_by_jump(int sig)
{
	(void)sig;
	if (++nest_depth < nest_want)
		raise(SIGUSR2); /* SA_NODEFER: nested in this one */
	else
		siglongjmp(jump_back, 1);
}

static void *jumps_out(void *arg)
{
	(void)arg;
	for (volatile int i = 0; i < 20; i++) { /* one after another */
		nest_depth = 0;
		nest_want = 1;
		if (sigsetjmp(jump_back, 1) == 0)
			raise(SIGUSR2);
	}
	nest_depth = 0;
	nest_want = 20; /* nested, one jump out of them all */
	if (sigsetjmp(jump_back, 1) == 0)
		raise(SIGUSR2);
	return (void *)(intptr_t)nest_depth;
}

static void test_jumped(void)
{
	struct sigaction sa = {.sa_handler = leaves_by_jump, .sa_flags = SA_NODEFER};
	xf_attr on0 = {.pinned = true, .worker = 0};
	xf_fiber *jumper, *spin[2];
	xf_stats before, after;
	uint64_t t0, slept;
	void *depth;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 100}), 0);
	CHECK_ERR(xf_spawn(&jumper, jumps_out, NULL, &on0), 0);
	CHECK_ERR(xf_join(jumper, &depth), 0);
	CHECK((intptr_t)depth == 20);
	xf_stats_get(&before);
	for (int i = 0; i < 2; i++)
		CHECK_ERR(xf_spawn(&spin[i], spinner, NULL, &on0), 0);
	t0 = now_ns();
	xf_sleep_ns(50 * 1000 * 1000);
	slept = now_ns() - t0;
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		CHECK_ERR(xf_join(spin[i], NULL), 0);
	xf_stats_get(&after);
	if (after.total.preemptions == before.total.preemptions)
		xf_test_fail("no preemption after handlers left by siglongjmp (%llu deferred)",
			     (unsigned long long)(after.total.preemptions_deferred -
						  before.total.preemptions_deferred));
	CHECK_ERR(xf_shutdown(), 0);
	printf("jumped: 40 handlers left by siglongjmp, then %llu preemptions; a 50 ms sleep "
	       "took %llu ms\n",
	       (unsigned long long)(after.total.preemptions - before.total.preemptions),
	       (unsigned long long)(slept / 1000000));
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_mask mask|libc|unsafe|yield|nested|stale|jumped|stats");
	if (!strcmp(argv[1], "mask"))
		test_mask();
	else if (!strcmp(argv[1], "libc"))
		test_libc();
	else if (!strcmp(argv[1], "unsafe"))
		test_unsafe();
	else if (!strcmp(argv[1], "stale"))
		test_stale();
	else if (!strcmp(argv[1], "yield"))
		test_yield();
	else if (!strcmp(argv[1], "nested")) {
		with_app_signals = true;
		test_yield();
	} else if (!strcmp(argv[1], "jumped"))
		test_jumped();
	else if (!strcmp(argv[1], "stats"))
		test_stats();
	else
		xf_test_fail("unknown case '%s'", argv[1]);
	return 0;
}
